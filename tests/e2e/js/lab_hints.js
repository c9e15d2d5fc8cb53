// How many outputs show the explorers' stored hint, in the notebook's language ("run this cell ...", "运行本单元即可交互").
() => [...window.__panel.node.querySelectorAll('.jp-OutputArea-output')]
  .filter(e => e.textContent.includes('run this cell') || e.textContent.includes('运行本单元')).length
