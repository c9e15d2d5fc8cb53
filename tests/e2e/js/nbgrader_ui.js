// Which parts of nbgrader's UI the lab shows: the Nbgrader menu, the Create Assignment sidebar, the notebook's
// Validate button; and whether a notebook toolbar is there at all.
() => {
  const texts = sel => [...document.querySelectorAll(sel)].map(e => (e.textContent || '').trim());
  const titles = sel => [...document.querySelectorAll(sel)].map(e => e.getAttribute('title') || '');
  return {
    menu: texts('.lm-MenuBar-itemLabel').includes('Nbgrader'),
    sidebar: texts('.lm-TabBar-tabLabel').includes('Create Assignment') ||
             titles('.lm-TabBar-tab').some(t => t.includes('Create Assignment')),
    validate: document.querySelector('.jp-NotebookPanel-toolbar .validate-button') !== null ||
              texts('.jp-NotebookPanel-toolbar .jp-ToolbarButtonComponent-label').includes('Validate'),
    notebook: document.querySelector('.jp-NotebookPanel-toolbar') !== null,
  };
}
