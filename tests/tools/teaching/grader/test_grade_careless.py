"""The careless class: honest students who make a mistake lose at most the exercise the mistake is in, on every
path that grades (``make grade``: tools/teaching/grader/cli.py; ``make grade-nbgrader``: nbgrader_course.py; and
plain ``nbgrader autograde``, whose hidden tests run in the learner's kernel).

The class hands in the fixture course's 01_demo (two autograded exercises, tests/_course_fixture.py), each
student with one mistake: a typo that does not compile, a crash, an endless loop, a huge print, cells run twice
or copied, a notebook half finished; and one with debugging looks that print ``vars(...)`` and ``f.__code__``
and keep ``vars(...)`` in a name it prints
(it costs nothing). The grader's paths run in the bubblewrap sandbox where it can run, and
without it elsewhere (``--no-sandbox``: these students are honest, and what is tested is what a mistake costs,
the same code either way; the sandbox itself is tested in test_cli.py and test_sandbox.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import _course_fixture as fx
import nbformat
import pytest

from tools.teaching.grader import cli, nbgrader_course, sandbox

pytest.importorskip("nbgrader", reason=fx.NO_NBGRADER)
from _nbgrader_fixture import ASSIGNMENT, VENV_BIN, nbgrader, release  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402

BOTH = ("causal_mask", "mask_and_renormalize")
MASK, RENORM = ("causal_mask",), ("mask_and_renormalize",)
RIGHT_MASK = "def causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)\n"


def _double_run(nb):
    """Run twice and saved that way: execution counts out of order, a stale error output, the first solution and
    its checker cell copied below themselves."""
    for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = 40 - n
        cell.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="stale", traceback=[])]
    first = fx.solution_cells(nb)[0]
    i = nb.cells.index(first)
    nb.cells[i + 2 : i + 2] = [
        nbformat.v4.new_code_cell(first.source),
        nbformat.v4.new_code_cell(nb.cells[i + 1].source),
    ]
    return nb


def _half_finished(notebooks):
    """The first exercise done, the second as it was handed out (the stub)."""
    nb = fx.filled(notebooks)
    stub = fx.solution_cells(fx.student_copy(notebooks))[1].source
    fx.solution_cells(nb)[1].source = stub
    return nb


def _with_cell(source: str, before_first: bool = False):
    """The honest notebook with a cell of the learner's own added after the first solution (or before it)."""

    def make(notebooks):
        nb = fx.filled(notebooks)
        first = fx.solution_cells(nb)[0]
        at = nb.cells.index(first) + (0 if before_first else 1)
        nb.cells.insert(at, nbformat.v4.new_code_cell(source))
        return nb

    return make


# the fourth red team's careless students: a cell of their own the grader cannot vouch for (not a module it
# reads, not installed, a magic that writes code, a shell call, a computed attribute name, a compiler). It is
# not run by the grader, so it costs nothing here; it used to zero every exercise checked after it
UNVOUCHED = {
    "import_inspect": "import inspect\nprint(inspect.signature(causal_mask))\n",
    "import_missing": "import scipy.special\n",
    "writefile": "%%writefile notes.py\nSEEN = 1\n",
    "os_system": "import os\nos.system('true')\n",
    "setattr_heads": "class Heads:\n    def __init__(self):\n        for i in range(2):\n"
    "            setattr(self, f'head{i}', i)\n\n\nHeads()\n",
    "compile_look": "import torch\nfast = torch.compile(lambda x: x + 1)\n",
}

# student -> (the notebook, the exercises that score)
CARELESS = {
    **{name: (_with_cell(source, before_first=name == "os_system"), BOTH) for name, source in UNVOUCHED.items()},
    "typo_first": (lambda n: fx.filled(n, causal_mask="def causal_mask(num_tokens:\n    return None\n"), RENORM),
    "typo_second": (
        lambda n: fx.filled(
            n, mask_and_renormalize="def mask_and_renormalize(attn_weights)\n    return attn_weights\n"
        ),
        MASK,
    ),
    "bad_indent": (lambda n: fx.filled(n, causal_mask="def causal_mask(num_tokens):\nreturn None\n"), RENORM),
    "crash_cell": (lambda n: fx.filled(n, causal_mask="x = 1 / 0\n\n\n" + RIGHT_MASK), RENORM),
    "crash_call": (
        lambda n: fx.filled(
            n, mask_and_renormalize="def mask_and_renormalize(attn_weights):\n    return attn_weights.renorm()\n"
        ),
        MASK,
    ),
    # a cell that kills the kernel (os._exit after a right answer; a stray exit() of their own): graded again
    # without it, so it costs what depends on it (make grade and make grade-nbgrader; not plain autograde)
    "kernel_killed": (lambda n: fx.filled(n, causal_mask=fx.RIGHT_THEN_EXIT), RENORM),
    "stray_exit": (_with_cell("exit()\n"), BOTH),
    "loop_cell": (lambda n: fx.filled(n, causal_mask="while True:\n    pass\n"), RENORM),
    "loop_call": (
        lambda n: fx.filled(
            n, mask_and_renormalize="def mask_and_renormalize(attn_weights):\n    while True:\n        pass\n"
        ),
        MASK,
    ),
    "huge_print": (
        lambda n: fx.filled(
            n,
            causal_mask="print('x' * 3_000_000)\n\n\n"
            + RIGHT_MASK.replace("    return", "    print('y' * 100_000)\n    return"),
        ),
        BOTH,
    ),
    "debug_look": (
        lambda n: fx.filled(
            n,
            causal_mask=RIGHT_MASK + "\n\nprint(sorted(vars(torch.nn.Linear(2, 2)).keys()))\n"
            "print(causal_mask.__code__.co_varnames, f'{len(globals())} names')\n"
            "layer = vars(torch.nn.Linear(2, 2))\nprint(layer['in_features'], sorted(layer))\n",
        ),
        BOTH,
    ),
    # what a learner tries at home on their own function: help(), %timeit and %time (the magics' lines are read
    # and compiled under the kernel's guard; help as the site module gives it, in the sandbox too)
    "help_and_timing": (
        _with_cell("help(causal_mask)\n%timeit -n 2 -r 1 causal_mask(4)\n%time causal_mask(4)\nprint('looked')\n"),
        BOTH,
    ),
    "double_run": (lambda n: _double_run(fx.filled(n)), BOTH),
    "half_finished": (_half_finished, MASK),
    "half_written": (
        lambda n: fx.filled(
            n, causal_mask="def causal_mask(num_tokens):\n    mask = torch.ones(num_tokens, num_tokens)\n"
        ),
        RENORM,
    ),
}


def _sandboxed() -> bool:
    return sandbox.available() is None


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    return fx.build_course(tmp_path_factory.mktemp("careless-course"))


def hand_in(folder: Path, notebooks: Path, nbgrader_layout: bool = False, skip=()) -> None:
    for student, (make, _) in CARELESS.items():
        if student in skip:
            continue
        target = folder / student / ASSIGNMENT / fx.NAME if nbgrader_layout else folder / f"{student}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(make(notebooks), str(target))
        if nbgrader_layout:
            (target.parent / "timestamp.txt").write_text("2026-12-01 09:00:00.000000 UTC")


def scores_of(results) -> dict[str, dict[str, int]]:
    return {r.student: {v.key: v.points for v in r.verdicts} for r in results}


KILLERS = ("kernel_killed", "stray_exit")  # nbgrader's own Execute runs a notebook whose kernel died no further


def want(notebooks: Path, nbgrader_alone: bool = False) -> dict[str, dict[str, int]]:
    points = fx.points(notebooks)
    return {
        s: {k: points[k] if k in scoring else 0 for k in BOTH}
        for s, (_, scoring) in CARELESS.items()
        if not (nbgrader_alone and s in KILLERS)
    }


def gradebook_scores(course: Path, students=tuple(CARELESS)) -> dict[str, dict[str, int]]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "llm-lab-test") as gb:
        return {
            s: {k: int(gb.find_grade(f"ex01-{k}-test", "01_demo", ASSIGNMENT, s).score) for k in BOTH} for s in students
        }


@pytest.fixture
def alembic_on_path(monkeypatch):
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ.get("PATH", ""))  # nbgrader's migrations


def test_make_grade(notebooks, tmp_path):
    hand_in(tmp_path / "subs", notebooks)
    results = cli.grade(
        tmp_path / "subs",
        tmp_path / "out",
        "01",
        cell_timeout=10,
        src=notebooks,
        sandboxed=_sandboxed(),
        echo=lambda *a: None,
    )
    got = scores_of(results)
    assert got == want(notebooks), {
        s: [(v.key, v.status, v.message[:160]) for v in r.verdicts] for s, r in zip(got, results, strict=True)
    }
    typo = next(r for r in results if r.student == "typo_first").verdicts[0]
    assert typo.mistake == "does_not_compile" and "SyntaxError" in typo.message, typo
    for r in results:  # each cell left out is named in the student's notes, and no other student's
        left_out = [n for n in r.notes if "not run" in n]
        assert len(left_out) == (r.student in UNVOUCHED or r.student.startswith(("typo", "bad_indent"))), r.notes


def test_make_grade_nbgrader(tmp_path, alembic_on_path):
    course, notebooks = release(tmp_path, timeout=30)
    hand_in(course / "submitted", notebooks, nbgrader_layout=True)
    nbgrader_course.run(
        course, ASSIGNMENT, sandboxed=_sandboxed(), echo=lambda *a: None, src=notebooks, cell_timeout=10
    )
    assert gradebook_scores(course) == want(notebooks)


def test_plain_nbgrader_autograde(tmp_path, alembic_on_path):
    """The hidden tests in the learner's own kernel (nbgrader's Execute: errors allowed, a cell stopped at its
    timeout): the same marks kept."""
    course, notebooks = release(tmp_path, timeout=30)
    hand_in(course / "submitted", notebooks, nbgrader_layout=True, skip=KILLERS)  # autograde fails on them
    nbgrader(course, "autograde", ASSIGNMENT, "--force")
    expected = want(notebooks, nbgrader_alone=True)
    assert gradebook_scores(course, tuple(expected)) == expected
