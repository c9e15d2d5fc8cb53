"""What the class hands in is read safely (tools/teaching/grader/submissions.py): only regular files inside the
submission folder, never through a link, never a pipe or a device, at most MAX_FILE_BYTES; every such entry is
that student's problem row, on both paths (make grade, make grade-nbgrader's collect), and the class is graded.
The class test runs its one honest kernel unsandboxed (what is tested is the reading, before any kernel);
test_grade_hostile.py and test_nbgrader_course.py (beside this file) grade the same entries in the sandbox."""

from __future__ import annotations

import csv
import os
import threading

import _course_fixture as fx
import _hostile
import nbformat
import pytest

from tools.teaching.grader import cli, nbgrader_course, submissions


def host(tmp_path):
    notebooks = fx.build_course(tmp_path)
    return notebooks, _hostile.host_for(tmp_path, notebooks, tmp_path / "subs")


def in_time(fn, *args, seconds: float = 20.0):
    """fn(*args) in a thread; fails the test (instead of hanging it) when it has not returned in time."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args)
        except Exception as exc:  # handed to the test
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{fn.__name__} still running after {seconds} s (it waits on a pipe?)"
    return out


@pytest.mark.parametrize("name", _hostile.SPECIAL)
def test_each_special_entry_is_a_problem_row_and_is_never_opened(tmp_path, name):
    _, h = host(tmp_path)
    subs = tmp_path / "subs"
    _hostile.plant(h, subs / name, name)
    found = in_time(submissions.find, subs)["value"]
    assert {f.student for f in found} == {name}
    rows = [f for f in found if f.problem]
    if name == "deep":  # a regular file: found, and refused when it is read
        [f] = found
        with pytest.raises(ValueError, match="nested too deep|RecursionError"):
            submissions.load(f.path, subs)
        return
    assert rows and not [f for f in found if not f.problem], found
    kinds = {"pipe": "a named pipe", "key_inside": "a symbolic link"}
    assert all(kinds.get(name, "a symbolic link") in f.problem for f in rows), rows


def test_read_follows_no_link_anywhere_on_the_way(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "x.ipynb").write_text("{}")
    subs = tmp_path / "subs"
    (subs / "eve").mkdir(parents=True)
    (subs / "eve" / "inner").symlink_to(real, target_is_directory=True)  # a folder swapped for a link
    with pytest.raises(submissions.Unreadable, match="symbolic link"):
        submissions.read(subs / "eve" / "inner" / "x.ipynb", subs)
    with pytest.raises(submissions.Unreadable, match="outside"):
        submissions.read(real / "x.ipynb", subs)
    assert submissions.read(subs / "eve" / "inner" / "x.ipynb", tmp_path / "subs" / "eve" / "inner") == b"{}"


def test_a_pipe_is_never_waited_on_and_a_big_file_never_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.ipynb")
    out = in_time(submissions.read, tmp_path / "pipe.ipynb", tmp_path)
    assert isinstance(out.get("error"), submissions.Unreadable) and "named pipe" in str(out["error"])
    big = tmp_path / "big.ipynb"
    with big.open("wb") as f:  # sparse: 200 MB that cost nothing to make
        f.truncate(submissions.MAX_FILE_BYTES + 1)
    with pytest.raises(submissions.Unreadable, match=f"more than {submissions.MAX_FILE_BYTES / 1e6:.0f} MB"):
        submissions.read(big, tmp_path)


def test_saved_outputs_are_dropped_and_the_bound_applies_to_the_rest(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("print('x' * 10**6)"),
        nbformat.v4.new_markdown_cell("![a](attachment:a.png)"),
    ]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * 3_000_000)]
    nb.cells[1].attachments = {"a.png": {"image/png": "iVBOR" * 200_000}}
    path = tmp_path / "a.ipynb"
    nbformat.write(nb, str(path))
    monkeypatch.setattr(submissions, "MAX_SOURCE_BYTES", 1_000_000)  # the file is 4 MB, its sources a few bytes
    got = submissions.load(path)
    assert [c.source for c in got.cells] == [c.source for c in nb.cells]
    assert got.cells[0].outputs == [] and "attachments" not in got.cells[1]
    nb.cells[0].source = "# " + "y" * 1_000_000  # a source over the bound is still refused
    nbformat.write(nb, str(path))
    with pytest.raises(ValueError, match="without its outputs is 1 MB, more than 1 MB"):
        submissions.load(path)


def test_json_nested_100000_deep_is_that_files_problem_not_the_classs(tmp_path):
    _, h = host(tmp_path)
    _hostile.plant(h, tmp_path / "subs" / "deep", "deep")
    results = submissions.find(tmp_path / "subs")
    with pytest.raises(ValueError, match="nested too deep"):
        submissions.load(results[0].path, results[0].root)


def test_nbgrader_collect_copies_only_regular_files(tmp_path):
    _, h = host(tmp_path)
    course = tmp_path / "course"
    submitted = course / "submitted"
    (submitted / "alice" / "ps1").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), str(submitted / "alice" / "ps1" / fx.NAME))
    (submitted / "alice" / "ps1" / "timestamp.txt").write_text("2026-12-01 09:00:00 UTC")
    for name in _hostile.SPECIAL:
        if name == "key_folder":  # the student's folder, and another's assignment folder, linked
            (submitted / name).symlink_to(h.answer_key.parent.parent, target_is_directory=True)
            (submitted / "key_assignment").mkdir()
            (submitted / "key_assignment" / "ps1").symlink_to(h.answer_key.parent, target_is_directory=True)
        elif name != "key_inside":
            _hostile.plant(h, submitted / name / "ps1", name)
    (submitted / "bob" / "ps1").mkdir(parents=True)
    (submitted / "bob" / "ps1" / "timestamp.txt").symlink_to("/dev/zero")
    into = tmp_path / "into"
    into.mkdir()
    stamps, refused = in_time(nbgrader_course.collect, course, "ps1", into)["value"]
    assert stamps["alice"] == "2026-12-01 09:00:00 UTC" and stamps["bob"] == ""
    assert sorted(p.relative_to(into).as_posix() for p in into.rglob("*")) == [
        "alice",
        f"alice/{fx.NAME}",
        "bob",
        "deep",
        f"deep/{fx.NAME}",
    ]
    assert {r.student for r in refused} == {"key_link", "key_folder", "key_assignment", "shadow", "zero", "pipe"}
    assert all(r.problem and "not read" in r.problem for r in refused), [r.problem for r in refused]


def test_a_class_with_hostile_files_is_graded_and_reported(tmp_path):
    notebooks, h = host(tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(fx.filled(notebooks), str(subs / "alice.ipynb"))
    nbformat.write(fx.filled(notebooks), str(subs / f"{_hostile.TWINS[0]}.ipynb"))
    nbformat.write(fx.student_copy(notebooks), str(subs / f"{_hostile.TWINS[1]}.ipynb"))
    for name in _hostile.SPECIAL:
        _hostile.plant(h, subs / name, name)
    for name in _hostile.NAMES:
        (subs / f"{name}.txt").write_text("my answers are in the email")
    out = tmp_path / "out"
    results = in_time(
        lambda: cli.grade(subs, out, "01", cell_timeout=10, src=notebooks, echo=lambda *a: None, sandboxed=False),
        seconds=300,
    )["value"]
    by = {r.student: r for r in results}
    assert _hostile.host_files_unread(results) == {}
    full = sum(fx.points(notebooks).values())
    assert by["alice"].total == full and by[_hostile.TWINS[0]].total == full and by[_hostile.TWINS[1]].total == 0
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    students = [r["student"] for r in rows]
    assert "'=1+2" in students and "=1+2" not in students
    assert "<U+202E>gnp.exe" in students
    feedback = {p.name: p.read_text(encoding="utf-8") for p in (out / "feedback").glob("*.html")}
    assert len(feedback) == len(results)
    twins = [text for text in feedback.values() if "twin" in text.split("<title>")[1].split("</title>")[0]]
    assert sorted(f"{full} / {full}" in t for t in twins) == [False, True]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "\u202e" not in report
    rendered = _hostile.rendered_markdown(report)
    assert "<img" not in rendered and "<a " not in rendered and "&lt;img src=x onerror=alert(1)&gt;" in rendered
    assert all("\u202e" not in text and "<img src" not in text for text in feedback.values())
