"""Every second-step fix of notebooks 04-07 is itself a correct move for its exercise.

Each case starts from a correct solution written as source text, plants one mistake by replacing a line, checks
that the checker names it, then APPLIES THE FIX: replaces the planted line with code that uses the fix text's
own code (a backticked fragment of it must appear in the fixed source) and checks that the result passes.
A final test makes sure every hint with a fix in these exercises has such a case. The solutions and cases are each
notebook's, in tests/exercises/fixes_exNN_<concept>.py, found through the registry (_exercise_tables.py).
"""

import re

import pytest
from _exercise_tables import FIX_CASES, FIX_TEMPLATES, FIXES_WITHOUT_CODE

from llm_lab import exercises as ex
from llm_lab.exercises._messages import FIXES

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


def _load(source: str, exercise: str):
    namespace: dict = {}
    exec(compile(source, f"<{exercise}>", "exec"), namespace)
    return namespace["Fixed" if ex.REGISTRY[exercise].takes == "class" else "fixed"]


def _edit(source: str, pairs) -> str:
    for old, new in pairs:
        assert source.count(old) >= 1, f"not in the source: {old!r}"
        source = source.replace(old, new)
    return source


def _code_fragments(fix: str) -> list[str]:
    """The backticked pieces of a fix that are code (a call, an index or an assignment), as regexes: ``...``
    stands for anything, quotes and spaces are normalized."""
    pieces = [p for p in re.findall(r"`([^`]+)`", fix) if any(c in p for c in "([=")]
    return [re.escape(_normal(p)).replace(re.escape("..."), ".*?") for p in pieces]


def _normal(code: str) -> str:
    return " ".join(code.replace("'", '"').split())


def _fix_of(exercise: str, hint: str, lang: str = "en") -> str:
    table = ex.REGISTRY[exercise].fixes.get(hint) or FIXES.get(hint)
    return table[lang] if table else ""


@pytest.mark.parametrize("exercise", list(FIX_TEMPLATES))
def test_the_solutions_the_mistakes_are_planted_in_pass(exercise):
    result = ex.grade(exercise, _load(FIX_TEMPLATES[exercise], exercise))
    assert result.passed, result.message


@pytest.mark.parametrize(("exercise", "hint", "plant", "fix"), FIX_CASES, ids=[f"{e}-{h}" for e, h, *_ in FIX_CASES])
def test_the_fix_applied_to_the_mistake_passes(exercise, hint, plant, fix):
    wrong_source = _edit(FIX_TEMPLATES[exercise], plant)
    wrong = ex.grade(exercise, _load(wrong_source, exercise))
    assert (wrong.status, wrong.hint) == ("fail", hint), wrong.message
    assert wrong.fix == _fix_of(exercise, hint) and wrong.fix, "a mistake with no fix, or another fix"
    fixed_source = _edit(wrong_source, fix or [(new, old) for old, new in plant])
    assert fixed_source != wrong_source
    if (exercise, hint) not in FIXES_WITHOUT_CODE:
        fragments = _code_fragments(wrong.fix)
        assert fragments, f"the fix has no code: {wrong.fix}"
        assert any(re.search(f, _normal(fixed_source)) for f in fragments), (wrong.fix, fixed_source)
    fixed = ex.grade(exercise, _load(fixed_source, exercise))
    assert fixed.passed, (wrong.fix, fixed.message)


def test_every_fix_of_notebooks_04_to_07_is_applied_above():
    covered = {(e, h) for e, h, *_ in FIX_CASES}
    missing = [
        (name, hint)
        for name, record in ex.REGISTRY.items()
        if record.notebook in ("04", "05", "06", "07")
        for hint in record.hints
        if _fix_of(name, hint) and (name, hint) not in covered
    ]
    assert not missing


def test_both_languages_give_the_same_code_in_a_fix():
    for name, record in ex.REGISTRY.items():
        if record.notebook not in ("04", "05", "06", "07"):
            continue
        for hint in record.hints:
            if _fix_of(name, hint):
                en, zh = (sorted(re.findall(r"`([^`]+)`", _fix_of(name, hint, lang))) for lang in ("en", "zh"))
                assert en == zh, (name, hint)
