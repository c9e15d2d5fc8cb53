// The explorer's controls: sliders and toggle buttons, with their label, value and whether disabled.
(index) => {
  const root = window.__panel.node.querySelectorAll('.llm-lab-explorer')[index];
  const out = [];
  root.querySelectorAll('.widget-slider, .widget-toggle-buttons').forEach((c, i) => {
    const slider = c.classList.contains('widget-slider');
    const readout = c.querySelector('.widget-readout');
    const disabled = slider ? !!c.querySelector('[disabled]') || c.querySelector('.noUi-target[disabled]') !== null
                            : false;
    out.push({i, kind: slider ? 'slider' : 'toggle-buttons',
              label: (c.querySelector('.widget-label') || {}).textContent || '',
              value: readout ? readout.textContent.trim() : '', disabled});
  });
  return out;
}
