"""Notebook 07's attention race: nine ways to write one layer (``variants``), timed and measured (``benchmark``)."""
