// How many outputs show the explorers' stored hint ("run this cell ...").
() => [...window.__panel.node.querySelectorAll('.jp-OutputArea-output')]
  .filter(e => e.textContent.includes('run this cell')).length
