// How many folds (<details>) in the rendered Markdown are open.
() => [...window.__panel.node.querySelectorAll('.jp-MarkdownOutput details')].filter(d => d.open).length
