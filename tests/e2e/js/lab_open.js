// Open a notebook in the lab page (JupyterLab's own command), wait for its kernel; the panel is kept as
// window.__panel for the other scripts, the time of opening as window.__t0.
async (path) => {
  const app = window.jupyterapp;
  const t0 = performance.now();
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  window.__panel = panel;
  window.__t0 = t0;
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  return panel.id;
}
