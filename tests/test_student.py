"""Student copies (tools/student.py): solutions removed, the right outputs cleared, learners' work kept."""

import importlib.util
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("student", ROOT / "tools" / "student.py")
student = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(student)

SOLUTION = "def add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def synthetic_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    intro = nbformat.v4.new_markdown_cell("# Exercises\nWrite `add_one`.")
    normal = nbformat.v4.new_code_cell("plot_something()", execution_count=3, outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("stream", name="stdout", text="tensor([1., 2.])\n"),
    ])
    solution = nbformat.v4.new_code_cell(SOLUTION, execution_count=4, outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="the answer is 2\n")])
    solution.metadata["tags"] = ["solution"]
    solution.metadata["nbgrader"] = {"grade": False, "grade_id": "ex01-003", "locked": False,
                                     "schema_version": 3, "solution": True, "task": False}
    checker = nbformat.v4.new_code_cell("check_add_one(add_one)", execution_count=5, outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="✅ add_one: passed\n")])
    checker.metadata["tags"] = ["checker"]
    nb.cells = [intro, normal, solution, checker]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"en-01-{i:03d}"
    return nb


def test_solution_replaced_and_exercise_outputs_cleared():
    nb = synthetic_notebook()
    before = nbformat.writes(nb)
    out = nbformat.reads(student.make_student_copy(nb, "en"), as_version=4)
    assert nbformat.writes(nb) == before, "the instructor notebook must not be modified"
    nbformat.validate(out)
    intro, normal, solution, checker = out.cells

    assert solution.source == "def add_one(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert "return x + 1" not in json.dumps(out)
    assert solution.outputs == [] and solution.execution_count is None
    assert checker.outputs == [] and checker.execution_count is None
    assert checker.source == "check_add_one(add_one)"
    # Everything else stays: learners see the figures, nbgrader still finds its cells.
    assert normal.outputs == synthetic_notebook().cells[1].outputs and normal.execution_count == 3
    assert intro.source == synthetic_notebook().cells[0].source
    assert solution.metadata["nbgrader"]["grade_id"] == "ex01-003"
    assert solution.metadata["tags"] == ["solution"] and checker.metadata["tags"] == ["checker"]
    assert [c.id for c in out.cells] == [c.id for c in nb.cells]


def test_chinese_stub_and_whole_cell_solution():
    nb = synthetic_notebook()
    nb.cells[2].source = "x = 41 + 1"  # a solution cell without markers: nbgrader replaces the whole cell
    out = nbformat.reads(student.make_student_copy(nb, "zh"), as_version=4)
    assert out.cells[2].source.splitlines() == ["# 在这里写你的代码（YOUR CODE HERE）", "raise NotImplementedError()"]


def test_badge_to_the_instructor_notebook_is_replaced_by_a_note():
    nb = synthetic_notebook()
    badge = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab/x.ipynb)"
    nb.cells[0].source = f"# 01 · Demo\n\n{badge}"
    for lang in ("en", "zh"):
        header = nbformat.reads(student.make_student_copy(nb, lang), as_version=4).cells[0].source
        assert "colab-badge.svg" not in header and header.startswith("# 01 · Demo")
        assert header.endswith(student.STUDENT_NOTE[lang])


@pytest.mark.parametrize("breakage", ["no_end_marker", "markers_without_metadata", "tag_without_metadata",
                                      "markers_in_prose"])
def test_broken_solution_cells_are_errors(breakage):
    nb = synthetic_notebook()
    cell = nb.cells[2]
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
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.ipynb")) == ["en/01_demo.ipynb",
                                                                                  "zh/01_demo.ipynb"]
    fresh = copy.read_text(encoding="utf-8")

    report = student.generate(src, out, echo=lambda *a: None)
    assert len(report["unchanged"]) == 2 and not report["written"] and not report["skipped"]

    # Re-saved with other whitespace (as Jupyter may do) is still the same notebook.
    copy.write_text(json.dumps(json.loads(fresh), indent=2), encoding="utf-8")
    assert copy in student.generate(src, out, echo=lambda *a: None)["unchanged"]

    learner = fresh.replace("raise NotImplementedError()", "return x + 1")
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
    broken.cells[2].source = broken.cells[2].source.replace("### END SOLUTION", "")
    nbformat.write(broken, str(src / "en" / "02_broken.ipynb"))
    assert student.main(["--src", str(src), "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "02_broken.ipynb" in captured.out and "01_demo.ipynb" in captured.out  # the good ones still written


# Integration: the real notebooks' student copies run top to bottom and every checker says "not yet".

REAL = student.find_notebooks(student.DEFAULT_SRC, None)


def key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"  # en/01_x.ipynb


def has_solutions(path: Path) -> bool:
    return any(student.is_solution_cell(c) for c in nbformat.read(str(path), as_version=4).cells)


@pytest.fixture(scope="module")
def executed_student_copies(tmp_path_factory):
    """Generate every student copy once and execute, in parallel, those that have exercises."""
    from nbclient import NotebookClient

    out = tmp_path_factory.mktemp("student")
    report = student.generate(out=out, echo=lambda *a: None)
    failed = {key(p): f"generating the student copy failed: {why}" for p, why in report["errors"]}
    todo = [out / key(p) for p in REAL if has_solutions(p) and key(p) not in failed]

    def run(path: Path):
        nb = nbformat.read(str(path), as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute()
        except Exception as exc:  # a dead kernel or a timeout fails this notebook's test, not the others
            return f"executing the student copy failed: {type(exc).__name__}: {exc}"
        return nb

    os.environ.setdefault("MPLBACKEND", "Agg")
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        results = dict(zip(todo, pool.map(run, todo), strict=True))
    return failed | {key(p): nb for p, nb in results.items()}


@pytest.mark.parametrize("path", REAL, ids=[key(p) for p in REAL])
def test_student_copy_runs_and_checkers_say_not_yet(path, request):
    if not has_solutions(path):
        pytest.skip(f"{path.name} has no solution cells yet")
    nb = request.getfixturevalue("executed_student_copies")[key(path)]
    if isinstance(nb, str):
        pytest.fail(nb)
    problems, checkers = [], 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for o in cell.outputs:
            if o.output_type == "error":
                problems.append(f"cell {i}: {o.ename}: {o.evalue}")
            elif o.output_type == "stream" and o.name == "stderr":
                problems.append(f"cell {i} wrote to stderr: {o.text[:200]!r}")
        if "checker" in cell.metadata.get("tags", []):
            checkers += 1
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            if not any(line.startswith("🚧 ") for line in text.splitlines()):
                problems.append(f"checker cell {i} did not report 'not implemented yet' (🚧): {text[:300]!r}")
    assert not problems, "\n".join(problems)
    assert checkers, "a notebook with exercises should have checker cells"


def test_only_filter_matching_nothing_says_so(tmp_path, capsys):
    assert student.main(["--out", str(tmp_path), "--only", "1"]) == 1
    assert "--only 1 matches no notebook: use two-digit numbers" in capsys.readouterr().err
