"""A third language reaches the grader with no change to the grader (docs/architecture.md, "Add a language").

``ja`` is added the way that section's step 1 adds a language: to ``tools.course.LANGS`` and the checkers'
``LANGUAGES``, and to every table of strings keyed by the languages (here the English text marked ``[ja]``, standing
in for a translation). The course's notebooks get a ``ja`` translation (here the English instructor notebook with
``ja`` cell ids and a ``[ja]`` title), and a class hands in ``ja`` copies: the grader finds the ``ja`` notebook,
recognises the copies by cell id and by title, and writes every verdict and the feedback page in ``ja``. Nothing of
tools/teaching/ is patched; the learner's kernel (another process, with the installed llm_lab) runs the notebook's
code as written.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import sys

import _course_fixture as fx
import nbformat
import pytest

from llm_lab.exercises import _messages
from tools import course
from tools.teaching.grader import cli, matching, reading, report

FAKE = "ja"
WRONG_RENORMALIZE = (
    "def mask_and_renormalize(attn_weights):\n    n = attn_weights.shape[-1]\n"
    "    return attn_weights.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(diagonal=1), 0.0)\n"
)


def ours():
    return [m for name, m in list(sys.modules.items()) if m is not None and name.split(".")[0] in ("tools", "llm_lab")]


def add_language(monkeypatch) -> None:
    """Step 1 for FAKE: the two lists (and the modules that keep them under the same name), every language table."""
    old = tuple(course.LANGS)
    assert tuple(_messages.LANGUAGES) == old and FAKE not in old
    for module in ours():
        for name in ("LANGS", "LANGUAGES"):
            if getattr(module, name, None) == old:
                monkeypatch.setattr(module, name, (*old, FAKE))
    seen: set[int] = set()

    def fill(obj, depth: int = 0) -> None:
        if id(obj) in seen or depth > 5:
            return
        seen.add(id(obj))
        if isinstance(obj, dict) and obj and set(obj) == set(old):
            english = obj["en"]
            monkeypatch.setitem(obj, FAKE, f"[{FAKE}] {english}" if isinstance(english, str) else english)
        elif isinstance(obj, dict):
            for value in list(obj.values()):
                fill(value, depth + 1)
        elif isinstance(obj, list | tuple):
            for value in obj:
                fill(value, depth + 1)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                fill(getattr(obj, f.name), depth + 1)

    for module in ours():
        for value in list(vars(module).values()):
            fill(value)
    monkeypatch.setitem(report.HTML_LANG, FAKE, FAKE)  # the translator's entry: the page's language tag


def translate(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The English notebook as the ``ja`` one would be to the grader: ``ja`` cell ids and its own title."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        cell.id = cell.id.replace("en-", f"{FAKE}-", 1)
    first = nb.cells[0]
    first.source = first.source.replace("# ", f"# [{FAKE}] ", 1)
    return nb


def hand_in(instructor: nbformat.NotebookNode, **solutions: str) -> nbformat.NotebookNode:
    """A submission: the ``ja`` notebook with the solution cells for ``solutions``' objects rewritten."""
    nb = nbformat.from_dict(instructor)
    for cell in nb.cells:
        for key, source in solutions.items():
            if "solution" in cell.metadata.get("tags", []) and f"def {key}(" in cell.source:
                cell.source = source
    return nb


@pytest.fixture(scope="module")
def class_in_ja(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        root = tmp_path_factory.mktemp("ja")
        notebooks = fx.build_course(root)  # the builder's languages, before ja exists
        add_language(mp)
        # the reader's child must see the patched tables: a fork copies them (a language added in the source, the
        # real case, is imported by the forkserver's children as well)
        mp.setattr(reading, "_CONTEXT", multiprocessing.get_context("fork"))
        ja = translate(nbformat.read(str(notebooks / "en" / fx.NAME), as_version=4))
        (notebooks / FAKE).mkdir()
        nbformat.write(ja, str(notebooks / FAKE / fx.NAME))
        subs = root / "submissions"
        subs.mkdir()
        nbformat.write(hand_in(ja), str(subs / "aki.ipynb"))
        nbformat.write(
            hand_in(ja, causal_mask="from llm_lab import causal_mask\n", mask_and_renormalize=WRONG_RENORMALIZE),
            str(subs / "ren.ipynb"),
        )
        no_ids = hand_in(ja)
        for cell in no_ids.cells:
            cell.id = f"x{len(cell.source)}-{id(cell)}"  # an editor that renumbered the cells: known by the title
        nbformat.write(no_ids, str(subs / "sho.ipynb"))
        course_map = matching.load_course(notebooks)
        untitled = hand_in(ja)
        untitled.cells[0].source = "# my homework"  # known by its cell ids alone
        results = cli.grade(
            subs, root / "out", "01", src=notebooks, sandboxed=False, cell_timeout=20, echo=lambda *a: None
        )
        yield {
            "course": course_map,
            "untitled": matching.identify(untitled, course_map),
            "out": root / "out",
            "results": {r.student: r for r in results},
            "full": sum(fx.points(notebooks).values()),
        }
    finally:
        mp.undo()


def test_the_grader_finds_the_new_languages_notebooks(class_in_ja):
    assert {lang for lang, _ in class_in_ja["course"]} == set(course.LANGS) and FAKE in course.LANGS
    assert (FAKE, "01") in class_in_ja["course"] and (FAKE, "02") not in class_in_ja["course"]
    assert class_in_ja["untitled"] == (FAKE, "01")


def test_copies_are_recognised_and_graded_in_the_new_language(class_in_ja):
    results = class_in_ja["results"]
    assert {s: (r.lang, r.notebook, r.problem) for s, r in results.items()} == {
        s: (FAKE, fx.NAME, "") for s in ("aki", "ren", "sho")
    }
    assert results["aki"].total == results["sho"].total == class_in_ja["full"]
    verdicts = {v.key: v for v in results["ren"].verdicts}
    assert results["ren"].total == 0
    assert verdicts["causal_mask"].status == "reference"
    assert verdicts["causal_mask"].message.startswith(f"[{FAKE}] the solution uses")  # the grader's own table
    assert verdicts["mask_and_renormalize"].status == "fail"
    assert verdicts["mask_and_renormalize"].message.startswith(f"[{FAKE}] ")  # the checkers' table


def test_the_feedback_page_is_in_the_new_language(class_in_ja):
    page = (class_in_ja["out"] / "feedback" / "ren.html").read_text(encoding="utf-8")
    assert f'<html lang="{FAKE}">' in page
    assert f"[{FAKE}] Feedback" in page and f"[{FAKE}] wrong result" in page and f"[{FAKE}] Exercise" in page
    assert "通过" not in page and "反馈" not in page
