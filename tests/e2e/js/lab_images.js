// Every image in the notebook's outputs: loaded or not, its pixels, its size on screen, inside an explorer or not.
() => {
  const out = [];
  for (const img of window.__panel.node.querySelectorAll('.jp-OutputArea-output img')) {
    img.scrollIntoView({block: 'center'});
    const r = img.getBoundingClientRect();
    out.push({complete: img.complete, natural: [img.naturalWidth, img.naturalHeight],
              shown: [r.width, r.height], dpr: window.devicePixelRatio,
              explorer: !!img.closest('.llm-lab-explorer')});
  }
  return out;
}
