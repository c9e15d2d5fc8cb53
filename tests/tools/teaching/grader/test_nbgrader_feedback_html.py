"""A written answer reaches nbgrader's feedback page and formgrader as text: no HTML, image or link of the
learner's runs in the instructor's or the student's browser."""

from __future__ import annotations

import nbformat
import pytest

from tools.teaching.grader import nbgrader_course

nbconvert = pytest.importorskip("nbconvert")

HOSTILE = (
    "My answer <img src=x onerror=\"alert('xss')\"> and <script>alert(2)</script>\n"
    "<iframe src=javascript:alert(3)></iframe> [click](javascript:alert(4)) ![x](x onerror=alert(5))\n"
    "```\n</pre><script>alert(6)</script>"
)


def release(tmp_path):
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_markdown_cell("YOUR ANSWER HERE")
    answer.metadata["nbgrader"] = {"grade_id": "explain", "solution": True, "grade": True, "points": 1}
    nb.cells = [nbformat.v4.new_markdown_cell("# Exercise"), answer]
    path = tmp_path / "01_demo.ipynb"
    nbformat.write(nb, str(path))
    return path


def html(nb) -> str:
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    return body.lower()


LIVE = ("<img", "<script>alert", "<iframe", 'href="javascript:')


def test_a_written_answer_is_shown_as_typed_never_as_live_html(tmp_path):
    nb = nbgrader_course.autograded_copy(release(tmp_path), {"explain": HOSTILE}, {})
    page = html(nb)
    assert not [s for s in LIVE if s in page], page[-2000:]
    assert "my answer" in page and "onerror=" in page  # the text is there, as text


def test_the_same_answer_as_markdown_would_run(tmp_path):
    # the control: the answer put back as Markdown, what the copy did before, is live HTML on the page
    nb = nbgrader_course.autograded_copy(release(tmp_path), {"explain": HOSTILE}, {})
    nb.cells[1].source = HOSTILE
    page = html(nb)
    assert [s for s in LIVE if s in page]


def test_every_line_stays_inside_the_block():
    text = nbgrader_course.as_text("a\n\n```\n    b\nc")
    assert all(line.startswith("    ") for line in text.splitlines())
    assert nbgrader_course.as_text("") == "    "
