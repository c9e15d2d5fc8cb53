// The open notebook's kernel status and code cells: source, execution count, running or not, outputs.
() => {
  const panel = window.__panel;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = [];
  for (const cell of panel.content.widgets) {
    if (cell.model.type !== 'code') continue;
    const outputs = cell.model.outputs.toJSON();
    cells.push({
      source: cell.model.sharedModel.getSource(),
      count: cell.model.executionCount,
      running: cell.node.querySelector('.jp-InputArea-prompt') ?
        cell.node.querySelector('.jp-InputArea-prompt').textContent.includes('*') : false,
      outputs: outputs.map(o => ({
        type: o.output_type, name: o.name || null, mimes: o.data ? Object.keys(o.data) : [],
        text: o.output_type === 'error' ? (o.ename + ': ' + o.evalue) : [].concat(
          o.text || (o.data && o.data['text/plain']) || '').join('')})),
    });
  }
  return {kernel: kernel ? kernel.status : 'none', cells, elapsed: (performance.now() - window.__t0) / 1000};
}
