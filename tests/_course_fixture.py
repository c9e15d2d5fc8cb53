"""A two-notebook course small enough to grade quickly, built by the real builder from .nbsrc sources.

``01_demo`` has one written answer and two autograded exercises on the real checkers (``causal_mask``,
``mask_and_renormalize``), and, as notebook 01 does, a course cell that imports llm_lab's versions of both before
the exercises; ``02_other`` has one (``causal_mask``), for "the wrong notebook".
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tools.authoring import nbtool
from tools.teaching import student

ROOT = Path(__file__).resolve().parent.parent

DEMO = """%% title
01 · Demo
%% title zh
01 · 演示
%% md
## Exercises
%% md zh
## 练习
%% code
import torch

from llm_lab import causal_mask, mask_and_renormalize
from llm_lab.exercises import check_causal_mask, check_renormalize, set_language

set_language({{LANG}})
%% md
### Exercise 1 · Explain (easy)

Why may a token attend to itself?
%% md zh
### 练习 1 · 解释（简单）

为什么词元可以关注它自己？
%% md tags=answer
Because its own value is not in the future.
%% md zh
因为它自己的值不属于未来。
%% code tags=solution
def causal_mask(num_tokens):
    ### BEGIN SOLUTION
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)
    ### END SOLUTION
%% code tags=checker
check_causal_mask(causal_mask)
%% code tags=solution
def mask_and_renormalize(attn_weights):
    ### BEGIN SOLUTION
    q_len, k_len = attn_weights.shape[-2:]
    masked = attn_weights.masked_fill(torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1), 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)
    ### END SOLUTION
%% code tags=checker
check_renormalize(mask_and_renormalize)
"""

OTHER = """%% title
02 · Other
%% title zh
02 · 其他
%% code
import torch

from llm_lab.exercises import check_causal_mask, set_language

set_language({{LANG}})
%% code tags=solution
def causal_mask(num_tokens):
    ### BEGIN SOLUTION
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)
    ### END SOLUTION
%% code tags=checker
check_causal_mask(causal_mask)
"""

NAME = "01_demo.ipynb"


def build_course(root: Path) -> Path:
    """Instructor notebooks in ``root/notebooks/{en,zh}/``; returns ``root/notebooks``."""
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name, text in (("01_demo.nbsrc", DEMO), ("02_other.nbsrc", OTHER)):
        (src / name).write_text(text, encoding="utf-8")
        for lang in nbtool.LANGS:
            nb = nbtool.build_one(src / name, lang, "o/r", "main")
            nbtool.write(nb, root / "notebooks" / lang / name.replace(".nbsrc", ".ipynb"))
    return root / "notebooks"


# a right causal_mask, then a line that kills the kernel (the grader runs the notebook again without the cell)
RIGHT_THEN_EXIT = (
    "import os\n\n\ndef causal_mask(num_tokens):\n"
    "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)\n\n\nos._exit(1)\n"
)


NO_NBGRADER = "nbgrader is an instructor tool: make instructor-setup installs it (make unit does)"


def student_copy(notebooks: Path, lang: str = "en", name: str = NAME) -> nbformat.NotebookNode:
    """The student copy of a fixture notebook (nbgrader's preprocessors: the test is skipped without nbgrader)."""
    pytest.importorskip("nbgrader", reason=NO_NBGRADER)
    nb = nbformat.read(str(notebooks / lang / name), as_version=4)
    return nbformat.reads(student.make_student_copy(nb, lang, name), as_version=4)


def solutions(notebooks: Path, lang: str = "en", name: str = NAME) -> dict[str, str]:
    """cell id -> the instructor's solution source."""
    nb = nbformat.read(str(notebooks / lang / name), as_version=4)
    return {c.id: c.source for c in nb.cells if "solution" in c.metadata.get("tags", [])}


def points(notebooks: Path, lang: str = "en", name: str = NAME) -> dict[str, int]:
    """exercise key -> its points, as the builder wrote them (from the checker registry)."""
    nb = nbformat.read(str(notebooks / lang / name), as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"].split("-", 1)[1].removesuffix("-test"): c.metadata["nbgrader"]["points"]
        for c in nb.cells
        if "checker" in c.metadata.get("tags", [])
    }


def solution_cells(nb) -> list:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]


def filled(notebooks: Path, lang: str = "en", name: str = NAME, **replace: str) -> nbformat.NotebookNode:
    """A student copy with the instructor's solutions written in; ``replace`` overrides a solution cell by the
    exercise object's name (``causal_mask="..."``)."""
    nb = student_copy(notebooks, lang, name)
    sols = solutions(notebooks, lang, name)
    for cell in solution_cells(nb):
        cell.source = sols[cell.id]
        for key, source in replace.items():
            if f"def {key}(" in sols[cell.id]:
                cell.source = source
    return nb


def new_class(root: Path) -> tuple[Path, Path]:
    """A fixture course under ``root`` and an empty ``root/submissions`` with alice's right answers in it:
    (the instructor notebooks, the submissions folder)."""
    notebooks = build_course(root)
    subs = root / "submissions"
    subs.mkdir()
    nbformat.write(filled(notebooks), str(subs / "alice.ipynb"))
    return notebooks, subs


def grade_class(root: Path, notebooks: Path, **settings) -> list:
    """``make grade NB=01`` of ``root/submissions`` into ``root/out``, as :func:`new_class` laid them out: the
    fixture course's sources, 10 s a cell, nothing printed; ``settings`` are the grader's other keywords."""
    from tools.teaching.grader import cli

    return cli.grade(
        root / "submissions",
        root / "out",
        "01",
        cell_timeout=10,
        src=notebooks,
        echo=lambda *a: None,
        **settings,
    )
