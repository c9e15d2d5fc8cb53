"""The assignment is named by the instructor (``--notebook``, ``make grade NB=``) or by nbgrader's release, never
inferred from what students hand in: crafted submissions of another notebook are their own "wrong notebook" rows,
and an nbgrader assignment of two notebooks grades both."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import _course_fixture as fx
import nbformat
import pytest

from tools.teaching.grader import cli, matching


def test_crafted_majority_does_not_change_the_assignment(tmp_path):
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(fx.filled(notebooks), str(subs / "alice.ipynb"))  # the honest student, 01 as assigned
    for n in range(3):  # three crafted files of 02: the most common submission
        nbformat.write(fx.filled(notebooks, name="02_other.ipynb"), str(subs / f"crafted{n}.ipynb"))
    results = cli.grade(subs, tmp_path / "out", "01", src=notebooks, echo=lambda *a: None, sandboxed=False)
    by = {r.student: r for r in results}
    assert by["alice"].problem == "" and by["alice"].total == sum(fx.points(notebooks).values())
    for n in range(3):
        assert by[f"crafted{n}"].problem.startswith("wrong notebook: this is 02_other.ipynb"), by[f"crafted{n}"]


def test_the_notebook_must_be_named_with_what_is_allowed(tmp_path):
    notebooks = fx.build_course(tmp_path)
    course = matching.load_course(notebooks)
    with pytest.raises(cli.UsageError, match=r"name the assigned notebook: --notebook NN .*one of 01, 02"):
        cli.assignment(course, None)
    with pytest.raises(cli.UsageError, match=r"--notebook 07: not an autograded notebook of this course; one of 01"):
        cli.assignment(course, "07")
    with pytest.raises(cli.UsageError, match="--lang xx"):
        cli.assignment(course, "1", "xx")
    assert cli.assignment(course, "2,01") == (None, ("02", "01"))
    (tmp_path / "subs").mkdir()
    nbformat.write(fx.filled(notebooks), str(tmp_path / "subs" / "alice.ipynb"))
    proc = subprocess.run(
        [sys.executable, "-m", "tools.teaching.grader", str(tmp_path / "subs"), "--no-sandbox"],
        capture_output=True,
        text=True,
        cwd=fx.ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "usage error: name the assigned notebook" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_make_grade_without_nb_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        ["make", "--no-print-directory", "-s", "grade", f"SUBMISSIONS={tmp_path}"],
        capture_output=True,
        text=True,
        cwd=fx.ROOT,
        timeout=300,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert proc.returncode != 0 and "name the assigned notebook: --notebook NN (make grade NB=NN)" in proc.stderr, (
        proc.stdout[-2000:] + proc.stderr[-2000:]
    )


def test_two_notebooks_in_one_class_each_graded_with_its_own_columns(tmp_path):
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    nbformat.write(fx.filled(notebooks), str(subs / "alice" / "01_demo.ipynb"))
    nbformat.write(fx.filled(notebooks, name="02_other.ipynb"), str(subs / "alice" / "02_other.ipynb"))
    results = cli.grade(subs, tmp_path / "out", "01,02", src=notebooks, echo=lambda *a: None, sandboxed=False)
    assert [(r.notebook, r.problem) for r in results] == [("01_demo.ipynb", ""), ("02_other.ipynb", "")]
    points = fx.points(notebooks)
    assert results[0].total == sum(points.values()) and results[1].total > 0
    rows = list(csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8")))
    assert {"01:causal_mask", "02:causal_mask"} <= set(rows[0])
    assert rows[1]["01:causal_mask"] == "" and int(rows[1]["02:causal_mask"]) == results[1].total


def test_nbgrader_assignment_of_two_notebooks_grades_both(tmp_path):
    """make grade-nbgrader: an assignment released with 01_demo and 02_other; honest students hand in both and
    score on both."""
    pytest.importorskip("nbgrader", reason=fx.NO_NBGRADER)
    import _nbgrader_course as nbc

    from tools.teaching.grader import nbgrader_course

    names = (fx.NAME, "02_other.ipynb")
    course, notebooks = nbc.release(tmp_path, names)
    assert nbgrader_course.released(course, "ps1") == ["01", "02"]
    for student in ("alice", "bob"):
        for name in names:
            target = course / "submitted" / student / "ps1" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(fx.filled(notebooks, name=name), str(target))
    results = nbc.run(course, sandboxed=False, src=notebooks)
    assert sorted((r.student, r.path.name, r.problem) for r in results) == [
        (s, n, "") for s in ("alice", "bob") for n in names
    ]
    for student in ("alice", "bob"):
        scores = nbc.scores(course, student)
        assert scores[fx.NAME.removesuffix(".ipynb")] == sum(fx.points(notebooks).values()), scores
        assert scores["02_other"] > 0, scores


def test_each_file_of_a_two_notebook_assignment_runs_with_its_own_notebooks_seal(tmp_path, monkeypatch):
    """The sandbox's llm_lab is sealed per file: 01's file without anything 01 or a later notebook answers, 02's
    with what 01 built (never the union of both seals, which would take 01's answers from 02's course cells)."""
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    nbformat.write(fx.filled(notebooks), str(subs / "alice" / "01_demo.ipynb"))
    nbformat.write(fx.filled(notebooks, name="02_other.ipynb"), str(subs / "alice" / "02_other.ipynb"))
    seals = {}
    monkeypatch.setattr(
        cli, "_run", lambda sub, nb, plan, settings, src=None, reread=None: seals.update({sub.path.name: settings})
    )
    cli.grade(subs, tmp_path / "out", "01,02", src=notebooks, echo=lambda *a: None, sandboxed=False, jobs=1)
    assert {name: s.notebooks for name, s in seals.items()} == {"01_demo.ipynb": ("01",), "02_other.ipynb": ("02",)}
