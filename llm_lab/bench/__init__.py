"""Notebook 07's attention race: variants (nine ways to write one layer), benchmark (their time and memory)."""
