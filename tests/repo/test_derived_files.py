"""Every derived file of the repository is current: what ``make regenerate`` would write (checkers.py, the README
tables, the exercise map's points and totals, the checks page's points) is what is stored
(docs/architecture.md, "Add an exercise"). That a stale file is named, for each kind, is shown in
tests/tools/authoring/test_regenerate.py; the stored notebooks against their sources: ``nbtool check``
(tests/notebooks/test_notebooks.py)."""

from __future__ import annotations

from tools.authoring import regenerate


def test_every_derived_file_is_current():
    found = regenerate.stale()
    assert not found, f"stale derived files, run make regenerate: {', '.join(sorted(found))}"
