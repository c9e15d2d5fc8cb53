// What the explorer shows now: its heatmap's source and whether it loaded, its readout's text.
(index) => {
  const root = window.__panel.node.querySelectorAll('.llm-lab-explorer')[index];
  const img = root.querySelector('img');
  const readout = root.querySelector('.widget-output');
  return {src: img ? img.src : '', loaded: img ? img.complete && img.naturalWidth > 0 : false,
          readout: readout ? readout.innerText : ''};
}
