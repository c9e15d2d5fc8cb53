"""Seeing attention work: plotting (figures), widgets (explorers), heads (probes, a trained model), induction
(notebook 08's model and task), circuit (08's evidence)."""
