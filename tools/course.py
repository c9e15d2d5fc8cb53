"""The course model shared by the builder, the student-copy tool, the grader and their tests.

One place for: where notebooks live, which languages exist, the notebook name pattern, ``--only`` parsing,
the cell tags an author writes, and the nbgrader rule that turns tags into nbgrader metadata.

Cell tags (written in ``.nbsrc`` as ``%% code tags=...`` / ``%% md tags=...``):

    solution  code: an exercise solution between ``### BEGIN SOLUTION`` / ``### END SOLUTION``
              (nbgrader "autograded answer"; student copies get a stub)
    checker   code: ``check_<exercise>(<obj>)``, one call; nbgrader "autograded tests" worth the exercise's
              points, with hidden tests that grade ``<obj>`` with a fresh copy of the checkers
    answer    markdown: the model answer of a Predict/Explain question (nbgrader "manually graded answer";
              student copies get "YOUR ANSWER HERE")

An exercise is therefore found from the tags alone: every ``checker`` cell is one autograded exercise, named
after the object it checks (unique within a notebook), and owns the ``solution`` cells since the previous
``checker``. Nothing lists exercises by hand: a new checker cell is graded the day it is written.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"  # the learner versions, NOTEBOOKS/{lang}/: what Colab badges and `make lab` open
INSTRUCTOR = NOTEBOOKS / "instructor"  # the instructor versions, INSTRUCTOR/{lang}/: solutions and hidden tests
SRC = NOTEBOOKS / "src"
LANGS = ("en", "zh")
PATTERN = "[0-9][0-9]_*.ipynb"
# The two stored versions of every notebook (tools/authoring/learner.py derives the first from the second).
LEARNER, INSTRUCTOR_VERSION = "learner", "instructor"
VERSIONS = (LEARNER, INSTRUCTOR_VERSION)


def version_dir(version: str, root: Path | None = None) -> Path:
    """Where a version's ``{lang}/`` folders live: ``notebooks`` (learner) or ``notebooks/instructor``."""
    if version not in VERSIONS:
        raise ValueError(f"unknown notebook version {version!r}: use one of {', '.join(VERSIONS)}")
    base = NOTEBOOKS if root is None else Path(root)
    return base if version == LEARNER else base / "instructor"


# The exercises section's how-to paragraph (``{{HOWTO}}`` in an exercises source), one per version and language.
HOWTO = {
    INSTRUCTOR_VERSION: {
        "en": "*Instructor version:* each cell marked *your turn* holds the reference solution and each checker cell "
        "its hidden tests. The learner version (`notebooks/en/`, what the Colab badge opens) has the cells to "
        "write instead and each solution folded under its checker; `make student` writes the class's copies, "
        "with no solutions at all. The checker prints ✅ correct, 🚧 not written yet, or ❌ with a hint naming "
        "the likely mistake. A Predict/Explain model answer sits in the cell under its question.",
        "zh": "*教师版：* 每个标着“轮到你了”的单元格里是参考答案，每个检查单元格里带着隐藏测试。"
        "学习版（`notebooks/zh/`，"
        "Colab 徽章打开的就是它）里这些单元格留给学习者来写，参考答案折叠在检查单元格下面；`make student` "
        "生成的学生版则完全不含答案。检查器输出 ✅ 表示正确，🚧 表示还没写，❌ 会附上一条指出可能错误的提示。"
        "预测题和解释题的参考答案在题目下方的单元格里。",
    },
    LEARNER: {
        "en": "Write your code in each cell marked *your turn* (it says YOUR CODE HERE), then run the checker cell "
        "below it: ✅ correct, 🚧 not written yet, ❌ with a hint naming the likely mistake. A solution is "
        "folded under each checker, one click away: try first. Predict and Explain: write your answer in the "
        "cell under the question, then open the model answer folded below it.",
        "zh": "把你的代码写在每个标着“轮到你了”的单元格里（那里写着 YOUR CODE HERE），然后运行它下面的检查单元格："
        "✅ 表示正确，🚧 表示还没写，❌ 会附上一条指出可能错误的提示。每个检查单元格下面都折叠着一份参考答案，"
        "点一下就能展开：先自己试。预测题和解释题：把答案写在题目下方的单元格里，再展开它下面折叠的参考答案。",
    },
    "student": {
        "en": "Write your code in each cell marked *your turn*, where it raises `NotImplementedError`, then run the "
        "checker cell below it: ✅ correct, 🚧 not written yet, ❌ with a hint naming the likely mistake. "
        "Predict and Explain answers go in the cell right under the question (YOUR ANSWER HERE); they are "
        "graded by hand.",
        "zh": "把你的代码写在每个标着“轮到你了”的单元格里（它会抛出 `NotImplementedError`），"
        "然后运行它下面的检查单元格："
        "✅ 表示正确，🚧 表示还没写，❌ 会附上一条指出可能错误的提示。"
        "预测题和解释题的答案写在题目正下方的单元格里"
        "（在这里写下你的答案），由老师批改。",
    },
}
# The instructor version's header says what it is, instead of a Colab badge (the badge opens the learner version).
INSTRUCTOR_NOTE = {
    "en": "*Instructor version, with the solutions, model answers and hidden tests. Learners open "
    "[the learner version](../../en/{name}) (its Colab badge); `make student` writes a class's copies.*",
    "zh": "*教师版，含参考答案、参考解答和隐藏测试。学习者请打开[学习版](../../zh/{name})（或点它的 Colab 徽章）；"
    "`make student` 生成班级用的学生版。*",
}
EXERCISES_TAG = "exercises"  # the exercises section's heading cell (the first cell of NN_*.exercises.nbsrc)

SOLUTION, CHECKER, ANSWER = "solution", "checker", "answer"
ANSWER_POINTS = 1  # a Predict or Explain answer, graded by hand
DEFAULT_POINTS = 2  # an implement/fix exercise whose registry entry has no points (yet)

# nbgrader's default markers, kept so that nbgrader itself can process the notebooks.
BEGIN_SOLUTION, END_SOLUTION = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
# What replaces a solution in a student copy, in the copy's language (nbgrader's defaults are the English ones).
CODE_STUB = {
    "en": "# YOUR CODE HERE\nraise NotImplementedError()",
    "zh": "# 在这里写你的代码（YOUR CODE HERE）\nraise NotImplementedError()",
}
TEXT_STUB = {"en": "YOUR ANSWER HERE", "zh": "在这里写下你的答案（YOUR ANSWER HERE）"}

CHECK_CALL = re.compile(r"^check_(\w+)\((\w+)\)$")


def site_module():
    """``site/course_site.py``, the static site's configuration, as the module ``course_site`` (``site/`` is
    Sphinx's folder, not a package: ``site`` is a standard-library name); loaded once, shared with Sphinx's conf."""
    if "course_site" not in sys.modules:
        spec = importlib.util.spec_from_file_location("course_site", ROOT / "site" / "course_site.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["course_site"] = module
        spec.loader.exec_module(module)
    return sys.modules["course_site"]


def parse_only(only: str | None) -> tuple[str, ...] | None:
    """``"01,3"`` -> ``("01", "03")``; None or empty -> None (all notebooks)."""
    if not only:
        return None
    parts = [p.strip() for p in only.split(",") if p.strip()]
    bad = [p for p in parts if not p.isdigit() or len(p) > 2]
    if bad or not parts:
        raise ValueError(f"--only {only}: expected comma-separated notebook numbers such as 01,03, got {bad or only!r}")
    return tuple(p.zfill(2) for p in parts)


def find_notebooks(src: Path = INSTRUCTOR, only: str | None = None, langs=None) -> list[Path]:
    """``src/{lang}/NN_*.ipynb`` for every language (``langs``, default LANGS as it is at the call), optionally
    only the numbers in ``only`` (default ``src``: the instructor versions)."""
    prefixes = parse_only(only)
    found = [p for lang in (LANGS if langs is None else langs) for p in sorted((Path(src) / lang).glob(PATTERN))]
    return [p for p in found if prefixes is None or p.name[:2] in prefixes]


def select(
    only: str | None = None, *, versions=(INSTRUCTOR_VERSION,), langs=None, root: Path | None = None
) -> list[Path]:
    """The stored notebooks of ``versions`` in ``langs``, only the numbers ``only`` names: what every tool's
    ``NB=`` / ``--only`` means (``"3,06"``: notebooks 03 and 06; ``"0"``: notebook 00, not every number starting 0)."""
    return [p for v in versions for p in find_notebooks(version_dir(v, root), only, langs)]


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def checker_call(source: str) -> tuple[str, str] | None:
    """``"check_dropout(attention_dropout)"`` -> ``("dropout", "attention_dropout")``; the checker cell's call."""
    visible = source.split(BEGIN_HIDDEN)[0].splitlines()
    lines = [line for line in visible if line.strip() and not line.startswith("#")]
    m = CHECK_CALL.match(lines[0].strip()) if len(lines) == 1 else None
    return (m[1], m[2]) if m else None


def points(exercise: str) -> int:
    """Points of an autograded exercise: the checker registry's, else DEFAULT_POINTS."""
    try:
        import llm_lab.exercises as ex  # lazily: the tools also handle notebooks without importing torch
    except ImportError:  # a half-edited checker package must not stop the builder
        return DEFAULT_POINTS
    entry = ex.REGISTRY.get(exercise)
    return entry.points if entry is not None else DEFAULT_POINTS


@dataclass(frozen=True)
class ExerciseCells:
    """Where one autograded exercise is in a notebook: ``key`` (the checked object's name, unique in the notebook),
    ``exercise`` (the checker's name, a key of ``llm_lab.exercises.REGISTRY``), the index of its checker cell and
    of the solution cells it grades."""

    key: str
    exercise: str
    checker: int
    solutions: tuple[int, ...]


def exercises(cells) -> list[ExerciseCells]:
    """The autograded exercises of a notebook's cells, in order (see the module docstring)."""
    found, pending = [], []
    for i, cell in enumerate(cells):
        if SOLUTION in tags(cell):
            pending.append(i)
        elif CHECKER in tags(cell):
            call = checker_call(cell.source if hasattr(cell, "source") else cell["source"])
            if call is None:
                continue  # e.g. the cell that sets the checkers' language
            found.append(ExerciseCells(call[1], call[0], i, tuple(pending)))
            pending = []
    keys = [e.key for e in found]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"two checker cells check the same object {dup}: name each exercise's object differently")
    return found


def verdict_code(exercise: str, obj: str, lang: str | None = None) -> str:
    """Kernel code that grades ``obj`` with a fresh copy of the checkers and sets ``_status``, ``_mistake``,
    ``_note``: grade()'s status (pass, todo, fail, error, timeout, reference: llm_lab's own code handed in),
    or ``tampered`` when ``llm_lab.exercises.audit`` finds redefined ``check_*`` or patched checkers.
    ``lang``: the messages' language (default: the notebook's ``set_language``)."""
    language = f'"{lang}"' if lang else "_live.get_language()"
    return "\n".join(
        [
            "import llm_lab.exercises as _live",
            "",
            "_fresh = _live.fresh()",
            "_patched = _fresh.audit(globals())",
            f"_obj = {obj}",
            "if _patched:",
            '    _status, _mistake = "tampered", "tampered"',
            f"    _note = _fresh.tampered_note(_patched, lang={language})",
            "else:",
            f'    _r = _fresh.grade("{exercise}", _obj, lang={language})',
            "    _status, _mistake, _note = _r.status, _r.hint, _r.message",
        ]
    )


def hidden_tests(exercise: str, obj: str) -> str:
    """The hidden part of a checker cell (nbgrader restores it when autograding): fail unless ``obj`` passes
    a fresh copy of the checker, so a redefined or patched checker, or llm_lab's reference, scores 0."""
    return "\n".join([BEGIN_HIDDEN, verdict_code(exercise, obj), 'assert _status == "pass", _note', END_HIDDEN])


def nbgrader_metadata(cells, nn: str) -> None:
    """Give ``cells`` (one notebook, numbered ``nn``) their nbgrader metadata, from their tags; add the hidden
    tests to checker cells. Solution cells grade nothing themselves; a checker cell is the exercise's test."""
    by_cell = {e.checker: e for e in exercises(cells)}
    owner = {s: e for e in by_cell.values() for s in e.solutions}
    answers = 0
    for i, cell in enumerate(cells):
        cell_tags = tags(cell)
        meta = {"grade": False, "locked": False, "schema_version": 3, "solution": False, "task": False}
        if SOLUTION in cell_tags:
            key = owner[i].key if i in owner else f"{i:03d}"
            meta.update(solution=True, grade_id=f"ex{nn}-{key}")
        elif i in by_cell:
            ex = by_cell[i]
            meta.update(grade=True, locked=True, grade_id=f"ex{nn}-{ex.key}-test", points=points(ex.exercise))
            if BEGIN_HIDDEN not in cell.source:
                cell.source = cell.source.rstrip("\n") + "\n" + hidden_tests(ex.exercise, ex.key)
        elif ANSWER in cell_tags:
            answers += 1
            meta.update(grade=True, solution=True, grade_id=f"ex{nn}-answer-{answers}", points=ANSWER_POINTS)
        else:
            continue
        cell.metadata["nbgrader"] = meta
