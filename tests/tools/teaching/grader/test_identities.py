"""Student ids as a person reads them (tools/teaching/grader/identities.py): look-alike ids named on every row
they touch, and one row per student and notebook when a student hands in two files of it."""

from __future__ import annotations

import csv
from pathlib import Path

import _course_fixture as fx
import nbformat
import pytest

from tools.teaching.grader import cli, identities
from tools.teaching.grader.submissions import Submission

CYRILLIC_A = "\u0430"


@pytest.mark.parametrize(
    "other",
    [CYRILLIC_A + "lice", "ali\u200bce", "Alice", "al\u0456ce", "ａｌｉｃｅ", "alice\u202e"],
    ids=["cyrillic-a", "zero-width-space", "case", "ukrainian-i", "fullwidth", "bidi-override"],
)
def test_ids_that_look_alike_share_a_skeleton(other):
    assert other != "alice" and identities.skeleton(other) == identities.skeleton("alice")


@pytest.mark.parametrize("other", ["alicia", "alice2", "bob", "李华"])
def test_different_ids_do_not(other):
    assert identities.skeleton(other) != identities.skeleton("alice")


def test_look_alikes_are_named_on_each_row_spelled_so_the_difference_shows():
    rows = [Submission(s, Path(f"{s}.ipynb")) for s in ("alice", CYRILLIC_A + "lice", "bob", "李华")]
    alike = identities.mark_look_alikes(rows)
    assert list(alike.values()) == [["alice", CYRILLIC_A + "lice"]]
    assert "looks like <U+0430>lice" in rows[0].notes[0] and "looks like alice" in rows[1].notes[0]
    assert rows[2].notes == [] and rows[3].notes == []


def test_a_class_without_look_alikes_gets_no_note():
    rows = [Submission(s, Path(f"{s}.ipynb")) for s in ("alice", "alicia", "bob")]
    assert identities.mark_look_alikes(rows) == {} and all(r.notes == [] for r in rows)


def test_two_files_of_one_notebook_count_the_one_named_as_the_notebook(tmp_path):
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    nbformat.write(fx.filled(notebooks), str(subs / "alice" / fx.NAME))  # full marks, the released name
    nbformat.write(fx.student_copy(notebooks), str(subs / "alice" / "a_copy_of_it.ipynb"))  # 0, first by path
    nbformat.write(fx.filled(notebooks), str(subs / f"{CYRILLIC_A}lice.ipynb"))
    nbformat.write(fx.filled(notebooks), str(subs / "bob.ipynb"))
    out = tmp_path / "out"
    results = cli.grade(subs, out, "01", src=notebooks, echo=lambda *a: None, sandboxed=False, jobs=1)
    full = sum(fx.points(notebooks).values())
    by_file = {(r.student, r.path.name): r for r in results}
    counted, copy = by_file[("alice", fx.NAME)], by_file[("alice", "a_copy_of_it.ipynb")]
    assert counted.total == full and not counted.not_counted and copy.not_counted == fx.NAME
    assert any("also handed in, not counted: a_copy_of_it.ipynb (0 points)" in n for n in counted.notes)
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert sorted((r["student"], int(r["total"])) for r in rows) == sorted(
        [("alice", full), (f"{CYRILLIC_A}lice", full), ("bob", full)]
    )
    assert len(list((out / "feedback").glob("*.html"))) == 4  # each file its feedback, the copy marked
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "3 submission(s)" in report and "U+0430" in report and "not counted" in report
    assert not [n for n in by_file[("bob", "bob.ipynb")].notes if "looks like" in n]


def test_a_student_with_many_files_costs_the_class_three_runs_per_notebook(tmp_path):
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    (subs / "mallory").mkdir(parents=True)
    for i in range(6):
        nbformat.write(fx.filled(notebooks), str(subs / "mallory" / f"copy{i}.ipynb"))
    nbformat.write(fx.filled(notebooks), str(subs / "bob.ipynb"))
    results = cli.grade(subs, tmp_path / "out", "01", src=notebooks, echo=lambda *a: None, sandboxed=False, jobs=2)
    mallory = [r for r in results if r.student == "mallory"]
    assert [bool(r.verdicts) for r in mallory] == [True] * cli.FILES_PER_NOTEBOOK + [False] * 3
    assert all("more than 3 notebook files" in r.problem for r in mallory[3:])
    assert next(r for r in results if r.student == "bob").total == sum(fx.points(notebooks).values())
