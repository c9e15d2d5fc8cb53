// The explorer's parts, and whether each lies inside the notebook's visible area right now; cut labels.
(index) => {
  const root = window.__panel.node.querySelectorAll('.llm-lab-explorer')[index];
  const scroller = root.closest('.jp-WindowedPanel-outer') || window.__panel.content.node;
  const s = scroller.getBoundingClientRect();
  const view = {top: Math.max(s.top, 0), bottom: Math.min(s.bottom, window.innerHeight),
                left: Math.max(s.left, 0), right: Math.min(s.right, window.innerWidth)};
  const box = (el, what) => {
    const r = el.getBoundingClientRect();
    return {what, top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height,
            inside: r.width > 0 && r.height > 0 && r.top >= view.top - 1 && r.bottom <= view.bottom + 1 &&
                    r.left >= view.left - 1 && r.right <= view.right + 1};
  };
  const parts = [box(root, 'explorer')];
  const img = root.querySelector('img');
  if (img) parts.push(box(img, 'heatmap'));
  const readout = root.querySelector('.widget-output');
  if (readout) parts.push(box(readout, 'readout'));
  root.querySelectorAll('.widget-slider, .widget-toggle-buttons').forEach((c, i) => parts.push(box(c, 'control ' + i)));
  // a label is cut when its text needs more room than it has (text-overflow: ellipsis)
  const cut = [];
  root.querySelectorAll('.widget-toggle-button, .widget-label, .widget-readout, button').forEach(el => {
    if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1) cut.push(el.textContent.trim());
  });
  return {view, parts, cut, text: root.innerText};
}
