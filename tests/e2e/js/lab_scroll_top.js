// Scroll the open notebook back to its first cell.
() => {
  const content = window.__panel.content;
  if (content.scrollToItem) content.scrollToItem(0);
  (content.node.closest('.jp-WindowedPanel-outer') || content.node).scrollTop = 0;
}
