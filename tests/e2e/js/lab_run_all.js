// Clear All Outputs (awaited), or Run All (not awaited: the test polls lab_state.js until it is done).
(what) => {
  const commands = window.jupyterapp.commands;
  if (what === 'clear') return commands.execute('notebook:clear-all-cell-outputs');
  commands.execute('notebook:run-all-cells');
}
