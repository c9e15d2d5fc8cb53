"""What grading writes cannot be forged by a student id, a file name or a message (tools/teaching/grader/report.py):
feedback file names unique per student, no CSV cell a spreadsheet reads as a formula, no Markdown or HTML
from the class in report.md or the feedback pages, bidirectional controls shown, not obeyed."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tools.teaching.grader import report, submissions


def result(student: str, file: str = "", problem: str = "", notes=()) -> submissions.Submission:
    return submissions.Submission(student, Path(file or f"{student}.ipynb"), problem=problem, notes=list(notes))


def test_feedback_names_are_unique_per_student_even_on_a_case_insensitive_disk():
    rs = [
        result("twin~a"),
        result("twin_a"),
        result("Twin_A"),
        result("a--b"),
        result("a", "a/b.ipynb"),
        result("a", "a/c.ipynb"),
        result("x" * 300),
        result("x" * 300 + "y"),
        result(".."),
        result("é"),
    ]
    names = report.feedback_names(rs)
    assert len({n.casefold() for n in names.values()}) == len(rs)
    assert names[id(rs[1])] == "twin_a.html" and names[id(rs[3])] == "a--b.html"  # honest ids as they are
    assert all(len(n.encode()) < 200 and "/" not in n and not n.startswith(".") for n in names.values())


@pytest.mark.parametrize("cell", ["=1+2", "+1", "-1+1", "@SUM(A1)", "\t=1", "\r=1", "＝1+2"])
def test_no_csv_cell_is_a_formula(cell):
    out = report.csv_cell(cell)
    assert out.startswith("'") or out.startswith("<U+00"), out  # quoted, or the control shown first


def test_honest_csv_cells_are_unchanged():
    assert [report.csv_cell(v) for v in ("alice", "王小明", "01_demo.ipynb", 3)] == [
        "alice",
        "王小明",
        "01_demo.ipynb",
        3,
    ]


def test_bidi_and_control_characters_are_shown():
    assert report.visible("a\u202eb\u2066c\x1b[2Kd\n") == "a<U+202E>b<U+2066>c<U+001B>[2Kd<U+000A>"
    assert report.visible("line\nnext", lines=True) == "line\nnext"


def render(text: str) -> str:
    """Markdown as a viewer shows it, raw HTML let through (GitHub and VS Code pass many tags)."""
    mistune = pytest.importorskip("mistune", reason="mistune comes with nbconvert (make instructor-setup)")
    return mistune.create_markdown(escape=False, plugins=["url", "table", "strikethrough"])(text)


def test_markdown_from_the_class_stays_text():
    hostile = (
        "<img src=x onerror=alert(1)> [pay](https://evil.example) ![t](http://t.example/p.png) "
        "www.evil.example **A+** `x` | ~~y~~ \u202egnp.exe\n\n# heading"
    )
    for text in (report.md_text(hostile), report.md_code(hostile), report.md_code("``a` b")):
        html = render(f"- **x** ({text})")
        assert "<img" not in html and "<a " not in html and "<strong>A+" not in html and "<h1" not in html, html
        assert "<del>" not in html and "\u202e" not in html
    assert "onerror=alert(1)" in render(report.md_text(hostile))  # shown, as text


def test_the_written_reports_escape_everything(tmp_path):
    forged = "<script>alert(1)</script> [x](javascript:alert(1)) \u202e"
    rs = [
        result('=HYPERLINK("http://evil")', problem="not a notebook: " + forged),
        result("<b>bob</b>", notes=[forged]),
    ]
    report.write_all(rs, {}, (None, None), tmp_path)
    cells = [row[0] for row in csv.reader((tmp_path / "grades.csv").open(encoding="utf-8"))]
    assert cells[1].startswith("'=")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    html = render(md)
    assert "<script>" not in html and "<b>" not in html and "<a " not in html and "\u202e" not in md
    assert "&lt;b&gt;bob&lt;/b&gt;" in html
    for page in (tmp_path / "feedback").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<script>" not in text and "<b>bob" not in text and "\u202e" not in text and "&lt;U+202E&gt;" in text


def test_a_lone_surrogate_from_a_learner_does_not_stop_the_report(tmp_path):
    """A cell holding ``"\\ud800"`` (valid JSON) reaches the notes and messages: every file is still written."""
    rs = [result("m5", notes=["your cell printed \ud800"]), result("m6\udcff", problem="wrong notebook \ud800")]
    report.write_all(rs, {}, (None, None), tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "U+D800" in md and "\ud800" not in md, md
    assert len(list((tmp_path / "feedback").glob("*.html"))) == 2
    rows = list(csv.reader((tmp_path / "grades.csv").open(encoding="utf-8")))
    assert [row[0] for row in rows[1:]] == ["m5", "m6<U+DCFF>"]
    assert report.visible("a\ud800b") == "a<U+D800>b"
