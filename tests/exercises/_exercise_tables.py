"""Every exercise's solutions, planted mistakes and fixes, found through the registry.

Each exercise module ``llm_lab/exercises/_exNN_<concept>.py`` has beside it, in tests/exercises/:

- ``solutions_exNN_<concept>.py``: ``SOLUTIONS`` (exercise -> a correct solution) and ``PLANTED`` ((exercise, wrong
  code, hint the checker must name)); where there are any, ``CORRECT_BUT_DIFFERENT`` ((exercise, a correct solution
  written otherwise)), ``ROUND_MISTAKES`` ((exercise, wrong code, hint): graded, the message one line) and
  ``TRANSFER_MISTAKES`` ((exercise, wrong code, hint): the same hint in both languages);
- ``fixes_exNN_<concept>.py`` where its hints have second-step fixes: ``FIX_TEMPLATES`` (exercise -> a correct
  solution as source text), ``FIX_CASES`` ((exercise, hint, plant, fix)) and ``FIXES_WITHOUT_CODE``;
- ``test_exNN_<concept>.py``: that exercise's own tests.

The generic tests (tests/exercises/test_exercises.py, test_fixes.py, test_proxies.py, ...) read the tables here
(adding an exercise: docs/architecture.md, "Add an exercise").
"""

import importlib
import importlib.util

import llm_lab
from llm_lab import exercises as ex


def _module_name(exercise: str) -> str:
    return ex.REGISTRY[exercise].body.__module__.rsplit(".", 1)[-1]  # "_ex01_masks"


def solutions_of(exercise: str):
    """tests/exercises/solutions_exNN_<concept>.py of the exercise's module."""
    return importlib.import_module(f"solutions{_module_name(exercise)}")


def _fixes_of(exercise: str):
    name = f"fixes{_module_name(exercise)}"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


SOLUTION_MODULES = list(dict.fromkeys(solutions_of(name) for name in ex.EXERCISES))
FIX_MODULES = [m for m in dict.fromkeys(_fixes_of(name) for name in ex.EXERCISES) if m is not None]


def _rows(modules, table: str) -> list:
    return [row for module in modules for row in getattr(module, table, [])]


SOLUTIONS = {name: solutions_of(name).SOLUTIONS[name] for name in ex.EXERCISES if name in solutions_of(name).SOLUTIONS}
PLANTED = _rows(SOLUTION_MODULES, "PLANTED")
CORRECT_BUT_DIFFERENT = _rows(SOLUTION_MODULES, "CORRECT_BUT_DIFFERENT")
ROUND_MISTAKES = _rows(SOLUTION_MODULES, "ROUND_MISTAKES")
TRANSFER_MISTAKES = _rows(SOLUTION_MODULES, "TRANSFER_MISTAKES")
FIX_TEMPLATES = {name: source for module in FIX_MODULES for name, source in module.FIX_TEMPLATES.items()}
FIX_CASES = _rows(FIX_MODULES, "FIX_CASES")
FIXES_WITHOUT_CODE = set(_rows(FIX_MODULES, "FIXES_WITHOUT_CODE"))
# llm_lab's own answers, handed in: graded "reference"
REFERENCES = {
    "causal_mask": llm_lab.causal_mask,
    "renormalize": llm_lab.mask_and_renormalize,
    "causal_attention": llm_lab.CausalAttention,
    "multihead": llm_lab.MultiHeadAttention,
}
