"""Seeing attention work: plotting (figures), widgets (explorers), heads (probes, a trained model), induction
(notebook 08's model and training), copy_data (08's task, probes and copyable predictions), circuit (08's evidence),
circuit_diagram (08's circuit drawn), positions and position_codes (notebook 09's position schemes on 08's model)."""
