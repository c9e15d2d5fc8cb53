// Close the open notebook and stop its kernel (so kernels never pile up), dropping its unsaved changes.
async () => {
  const panel = window.__panel;
  if (!panel || panel.isDisposed) return;
  window.__panel = null;
  await panel.sessionContext.shutdown();
  panel.context.model.dirty = false;
  panel.dispose();
}
