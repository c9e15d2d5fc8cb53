"""Checkers for the llm-lab exercises: instant hints for learners, and a grading API for instructors.

**Learners** call ``check_<exercise>(obj)`` in a notebook. It runs ``obj`` on fixed-seed inputs against the
llm_lab reference and prints what the code printed (if anything), then ONE line: ``✅`` passed, ``🚧`` not
implemented yet, ``❌`` with a hint naming the likely mistake, ``⏰`` too slow, ``⚠️`` llm_lab's own reference
handed in. Hints come in two steps: the first ``❌`` for a mistake names the concept; the exact fix is added
only when the same mistake comes back in the same exercise (state kept per kernel session;
``reset_hints()`` forgets it). ``check_*`` never raises and returns None.

    from llm_lab.exercises import set_language, check_causal_mask
    set_language("zh")          # or "en"
    check_causal_mask(my_causal_mask)

**Graders** (``tools/teaching/grader``, nbgrader's hidden tests) use:

- ``grade(exercise, obj, *, lang="en", timeout=TIMEOUT, secret=None) -> CheckResult``: deterministic (fixed
  seeds inside ``torch.random.fork_rng``; the notebook's random stream is untouched; ``secret``: the inputs,
  values and free sizes, drawn from that secret instead, as ``make grade`` does), never uses or changes the two-step
  hint state, stops the learner's code after ``timeout`` seconds (for the whole check; ``None``: no limit).
  ``CheckResult`` fields: ``exercise``, ``status`` (one of ``STATUSES``: ``"pass"``, ``"todo"``, ``"fail"``,
  ``"error"``, ``"timeout"``, ``"reference"``), ``hint`` (the mistake id, e.g. ``"diagonal_masked"``;
  ``"passed"``, ``"not_implemented"``, ``"exception"``, ``"system_exit"``, ``"timeout"``, ``"reference"``,
  ``"checker_error"`` for the outcomes), ``message`` (one line naming the concept, in ``lang``), ``fix`` (the
  exact fix, ``""`` if none), ``output`` (what the learner's code printed, trimmed), ``points``, ``score``
  (``points`` if passed), ``passed``, ``line`` (icon + message). ``"reference"``: the object is, subclasses,
  wraps or calls llm_lab's own reference (``llm_lab.MultiHeadAttention`` handed in, a function that returns
  ``llm_lab.causal_mask(n)``); the message says so; it scores 0.
- ``LANGUAGES`` (the languages of the messages, the course's list); ``uninstrumented()``, a context manager
  under which checks run without their observer, reference watch and time limit (the benchmark of what that
  instrumentation costs uses it; grading never does).
- ``points(exercise) -> int``; ``EXERCISES`` (names, in notebook order); ``REGISTRY`` (name -> ``Exercise``
  record: ``notebook``, ``points``, ``takes`` (``"function"``/``"class"``), ``signature``, ``hints``, ...);
  ``exercises_of(notebook)`` (names for ``"05"``); ``HINTS`` (every mistake id with a message).
- ``fresh()``, ``audit(namespace) -> list[str]``: the defence for plain ``nbgrader autograde`` only, whose hidden
  tests run in the learner's kernel: ``fresh().grade(...)`` uses a copy of the checkers loaded from the package
  files, which a learner's cell cannot have patched, and ``fresh().audit(globals())`` names what the notebook
  replaced (``grading/autograde_guard.py`` says what it stops and what it cannot). ``make grade`` does not rely on
  it: it runs the checkers in its own process (``llm_lab.exercises.grading``).

Limits (documented, not hidden): the time limit cannot interrupt one long C call (a single huge torch op runs to
its end first). A real Ctrl-C (or Jupyter's stop button, or nbclient's cell timeout) during a check is re-raised,
so the user can always stop a cell; a ``KeyboardInterrupt`` or ``SystemExit`` raised by the learner's code itself
is caught and reported. ``evaluate(exercise, obj)`` is ``grade`` in the current ``set_language`` language.

**Adding an exercise**: the checklist in docs/architecture.md ("Add an exercise"); ``check_<name>``,
``__all__``, the notebook's grading and nbgrader metadata follow from the record and the cell tags.
"""

from __future__ import annotations

import contextlib

from . import _harness
from ._core import STATUSES, CheckResult, Exercise, get_language, known_language, set_language, word
from ._messages import LANGUAGES, MESSAGES
from ._registry import REGISTRY, record, run_check
from .grading import autograde_guard
from .grading.autograde_guard import audit, fresh

TIMEOUT = 10.0  # seconds per check; every correct solution needs well under one

EXERCISES = tuple(REGISTRY)
HINTS = tuple(sorted(set(MESSAGES) | {h for ex in REGISTRY.values() for h in ex.messages}))

_seen: set[tuple[str, str]] = set()  # (exercise, hint) pairs already shown once: the two-step hint state


def points(exercise: str) -> int:
    """What a pass of ``exercise`` is worth."""
    return record(exercise).points


def exercises_of(notebook: str) -> tuple[str, ...]:
    """The exercise names of notebook ``"NN"``, in order."""
    return tuple(name for name, ex in REGISTRY.items() if ex.notebook == notebook)


def grade(
    exercise: str, obj, *, lang: str = "en", timeout: float | None = TIMEOUT, secret: int | None = None
) -> CheckResult:
    """Check ``obj`` for ``exercise`` for grading: deterministic, prints nothing, no hint state, time-limited.
    ``secret`` (an int the grader keeps to itself): the checkers' inputs are drawn from it, not from the public
    fixed seeds, so answers recorded from the public checks do not fit them."""
    record(exercise)
    return run_check(exercise, obj, lang=known_language(lang), timeout=timeout, secret=secret)


def evaluate(exercise: str, obj, *, timeout: float | None = TIMEOUT) -> CheckResult:
    """``grade`` in the language chosen with ``set_language``."""
    return grade(exercise, obj, lang=get_language(), timeout=timeout)


def tampered_note(patched: list[str], lang: str | None = None) -> str:
    """What a hidden test (``tools.course.verdict_code``) says when ``audit`` found redefined or patched checkers
    ``patched``, in ``lang`` (default: the language chosen with ``set_language``)."""
    return word("tampered", known_language(lang or get_language()), names=", ".join(patched))


@contextlib.contextmanager
def uninstrumented():
    """Checks without their observer, reference watch and time limit: what the learner's code costs on its own,
    for ``benchmarks/checker_overhead.py``, which measures that instrumentation. Never for grading."""
    off = {
        "_observing": lambda r, on: contextlib.nullcontext(),
        "_watching": lambda r, observed=False: contextlib.nullcontext(),
        "_time_limit": lambda r, case: contextlib.nullcontext(),
    }
    saved = {name: getattr(_harness, name) for name in off}
    vars(_harness).update(off)
    try:
        yield
    finally:
        vars(_harness).update(saved)


def reset_hints() -> None:
    """Forget which mistakes were already hinted: the next ❌ of each names the concept only again."""
    _seen.clear()


def check(exercise: str, obj) -> None:
    """Print what ``obj``'s code printed and the result line for ``exercise``; never raises."""
    result = evaluate(exercise, obj)
    lang = get_language()
    if result.output:
        print(word("printed", lang))
        print(result.output)
    line = result.line
    if result.status in ("fail", "error") and result.fix:
        key = (exercise, result.hint)
        line += f" {word('fix', lang)} {result.fix}" if key in _seen else f" {word('fix_next', lang)}"
        _seen.add(key)
    print(line)


from . import checkers  # noqa: E402  (after check: the checkers call it)
from .checkers import *  # noqa: E402, F403  (check_<name> for every exercise, generated from the records)

autograde_guard.remember(__name__)

__all__ = [
    "EXERCISES",
    "HINTS",
    "LANGUAGES",
    "REGISTRY",
    "STATUSES",
    "TIMEOUT",
    "CheckResult",
    "Exercise",
    "audit",
    "check",
    "evaluate",
    "exercises_of",
    "fresh",
    "get_language",
    "grade",
    "points",
    "reset_hints",
    "set_language",
    "tampered_note",
    "uninstrumented",
]
__all__ += checkers.__all__
