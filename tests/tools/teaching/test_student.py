"""Student copies (tools/teaching/student.py): nbgrader release versions that give nothing away; learners' work kept."""

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbgrader", reason="student copies are nbgrader releases: make instructor-setup")

from tools import course as _course
from tools.teaching import student

ROOT = Path(__file__).resolve().parents[3]

SOLUTION = "def add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def synthetic_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    intro = nbformat.v4.new_markdown_cell("# Exercises\nWrite `add_one`. Why does it add one?")
    normal = nbformat.v4.new_code_cell(
        "plot_something()",
        execution_count=3,
        outputs=[
            nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
            nbformat.v4.new_output("stream", name="stdout", text="the predicted answer is 2\n"),
        ],
    )
    answer = nbformat.v4.new_markdown_cell("<details><summary>Why</summary>Because one is one.</details>")
    answer.metadata["tags"] = ["answer"]
    solution = nbformat.v4.new_code_cell(
        SOLUTION, execution_count=4, outputs=[nbformat.v4.new_output("stream", name="stdout", text="the answer is 2\n")]
    )
    solution.metadata["tags"] = ["solution"]
    checker = nbformat.v4.new_code_cell(
        "check_add_one(add_one)",
        execution_count=5,
        outputs=[nbformat.v4.new_output("stream", name="stdout", text="✅ add_one: passed\n")],
    )
    checker.metadata["tags"] = ["checker"]
    nb.cells = [intro, normal, answer, solution, checker]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"en-01-{i:03d}"
    _course.nbgrader_metadata(nb.cells, "01")  # the builder's rule
    return nb


def test_copy_is_an_nbgrader_release_that_gives_nothing_away():
    nb = synthetic_notebook()
    before = nbformat.writes(nb)
    out = nbformat.reads(student.make_student_copy(nb, "en"), as_version=4)
    assert nbformat.writes(nb) == before, "the instructor notebook must not be modified"
    nbformat.validate(out)
    intro, normal, answer, solution, checker = out.cells

    assert solution.source == "def add_one(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert answer.source == "YOUR ANSWER HERE"
    assert checker.source == "check_add_one(add_one)", "hidden tests are stripped"
    text = json.dumps(out)
    for secret in ("return x + 1", "one is one", "answer is 2", "HIDDEN TESTS", "_verdict", "_status"):
        assert secret not in text
    assert all(c.outputs == [] and c.execution_count is None for c in out.cells if c.cell_type == "code")
    # nbgrader's release metadata: points, locks and checksums, and the instructor notebook's cell ids
    assert checker.metadata["nbgrader"]["points"] == _course.DEFAULT_POINTS and checker.metadata["nbgrader"]["locked"]
    assert answer.metadata["nbgrader"]["points"] == _course.ANSWER_POINTS and answer.metadata["nbgrader"]["grade"]
    assert all("checksum" in c.metadata["nbgrader"] for c in (answer, solution, checker))
    assert solution.metadata["nbgrader"]["grade_id"] == "ex01-add_one"
    assert checker.metadata["nbgrader"]["grade_id"] == "ex01-add_one-test"
    assert [c.id for c in out.cells] == [c.id for c in nb.cells]
    assert intro.source == synthetic_notebook().cells[0].source


def test_hidden_tests_grade_with_a_fresh_checker():
    source = synthetic_notebook().cells[4].source
    visible, hidden = source.split(_course.BEGIN_HIDDEN)
    assert visible.strip() == "check_add_one(add_one)"
    assert "_fresh = " in hidden and "add_one" in hidden and 'assert _status == "pass"' in hidden
    compile(source, "<checker cell>", "exec")


def test_chinese_stubs_and_whole_cell_solution():
    nb = synthetic_notebook()
    nb.cells[3].source = "x = 41 + 1"  # a solution cell without markers: nbgrader replaces the whole cell
    out = nbformat.reads(student.make_student_copy(nb, "zh"), as_version=4)
    assert out.cells[3].source.splitlines() == ["# 在这里写你的代码（YOUR CODE HERE）", "raise NotImplementedError()"]
    assert out.cells[2].source == _course.TEXT_STUB["zh"]


def test_badge_to_the_instructor_notebook_is_replaced_by_a_note():
    nb = synthetic_notebook()
    badge = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab/x.ipynb)"
    nb.cells[0].source = f"# 01 · Demo\n\n{badge}"
    for lang in ("en", "zh"):
        header = nbformat.reads(student.make_student_copy(nb, lang), as_version=4).cells[0].source
        assert "colab-badge.svg" not in header and header.startswith("# 01 · Demo")
        assert header.endswith(student.STUDENT_NOTE[lang])


@pytest.mark.parametrize(
    "breakage", ["no_end_marker", "markers_without_metadata", "tag_without_metadata", "markers_in_prose"]
)
def test_broken_solution_cells_are_errors(breakage):
    nb = synthetic_notebook()
    cell = nb.cells[3]
    if breakage == "markers_in_prose":  # nbgrader would take this line for a marker: must be a clear error
        nb.cells[0].source += "\nWrite your code between `### BEGIN SOLUTION` and `### END SOLUTION`."
        with pytest.raises(ValueError, match=r"cell 0 \(markdown.*not a solution cell"):
            student.make_student_copy(nb, "en")
        return
    if breakage == "no_end_marker":
        cell.source = cell.source.replace("    ### END SOLUTION", "")
    else:
        del cell.metadata["nbgrader"]
        if breakage == "tag_without_metadata":
            cell.source = "def add_one(x):\n    return x + 1"
    with pytest.raises((RuntimeError, ValueError)):
        student.make_student_copy(nb, "en")


def write_sources(src: Path) -> None:
    for lang in ("en", "zh"):
        (src / lang).mkdir(parents=True, exist_ok=True)
        nbformat.write(synthetic_notebook(), str(src / lang / "01_demo.ipynb"))
    (src / "en" / "notes.ipynb").write_text("not a course notebook: ignored")


def test_no_overwrite_without_force(tmp_path, capsys):
    src, out = tmp_path / "notebooks", tmp_path / "student"
    write_sources(src)
    copy = out / "en" / "01_demo.ipynb"

    assert student.main(["--src", str(src), "--out", str(out)]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.ipynb")) == [
        "en/01_demo.ipynb",
        "zh/01_demo.ipynb",
    ]
    fresh = copy.read_text(encoding="utf-8")

    report = student.generate(src, out, echo=lambda *a: None)
    assert len(report["unchanged"]) == 2 and not report["written"] and not report["skipped"]

    # Re-saved with other whitespace (as Jupyter may do) is still the same notebook.
    copy.write_text(json.dumps(json.loads(fresh), indent=2), encoding="utf-8")
    assert copy in student.generate(src, out, echo=lambda *a: None)["unchanged"]

    learner = fresh.replace("raise NotImplementedError()", "return x + 1")
    assert learner != fresh
    copy.write_text(learner, encoding="utf-8")
    capsys.readouterr()
    assert student.main(["--src", str(src), "--out", str(out)]) == 0  # skipping is not an error
    printed = capsys.readouterr().out
    assert "skipped" in printed and "--force" in printed and "FORCE=1" in printed
    assert copy.read_text(encoding="utf-8") == learner, "a learner's work must never be overwritten"

    report = student.generate(src, out, force=True, echo=lambda *a: None)
    assert report["written"] == [copy] and len(report["unchanged"]) == 1
    assert copy.read_text(encoding="utf-8") == fresh


def test_clear_errors(tmp_path, capsys):
    assert student.main(["--src", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "no notebooks found" in capsys.readouterr().err

    src = tmp_path / "notebooks"
    write_sources(src)
    broken = synthetic_notebook()
    broken.cells[3].source = broken.cells[3].source.replace("### END SOLUTION", "")
    nbformat.write(broken, str(src / "en" / "02_broken.ipynb"))
    assert student.main(["--src", str(src), "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "02_broken.ipynb" in captured.out and "01_demo.ipynb" in captured.out  # the good ones still written


# The real notebooks: every exercise has points, and the copies give nothing away.

REAL = student.find_notebooks(student.DEFAULT_SRC, None)
WITH_EXERCISES = [p for p in REAL if (_course.SRC / p.name.replace(".ipynb", ".exercises.nbsrc")).exists()]


def key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"  # en/01_x.ipynb


def solution_lines(source: str) -> list[str]:
    """The code lines between the solution markers, comments and short lines left out."""
    inside, lines = False, []
    for line in source.splitlines():
        if _course.BEGIN_SOLUTION in line or _course.END_SOLUTION in line:
            inside = _course.BEGIN_SOLUTION in line
            continue
        code = line.split("#")[0].strip()
        if inside and len(code) >= 12:
            lines.append(code)
    return lines


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[key(p) for p in WITH_EXERCISES])
def test_every_exercise_has_points_and_the_copy_gives_nothing_away(path):
    nb = nbformat.read(str(path), as_version=4)
    copy = nbformat.reads(student.make_student_copy(nb, path.parent.name, path.name), as_version=4)
    exercises = _course.exercises(nb.cells)
    assert exercises, "a notebook with an exercises source has autograded exercises"
    for ex in exercises:
        assert nb.cells[ex.checker].metadata["nbgrader"]["points"] > 0 and ex.solutions
    answers = [c for c in nb.cells if _course.ANSWER in _course.tags(c)]
    assert answers, "Predict/Explain answers live in manually graded answer cells"
    assert all(c.metadata["nbgrader"]["points"] > 0 for c in answers)
    # each solution and answer cell of the copy holds none of the instructor's lines of that cell
    released = {c.id: c.source for c in copy.cells}
    leaked = [
        line
        for c in nb.cells
        if _course.SOLUTION in _course.tags(c)
        for line in solution_lines(c.source)
        if line in released[c.id]
    ]
    leaked += [c.source[:60] for c in answers if released[c.id] != _course.TEXT_STUB[path.parent.name]]
    text = "\n".join(c.source for c in copy.cells)
    assert not leaked, f"the student copy gives these away: {leaked}"
    assert all(not c.get("outputs") for c in copy.cells), "every output is cleared"
    assert _course.BEGIN_HIDDEN not in text


LEVELS = {"easy": 0, "medium": 1, "harder": 2, "简单": 0, "中等": 1, "较难": 2}


@pytest.mark.parametrize("src", sorted(_course.SRC.glob("*.exercises.nbsrc")), ids=lambda p: p.name[:2])
def test_difficulty_labels_rise_within_a_notebook(src):
    text = src.read_text(encoding="utf-8")
    for pattern in (r"(?m)^### Exercise \d+ · .*\((\w+)\)\s*$", r"(?m)^### 练习 \d+ · .*（(\w+)）\s*$"):
        levels = [LEVELS[m] for m in re.findall(pattern, text)]
        assert levels and levels == sorted(levels), f"difficulty labels out of order: {re.findall(pattern, text)}"


# Integration: the real notebooks' student copies run top to bottom and every checker says "not yet".


@pytest.mark.parametrize("path", REAL, ids=[key(p) for p in REAL])
def test_student_copy_runs_the_learner_versions_code(path, tmp_path):
    """A student copy's code cells are exactly the stored learner version's (stubs and checkers alike), whose run
    nbval checks (make test-wheel) and whose checkers' stored verdicts are 🚧 (tests/tools/authoring/test_learner.py):
    so each student copy runs top to bottom with every checker saying "not implemented yet", without running it
    again."""
    copy = nbformat.reads(
        student.make_student_copy(nbformat.read(str(path), as_version=4), path.parent.name, path.name), as_version=4
    )
    learner_version = nbformat.read(str(path.parent.parent.parent / path.parent.name / path.name), as_version=4)
    code = [c.source for c in copy.cells if c.cell_type == "code"]
    assert code == [c.source for c in learner_version.cells if c.cell_type == "code"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_student_copy_really_runs_and_checkers_say_not_yet(lang, tmp_path):
    """One student copy per language executed for real (the others are the learner versions' code, above)."""
    from nbclient import NotebookClient

    path = next(p for p in REAL if p.parent.name == lang and p.name.startswith("01_"))
    nb = nbformat.reads(
        student.make_student_copy(nbformat.read(str(path), as_version=4), lang, path.name), as_version=4
    )
    os.environ.setdefault("MPLBACKEND", "Agg")
    NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    problems, checkers = [], 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for o in cell.outputs:
            if o.output_type == "error":
                problems.append(f"cell {i}: {o.ename}: {o.evalue}")
            elif o.output_type == "stream" and o.name == "stderr":
                problems.append(f"cell {i} wrote to stderr: {o.text[:200]!r}")
        if "checker" in cell.metadata.get("tags", []) and _course.checker_call(cell.source):
            checkers += 1
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            if not any(line.startswith("🚧 ") for line in text.splitlines()):
                problems.append(f"checker cell {i} did not report 'not implemented yet' (🚧): {text[:300]!r}")
    assert not problems, "\n".join(problems)
    assert checkers, "a notebook with exercises should have checker cells"


def test_only_filter_matching_nothing_says_so(tmp_path, capsys):
    assert student.main(["--out", str(tmp_path), "--only", "99"]) == 1
    assert "--only 99 matches no notebook: use notebook numbers such as 01,03" in capsys.readouterr().err
    assert student.main(["--out", str(tmp_path), "--only", "1a"]) == 1
    assert "expected comma-separated notebook numbers" in capsys.readouterr().err
