"""Seeing attention work: plotting (figures), widgets (explorers), heads (probes, a trained model), induction."""
