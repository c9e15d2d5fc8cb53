// How many explorers have drawn their heatmap.
() => window.__panel.node.querySelectorAll('.llm-lab-explorer img').length
