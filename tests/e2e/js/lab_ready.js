// The lab page has started and restored its layout.
async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }
