"""The source check's verdict on a learner's cells after notebook 01's course cell (tests/tools/teaching/grader/:
test_source_checks.py, test_source_attacks.py)."""

from __future__ import annotations

import nbformat

from tools.teaching.grader import source_checks

# notebook 01's course cell binds both exercises' names before the exercises, as the fixture's does
COURSE = (
    "import torch\nfrom llm_lab import causal_mask, mask_and_renormalize\n"
    "from llm_lab.exercises import check_causal_mask, check_renormalize\n"
)
RIGHT = "def causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)\n"


def read(learner: list[str], key: str = "causal_mask", exercise: str = "causal_mask", lang: str = "en", own=None):
    """The grader's reading of notebook 01's course cell, the ``learner`` cells and the exercise's capture cell, as
    ``reading.read_submission`` makes it (``source_checks.runnable`` first: the cells it cannot vouch for are not
    run): (what the source decides for the exercise, ``{learner cell (0: the first): Skipped}``). ``own``: which
    learner cells are the exercise's solution cells (default: all of them)."""
    sources = [COURSE, *learner, f"_llm_lab_kernel.capture({key!r}, lambda: {key})"]
    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    reading = source_checks.runnable(cells, list(range(1, len(learner) + 1)))
    own = range(len(learner)) if own is None else own
    found = reading.verdict(key, exercise, len(cells) - 1, lang, [i + 1 for i in own])
    return found, {i - 1: s for i, s in reading.skipped.items()}


def verdict(learner: list[str], key: str = "causal_mask", exercise: str = "causal_mask", lang: str = "en", own=None):
    """What the source decides for the exercise (``read``'s first answer)."""
    return read(learner, key, exercise, lang, own)[0]


def outcome(learner: list[str]) -> str | None:
    """One word for what the grader does with ``learner`` (a right ``causal_mask`` among them): the exercise's
    verdict when what is left decides it (reference, fail, the solution left out, ...); else "tampered" or "error"
    (unreadable, does not compile) when it left statements out, all of that kind; None when it ran everything and
    the checkers decide."""
    found, skipped = read(learner)
    kinds = {"tampered" if s.kind == "tampered" else "error" for s in skipped.values()}
    if found is not None or not skipped:  # what is left decides the exercise
        return found.status if found else None
    return kinds.pop() if len(kinds) == 1 else f"mixed: {sorted(kinds)}"
