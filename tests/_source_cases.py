"""The source check's verdict on a learner's cells after notebook 01's course cell (tests/tools/teaching/grader/:
test_source_checks.py, test_source_attacks.py)."""

from __future__ import annotations

from tools.teaching.grader import source_checks

# notebook 01's course cell binds both exercises' names before the exercises, as the fixture's does
COURSE = (
    "import torch\nfrom llm_lab import causal_mask, mask_and_renormalize\n"
    "from llm_lab.exercises import check_causal_mask, check_renormalize\n"
)
RIGHT = "def causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)\n"


def verdict(
    learner: list[str],
    key: str = "causal_mask",
    exercise: str = "causal_mask",
    lang: str = "en",
    errors: dict | None = None,
    own=(),
):
    """``errors``: the kernel's error per learner cell (0: the first learner cell), ``own``: which learner cells
    are the exercise's solution cells."""
    cells = [
        source_checks.Cell(COURSE, False),
        *(source_checks.Cell(c, True) for c in learner),
        source_checks.Cell(f"_llm_lab_kernel.capture({key!r}, lambda: {key})", False),
    ]
    errors = {i + 1: e for i, e in (errors or {}).items()}
    own = [i + 1 for i in own]
    return source_checks.Reading(cells).verdict(key, exercise, len(cells) - 1, lang, errors, own)
