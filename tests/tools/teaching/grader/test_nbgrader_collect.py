"""make grade-nbgrader (tools/teaching/grader/nbgrader_course.py) on what a class's submitted/ folder can hold:
sparse files whose size as read is far above the blocks they hold (collected within per-student and per-class
bounds, each file past a bound that student's row), and a notebook with two cells of one nbgrader grade_id (the
review copy in autograded/ shows the cells the grader ran, never another pick from the learner's metadata)."""

from __future__ import annotations

import csv
import os

import _course_fixture as fx
import nbformat
import pytest
from _nbgrader_fixture import ASSIGNMENT, grade_course, release

from tools.teaching.grader import nbgrader_course, submissions

SPARSE_MB = 49
EVIL_ID = "s_evil\n=cmd|' -C calc'!A0\u202e"  # a line break, a spreadsheet formula, a right-to-left override


def sparse(path, megabytes: int) -> None:
    """A notebook-named file of ``megabytes`` MB as read, one block of it on disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(b'{"cells": []}')
        f.truncate(megabytes * 1_000_000)


def written(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_sparse_files_are_collected_within_the_students_bound(tmp_path):
    course, into = tmp_path / "course", tmp_path / "into"
    into.mkdir()
    honest = course / "submitted" / "alice" / ASSIGNMENT / "01_demo.ipynb"
    honest.parent.mkdir(parents=True)
    honest.write_text('{"cells": []}', encoding="utf-8")
    for i in range(15):  # 735 MB as read, a few kB on disk
        sparse(course / "submitted" / "sam" / ASSIGNMENT / f"{i:02d}_copy.ipynb", SPARSE_MB)
    assert os.stat(course / "submitted" / "sam" / ASSIGNMENT / "00_copy.ipynb").st_blocks * 512 < 1_000_000
    stamps, refused = nbgrader_course.collect(course, ASSIGNMENT, into)
    assert set(stamps) == {"alice", "sam"}
    assert (into / "alice" / "01_demo.ipynb").read_text(encoding="utf-8") == '{"cells": []}'
    assert written(into / "sam") <= nbgrader_course.MAX_STUDENT_BYTES
    copied = sorted(p.name for p in (into / "sam").iterdir())
    assert copied == [f"{i:02d}_copy.ipynb" for i in range(nbgrader_course.MAX_STUDENT_BYTES // (SPARSE_MB * 10**6))]
    rows = [r for r in refused if r.student == "sam"]
    assert len(rows) == 15 - len(copied) and all("student's notebooks" in r.problem for r in rows), rows[0].problem
    assert f"{nbgrader_course.MAX_STUDENT_BYTES / 1e6:.0f} MB" in rows[0].problem


def test_the_class_is_collected_within_its_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(nbgrader_course, "MAX_CLASS_BYTES", 100_000_000)
    course, into = tmp_path / "course", tmp_path / "into"
    into.mkdir()
    for student in ("ann", "ben", "cat", "dee"):
        sparse(course / "submitted" / student / ASSIGNMENT / "01_demo.ipynb", 40)
    stamps, refused = nbgrader_course.collect(course, ASSIGNMENT, into)
    assert set(stamps) == {"ann", "ben", "cat", "dee"}
    assert sorted(p.name for p in into.iterdir()) == ["ann", "ben"]
    assert written(into) <= 100_000_000
    assert [r.student for r in refused] == ["cat", "dee"]
    assert all("class's notebooks are more than 100 MB" in r.problem for r in refused), refused[0].problem


def test_a_file_that_grows_while_copied_writes_no_more_than_the_bound(tmp_path):
    src = tmp_path / "root" / "a.ipynb"
    sparse(src, 3)
    with pytest.raises(submissions.TooLarge):
        submissions.copy(src, tmp_path / "root", tmp_path / "out.ipynb", limit=2_000_000)
    assert not (tmp_path / "out.ipynb").exists()
    assert submissions.copy(src, tmp_path / "root", tmp_path / "out.ipynb", limit=3_000_000) == 3_000_000


# ---- the review copy shows what was graded ----------------------------------------------------------------------

ANSWER = (
    "def causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)\n"
)
DECOY = "# my answer is in the cell above\n"
DECOY_FIRST = "def causal_mask(num_tokens):\n    raise NotImplementedError()  # decoy\n"


def twice(notebooks, first: str, second: str) -> nbformat.NotebookNode:
    """A filled copy with its causal_mask cell twice, both of its nbgrader grade_id: ``first``, then ``second``."""
    nb = fx.filled(notebooks)
    cell = next(c for c in fx.solution_cells(nb) if "def causal_mask(" in c.source)
    cell.source = first
    other = nbformat.from_dict(dict(cell))
    other.id, other.source = cell.id + "-b", second
    nb.cells.insert(nb.cells.index(cell) + 1, other)
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory, sandbox_required):
    pytest.importorskip("nbgrader", reason="nbgrader is an instructor tool: make instructor-setup installs it")
    root = tmp_path_factory.mktemp("review")
    course, notebooks = release(root)
    for student, nb in (
        ("dora", twice(notebooks, ANSWER, DECOY)),
        ("vic", twice(notebooks, DECOY_FIRST, ANSWER)),
    ):
        target = course / "submitted" / student / ASSIGNMENT / fx.NAME
        target.parent.mkdir(parents=True)
        nbformat.write(nb, str(target))
    sparse(course / "submitted" / "sam" / ASSIGNMENT / fx.NAME, 300)  # the released notebook's name, 300 MB read
    for i in range(5):  # notebooks the assignment did not release: never collected
        sparse(course / "submitted" / "sam" / ASSIGNMENT / f"{i:02d}_{fx.NAME}", SPARSE_MB)
    bad = course / "submitted" / EVIL_ID / ASSIGNMENT / fx.NAME  # a folder name no gradebook should hold
    bad.parent.mkdir(parents=True)
    nbformat.write(twice(notebooks, ANSWER, DECOY), str(bad))
    proc = grade_course(course, notebooks)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return course


def code_between(nb, start: str, stop: str) -> list[str]:
    """The code cells of the review copy from the cell of grade_id ``start`` up to that of ``stop``."""
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    return [c.source for c in nb.cells[ids.index(start) : ids.index(stop)] if c.cell_type == "code"]


@pytest.mark.parametrize("student,first,second", [("dora", ANSWER, DECOY), ("vic", DECOY_FIRST, ANSWER)])
def test_the_review_copy_shows_the_cells_that_were_graded(course, student, first, second):
    copy = nbformat.read(str(course / "autograded" / student / ASSIGNMENT / fx.NAME), as_version=4)
    # the grader ran the first cell as the solution and the second as a cell the learner added after it
    assert code_between(copy, "ex01-causal_mask", "ex01-causal_mask-test") == [first, second]
    rows = {
        r["student"]: r
        for r in csv.DictReader((course / "llm-lab-grades" / ASSIGNMENT / "grades.csv").open(encoding="utf-8"))
    }
    assert rows[student]["causal_mask"] == "1", rows[student]


def test_a_sparse_copy_past_the_file_bound_is_its_row_not_the_classs_run(course):
    report = (course / "llm-lab-grades" / ASSIGNMENT / "report.md").read_text(encoding="utf-8")
    lines = [ln for ln in report.splitlines() if "**sam**" in ln]
    assert any("more than 2" in ln and "MB" in ln for ln in lines), lines  # a copy past a bound is its row


def test_a_folder_name_that_is_no_student_id_is_a_row_never_in_the_gradebook(course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "llm-lab-test") as gb:
        students = {s.id for s in gb.students}
    assert {"dora", "vic"} <= students and EVIL_ID not in students, students
    report = (course / "llm-lab-grades" / ASSIGNMENT / "report.md").read_text(encoding="utf-8")
    assert report.count("not a student id the gradebook can hold") == 1
    assert not (course / "autograded" / EVIL_ID).exists()


def test_only_the_released_notebooks_are_collected(tmp_path):
    course, into = tmp_path / "course", tmp_path / "into"
    into.mkdir()
    folder = course / "submitted" / "zed" / ASSIGNMENT
    folder.mkdir(parents=True)
    for name in ("01_demo.ipynb", *(f"z{i:04d}.ipynb" for i in range(3000))):
        (folder / name).write_text('{"cells": []}', encoding="utf-8")
    stamps, refused = nbgrader_course.collect(course, ASSIGNMENT, into, {"01_demo.ipynb"})
    assert set(stamps) == {"zed"} and len(refused) == 1  # one row says what was left, not 3,000
    assert "'z0000.ipynb', 'z0001.ipynb', 'z0002.ipynb' and 2997 more" in refused[0].problem, refused[0].problem
    assert [p.name for p in (into / "zed").iterdir()] == ["01_demo.ipynb"]
    (tmp_path / "all").mkdir()
    nbgrader_course.collect(course, ASSIGNMENT, tmp_path / "all")  # the control: without the release's names
    assert len(list((tmp_path / "all" / "zed").iterdir())) == 3001


def test_a_renamed_download_is_named_in_its_row(tmp_path):
    course, into = tmp_path / "course", tmp_path / "into"
    into.mkdir()
    folder = course / "submitted" / "ren" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / "01_demo (1).ipynb").write_text('{"cells": []}', encoding="utf-8")
    stamps, refused = nbgrader_course.collect(course, ASSIGNMENT, into, {"01_demo.ipynb"})
    assert [r.student for r in refused] == ["ren"]
    assert "'01_demo (1).ipynb'" in refused[0].problem and "01_demo.ipynb" in refused[0].problem


def test_an_assignment_missing_from_the_gradebook_is_a_usage_error_before_grading(tmp_path, monkeypatch):
    pytest.importorskip("nbgrader", reason="nbgrader is an instructor tool: make instructor-setup installs it")
    from _nbgrader_fixture import VENV_BIN

    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ.get("PATH", ""))  # nbgrader's migrations
    course, _ = release(tmp_path)
    (course / "gradebook.db").unlink()  # generate_assignment's record gone: a release copied by hand
    with pytest.raises(nbgrader_course.cli.UsageError, match="no assignment"):
        nbgrader_course.run(course, ASSIGNMENT, sandboxed=False)
