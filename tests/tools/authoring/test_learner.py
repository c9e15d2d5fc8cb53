"""The learner versions (notebooks/LANG, what a Colab badge and `make lab` open) give nothing away.

Unit tests of tools/authoring/learner.py on a small notebook, then the stored learner versions against the stored
instructor versions: no solution, hidden test or nbgrader metadata; each solution folded under its checker,
the same code as the instructor's; each checker's stored verdict "not written yet"; no other exercise output;
the lessons' stored outputs the same as the instructor version's.
"""

import json
import re
from pathlib import Path

import nbformat
import pytest

from tools import course as _course
from tools.authoring import learner, nbtool

ROOT = Path(__file__).resolve().parents[3]

NAMES = [p.name for p in sorted((ROOT / "notebooks" / "en").glob(_course.PATTERN))]
PAIRS = [(lang, name) for lang in _course.LANGS for name in NAMES]
DETAILS = re.compile(r"^<details><summary>(.+?)</summary>\n\n(.*)\n\n</details>$", re.S)
CODE_BLOCK = re.compile(r"^```python\n(.*)\n```$", re.S)


def read(version: str, lang: str, name: str) -> nbformat.NotebookNode:
    return nbformat.read(str(_course.version_dir(version) / lang / name), as_version=4)


def instructor_cell(source: str, tags: list[str]) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = tags
    return cell


# ---- tools/authoring/learner.py on small inputs ------------------------------------------------------------------


def test_a_solution_becomes_the_stub_at_the_markers_indentation():
    src = (
        'import torch\n\n\ndef f(x):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return x + 1\n'
        "    ### END SOLUTION\n\n\nprint('kept')"
    )
    out = learner.stub_solution(src, "en")
    assert out == (
        'import torch\n\n\ndef f(x):\n    """Doc."""\n    # YOUR CODE HERE\n'
        "    raise NotImplementedError()\n\n\nprint('kept')"
    )
    assert "在这里写你的代码" in learner.stub_solution(src, "zh")
    shown = learner.shown_solution(src)
    assert shown == 'import torch\n\n\ndef f(x):\n    """Doc."""\n    return x + 1\n\n\nprint(\'kept\')'


@pytest.mark.parametrize(
    "bad",
    [
        "    ### BEGIN SOLUTION\n    x = 1",
        "x = 1\n    ### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
    ],
)
def test_unbalanced_markers_are_an_error_naming_them(bad):
    with pytest.raises(ValueError, match="SOLUTION"):
        learner.stub_solution(bad, "en")


def test_the_transform_folds_solutions_and_answers_and_drops_grading_code():
    nb = nbformat.v4.new_notebook()
    solution = instructor_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION", ["solution"])
    solution.metadata["nbgrader"] = {"solution": True, "grade_id": "ex01-f"}
    checker = instructor_cell(f"check_f(f)\n{_course.BEGIN_HIDDEN}\nsecret()\n{_course.END_HIDDEN}", ["checker"])
    answer = nbformat.v4.new_markdown_cell("<details><summary>Why</summary>\n\nBecause.\n</details>")
    answer.metadata["tags"] = ["answer"]
    plain = nbformat.v4.new_markdown_cell("The answer is not given here.")
    nb.cells = [solution, checker, answer, plain]
    for i, c in enumerate(nb.cells):
        c["id"] = f"en-01-{i:03d}"
    out = learner.learner_version(nb, "en")
    assert [c.source for c in nb.cells][0].count("return x") == 1, "the input is not modified"
    kinds = [(c.cell_type, c.metadata.get("tags")) for c in out.cells]
    assert kinds == [
        ("code", ["solution"]),
        ("code", ["checker"]),
        ("markdown", [learner.FOLDED_TAG]),
        ("markdown", ["answer"]),
        ("markdown", [learner.FOLDED_TAG]),
        ("markdown", None),
    ]
    assert "raise NotImplementedError()" in out.cells[0].source and "return x" not in out.cells[0].source
    assert out.cells[1].source == "check_f(f)"
    assert out.cells[2].source == (
        "<details><summary>Solution (try first)</summary>\n\n```python\ndef f(x):\n    return x\n```\n\n</details>"
    )
    assert out.cells[3].source == "YOUR ANSWER HERE"
    assert out.cells[4].source == "<details><summary>Why</summary>\n\nBecause.\n\n</details>"
    assert not any("nbgrader" in c.metadata for c in out.cells)
    assert [c["id"] for c in out.cells] == [
        "en-01-000",
        "en-01-001",
        "en-01-001-solution",
        "en-01-002",
        "en-01-002-model",
        "en-01-003",
    ]


def test_a_solution_without_a_checker_is_refused():
    nb = nbformat.v4.new_notebook()
    nb.cells = [instructor_cell("def f():\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION", ["solution"])]
    nb.cells[0]["id"] = "x"
    with pytest.raises(ValueError, match="needs a checker"):
        learner.learner_version(nb, "en")


def test_a_source_builds_both_versions(tmp_path):
    src = tmp_path / "01_demo.nbsrc"
    src.write_text(
        "%% title\n01 · Demo\n%% title zh\n01 · 演示\n%% md\nLesson.\n%% md zh\n正文。\n%% code\nx = 1\n",
        encoding="utf-8",
    )
    (tmp_path / "01_demo.exercises.nbsrc").write_text(
        "%% md\n## Exercises\n\n{{HOWTO}}\n%% md zh\n## 练习\n\n{{HOWTO}}\n"
        "%% code tags=solution\ndef f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
        "%% code tags=checker\ncheck_causal_mask(f)\n",
        encoding="utf-8",
    )
    for lang in _course.LANGS:
        inst = nbtool.build_one(src, lang, "o/r", "v1")
        learn = nbtool.build_one(src, lang, "o/r", "v1", "learner")
        assert _course.HOWTO["instructor"][lang] in inst.cells[4].source
        assert _course.HOWTO["learner"][lang] in learn.cells[4].source
        assert _course.EXERCISES_TAG in learn.cells[4].metadata["tags"]
        assert "colab-badge" in learn.cells[0].source and "colab-badge" not in inst.cells[0].source
        assert _course.BEGIN_HIDDEN in inst.cells[6].source and _course.BEGIN_HIDDEN not in learn.cells[6].source
        assert learner.FOLDED_TAG in learn.cells[7].metadata["tags"] and len(learn.cells) == len(inst.cells) + 1
    with pytest.raises(ValueError, match="unknown notebook version 'student'"):
        nbtool.build_one(src, "en", "o/r", "v1", "student")


# ---- the stored learner versions -------------------------------------------------------------------------


@pytest.mark.parametrize("lang,name", PAIRS)
def test_stored_learner_version_gives_nothing_away(lang, name):
    nb = read("learner", lang, name)
    text = json.dumps(nb)
    for secret in (_course.BEGIN_SOLUTION, _course.END_SOLUTION, "HIDDEN TESTS", "_fresh", "audit(", '"nbgrader"'):
        assert secret not in text, f"{secret!r} in the learner version"
    start = learner.exercises_start(nb)
    if start is None:
        return
    for i, cell in enumerate(nb.cells[start:], start):
        tags = _course.tags(cell)
        if cell.cell_type == "code" and "checker" not in tags:
            assert not cell.outputs, f"cell {i}: an exercise output that could give an answer away"
        if "solution" in tags:
            assert "raise NotImplementedError()" in cell.source, f"cell {i}: a solution cell without the stub"
        if "answer" in tags:
            assert cell.source == _course.TEXT_STUB[lang], f"cell {i}: a model answer in the cell to write in"
            assert learner.FOLDED_TAG in _course.tags(nb.cells[i + 1]), f"cell {i}: no folded model answer after it"


@pytest.mark.parametrize("lang,name", PAIRS)
def test_each_solution_is_folded_under_its_checker_and_is_the_instructors(lang, name):
    learn, inst = read("learner", lang, name), read("instructor", lang, name)
    exercises = _course.exercises(inst.cells)
    checkers = [
        i for i, c in enumerate(learn.cells) if _course.CHECKER in _course.tags(c) and _course.checker_call(c.source)
    ]
    assert len(checkers) == len(exercises)
    for ex, at in zip(exercises, checkers, strict=True):
        folded = learn.cells[at + 1]
        assert folded.cell_type == "markdown" and learner.FOLDED_TAG in _course.tags(folded)
        summary, body = DETAILS.match(folded.source).groups()
        assert summary == learner.SOLUTION_SUMMARY[lang]
        code = CODE_BLOCK.match(body)[1]
        want = "\n\n\n".join(learner.shown_solution(inst.cells[s].source) for s in ex.solutions)
        assert code == want
        # the verdict stored under the checker is the one for a stub: not written yet (and in the right language)
        out = "".join(o.get("text", "") for o in learn.cells[at].outputs)
        assert out.startswith("🚧"), f"{ex.key}: stored checker output {out!r}"


@pytest.mark.parametrize("lang,name", PAIRS)
def test_the_lessons_are_the_same_in_both_versions(lang, name):
    """Cells before the exercises: same sources (the header aside) and the same stored outputs."""
    learn, inst = read("learner", lang, name), read("instructor", lang, name)
    start = learner.exercises_start(inst) or len(inst.cells)
    assert learner.exercises_start(learn) in (start, None if start == len(inst.cells) else start)
    for a, b in zip(learn.cells[1:start], inst.cells[1:start], strict=True):
        assert a.source == b.source
        if a.cell_type == "code" and not a.source.startswith("# NBVAL_IGNORE_OUTPUT"):
            assert texts(a) == texts(b), a["id"]


def texts(cell) -> list[str]:
    """What nbval compares: streams and text/plain (figures and widget views differ from run to run)."""
    return [
        o.get("text", "") + o.get("data", {}).get("text/plain", "")
        if "application/vnd.jupyter.widget-view+json" not in o.get("data", {})
        else "widget"
        for o in cell.outputs
    ]
