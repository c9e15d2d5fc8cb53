"""nbgrader, unchanged, on our notebooks, graded the trusted way: generate_assignment releases exactly what
`make student` writes; tools/teaching/grader/nbgrader_course.py (make grade-nbgrader) grades the submitted/ folder in
the sandbox
and writes the scores into nbgrader's gradebook and autograded/; generate_feedback and export then work as after
autograde. The class (a temporary course, the fixture's 01_demo: two autograded exercises and one written
answer) holds honest, careless and hostile submissions; the hostile ones score 0 for their wrong answers."""

from __future__ import annotations

import csv
import json
import os

import _course_fixture as fx
import _hostile
import nbformat
import pytest
from _nbgrader_fixture import ASSIGNMENT, VENV_BIN, grade_course, nbgrader, release

pytest.importorskip("nbgrader", reason="nbgrader is an instructor tool: make instructor-setup installs it")
from nbgrader.api import Gradebook, MissingEntry  # noqa: E402

pytestmark = pytest.mark.usefixtures("sandbox_required")  # it grades in the sandbox: skipped without it

WRONG_MASK = "def causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).triu()\n"
CHEAT = (
    "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n\n\n"
    "def check_renormalize(fn):\n    print('✅ mask_and_renormalize: correct')\n"
)
PATCH = (
    "import llm_lab.exercises as ex\n\n"
    "ex.grade = ex.evaluate = lambda name, obj, **kw: ex.CheckResult(name, 'pass', 'passed', 'ok')\n\n\n"
    "def mask_and_renormalize(attn_weights):\n    return attn_weights\n"
)
BOTH = ("causal_mask", "mask_and_renormalize")
HOSTILE = (
    "input_transformer",
    "json_patch",
    "package_write",
    "answer_key",
    "kill_parent",
    "settrace",
    "course_import_setprofile",
    "added_cell_import",
    "thread_reference",
    "who_hides_import",
    "replay_table",
)
SUBMISSIONS = {  # student -> (solution overrides, the exercises that score)
    "alice": ({}, BOTH),
    "bob": ({"causal_mask": WRONG_MASK}, ("mask_and_renormalize",)),
    "mallory": ({"mask_and_renormalize": CHEAT}, ("causal_mask",)),
    "fay": ({"causal_mask": "from llm_lab import causal_mask\n"}, ("mask_and_renormalize",)),
    "erin": ({"mask_and_renormalize": PATCH}, ("causal_mask",)),
    _hostile.TWINS[0]: ({}, BOTH),  # one feedback file for both, before
    _hostile.TWINS[1]: (
        {
            "causal_mask": "def causal_mask(num_tokens):\n    raise NotImplementedError()\n",
            "mask_and_renormalize": "def mask_and_renormalize(w):\n    raise NotImplementedError()\n",
        },
        (),
    ),
}
FILES = ("key_link", "key_folder", "key_assignment", "shadow", "zero", "pipe", "deep")  # each a 0 or no row


def cells(nb):
    return [(c.cell_type, c.source, dict(c.metadata), c.get("outputs")) for c in nb.cells]


def hand_in(root, course, notebooks):
    """The class's submissions in submitted/: honest, careless and hostile notebooks, and the entries that are no
    notebook (links to the answer key, a pipe, ...). Returns the hostile host, which knows what must stay unchanged."""
    host = _hostile.host_for(root, notebooks, course / "submitted")
    attacks = _hostile.tricks(host)
    for student in HOSTILE:  # a wrong mask, the renormalize stub, one trick
        SUBMISSIONS[student] = (
            {
                "causal_mask": attacks[student],
                "mask_and_renormalize": "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n",
            },
            (),
        )
    for student, (overrides, _) in SUBMISSIONS.items():
        target = course / "submitted" / student / ASSIGNMENT / fx.NAME
        target.parent.mkdir(parents=True)
        nb = (
            _hostile.notebook(fx, notebooks, student, attacks[student])
            if student in HOSTILE
            else fx.filled(notebooks, **overrides)
        )
        nbformat.write(nb, str(target))
        (target.parent / "timestamp.txt").write_text("2026-12-01 09:00:00.000000 UTC")
    (course / "submitted" / _hostile.TWINS[1] / ASSIGNMENT / "timestamp.txt").write_text("not a date \u202e")
    source = course / "source" / ASSIGNMENT
    (course / "submitted" / "key_link" / ASSIGNMENT).mkdir(parents=True)
    (course / "submitted" / "key_link" / ASSIGNMENT / fx.NAME).symlink_to(source / fx.NAME)  # the course's source
    (course / "submitted" / "key_folder").symlink_to(course / "source", target_is_directory=True)
    (course / "submitted" / "key_assignment").mkdir()
    (course / "submitted" / "key_assignment" / ASSIGNMENT).symlink_to(source, target_is_directory=True)
    for name in ("shadow", "zero", "pipe", "deep"):
        _hostile.plant(host, course / "submitted" / name / ASSIGNMENT, name)
    return host


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader")
    course, notebooks = release(root)
    host = hand_in(root, course, notebooks)
    before = host.digest()
    proc = grade_course(course, notebooks)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    after = host.digest()
    assert [f for f, sha in before.items() if after.get(f) != sha] == []
    assert [p for p in host.planted() if p.exists()] == []
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = VENV_BIN + os.pathsep + path  # the Gradebook API below calls alembic too
    yield {"course": course, "notebooks": notebooks}
    os.environ["PATH"] = path


def test_make_student_writes_exactly_the_release(course):
    release = nbformat.read(str(course["course"] / "release" / ASSIGNMENT / fx.NAME), as_version=4)
    ours = fx.student_copy(course["notebooks"])
    assert cells(ours) == cells(release)
    assert ours.metadata == release.metadata


@pytest.mark.parametrize("student", [*SUBMISSIONS, *HOSTILE])
def test_gradebook_scores(course, student):
    points = fx.points(course["notebooks"])
    scoring = SUBMISSIONS[student][1]
    with Gradebook(f"sqlite:///{course['course'] / 'gradebook.db'}", "llm-lab-test") as gb:
        sub = gb.find_submission(ASSIGNMENT, student)
        assert sub.max_code_score == sum(points.values()) and sub.max_written_score == 1
        assert sub.code_score == sum(points[k] for k in scoring)
        for key in BOTH:
            grade = gb.find_grade(f"ex01-{key}-test", "01_demo", ASSIGNMENT, student)
            assert grade.score == (points[key] if key in scoring else 0), f"{student} {key}"


@pytest.mark.parametrize("student", FILES)
def test_links_pipes_and_devices_score_nothing_and_reveal_nothing(course, student):
    root = course["course"]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "llm-lab-test") as gb:
        try:
            assert gb.find_submission(ASSIGNMENT, student).code_score == 0
        except MissingEntry:
            pass  # no notebook of the assignment read: no submission
    copy = root / "autograded" / student / ASSIGNMENT / fx.NAME
    assert not copy.exists() or "BEGIN SOLUTION" not in copy.read_text(encoding="utf-8")
    assert "triu(diagonal=1)" not in (copy.read_text(encoding="utf-8") if copy.exists() else "")
    rows = {
        r["student"]: r
        for r in csv.DictReader((root / "llm-lab-grades" / ASSIGNMENT / "grades.csv").open(encoding="utf-8"))
    }
    assert rows[student]["total"] == "0"


def test_twins_get_a_feedback_file_each(course):
    pages = [
        p.read_text(encoding="utf-8")
        for p in (course["course"] / "llm-lab-grades" / ASSIGNMENT / "feedback").glob("twin*.html")
    ]
    assert len(pages) == 2
    full = sum(fx.points(course["notebooks"]).values())
    assert sorted(f"{full} / {full}" in p for p in pages) == [False, True]


def test_tampering_gets_a_clear_note_in_feedback_and_export(course):
    root = course["course"]
    nbgrader(root, "generate_feedback", ASSIGNMENT)
    mallory = (root / "feedback" / "mallory" / ASSIGNMENT / "01_demo.html").read_text(encoding="utf-8")
    assert "changes the checkers" in mallory and "check_renormalize" in mallory  # the part left out, named
    erin = (root / "feedback" / "erin" / ASSIGNMENT / "01_demo.html").read_text(encoding="utf-8")
    assert "changes the checkers" in erin and "ex.grade" in erin
    fay = (root / "feedback" / "fay" / ASSIGNMENT / "01_demo.html").read_text(encoding="utf-8")
    assert "llm_lab.causal_mask" in fay and "no credit" in fay
    transformer = (root / "feedback" / "input_transformer" / ASSIGNMENT / "01_demo.html").read_text(encoding="utf-8")
    assert "input_transformers" in transformer
    nbgrader(root, "export")
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open(encoding="utf-8"))}
    points = fx.points(course["notebooks"])
    want = {s: float(sum(points[k] for k in scoring)) for s, (_, scoring) in SUBMISSIONS.items()}
    assert {s: float(rows[s]["raw_score"]) for s in SUBMISSIONS} == want
    json.dumps(rows)  # plain data, ready for an LMS import


@pytest.mark.parametrize(
    "message",
    [
        "your solution cell `x = 1 ` <img src=x onerror=alert(1)> ` y` does not compile",  # a backtick closes the span
        "your solution cell failed (ValueError: <script>alert(1)</script>)",
        "see ![x](http://example.com/a.png) and [here](javascript:alert(1))",
    ],
)
def test_a_verdict_goes_into_nbgrader_feedback_as_literal_text(message):
    """The fifth red team's fall: nbgrader renders a gradebook comment as Markdown with raw HTML passing, and a
    verdict quotes the learner's cells and exceptions; through nbgrader's own filter, no tag, image or link of
    theirs survives (the unescaped message, the control, makes one)."""
    from nbconvert.filters import markdown2html

    from tools.teaching.grader import nbgrader_course

    assert any(tag in markdown2html(message) for tag in ("<img", "<script", "<a "))
    rendered = markdown2html(nbgrader_course.auto_comment(message))
    assert not any(tag in rendered for tag in ("<img", "<script", "<a ")), rendered
