"""In a real IPython kernel, the guard lets IPython compile only the cell the grader sent
(llm_lab/exercises/grading/sent_text.py): the routes that make IPython compile other text from code with no
notebook frame on the stack (a callback of the event loop or of the shell's events, a nested ``run_cell`` inside a
magic, an AST transformer writing new statements, a magic called with text made at run time) each print ``FELL``
in a kernel without the guard (the control) and are refused in one with it, while the honest cells a notebook
holds (magics, top-level ``await``, dataclasses, string annotations) give the same output in both."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[3]
GUARD = "from llm_lab.exercises.grading import answering\nanswering.guard()"

HONEST = {
    "time": ("x = 1\n%time y = x + 1\ny", "2"),
    "timeit options": ("%timeit -n 3 -r 1 sum([1, 2])", "per loop"),
    "timeit cell": ("%%timeit -n 2 -r 1 z = 3\nz * 2", "per loop"),
    "capture": ("%%capture cap\nprint('hi')\n%time q = 5\nprint(q)", ""),
    "captured": ("print(cap.stdout.strip().splitlines()[-1])", "5"),
    "time cell": ("%%time\na = 1\na + 1", "2"),
    "prun cell": ("%%prun -q\nb = sum(range(10))\nprint(b)", "45"),
    "config": ("%config InlineBackend.figure_format = 'retina'\nprint('configured')", "configured"),
    "dataclass": ("import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int = 1\nP()", "P(a=1)"),
    "annotations": (
        "import typing\ndef f(a: 'int | None') -> 'typing.Optional[int]':\n    return a\ntyping.get_type_hints(f)['a']",
        "int | None",
    ),  # fmt: skip
    "await": ("import asyncio\nawait asyncio.sleep(0.01)\n'awaited'", "'awaited'"),
    "classes": ("def g():\n    return 2\nclass K:\n    def m(self):\n        return g()\nK().m()", "2"),
}

# Each route has IPython compile text no cell holds (the marker is made at run time), with no notebook frame between
# the compiler and the route's trigger (one cell, or several): it sets ``leak``, which the cells after it print.
AFTER = "print(globals().get('leak', ''))"
HOSTILE = {
    "nested run_cell in %time": '%time get_ipython().run_cell(\'leak = "FE" + "LL"\')',
    "magic with text made at run time": "s = 'leak = \"FE\" + \"LL\"'\nget_ipython().run_line_magic('time', s)",
    "event loop callback": "import asyncio, functools\n"
    'asyncio.get_event_loop().call_soon(functools.partial(get_ipython().ex, \'leak = "FE" + "LL"\'))',
    "shell event callback": "import functools\n"
    "get_ipython().events.register('pre_execute', functools.partial(get_ipython().ex, 'leak = \"FE\" + \"LL\"'))",
    # an %%html body is not Python to the grader's reading: a callback compiling the same text is refused
    "callback on an %%html body": (
        "import functools\nget_ipython().events.register('pre_execute', "
        'functools.partial(get_ipython().ex, \'leak = "FE" + "LL"\\n\'))',
        '%%html\nleak = "FE" + "LL"',
    ),
    "AST transformer": "import ast\nclass T(ast.NodeTransformer):\n    def visit_Module(self, node):\n"
    '        node.body = ast.parse(\'leak = "FE" + "LL"\').body + node.body\n        return node\n'
    "get_ipython().ast_transformers.append(T())",
}
SILENT = {"event loop callback"}


def run(cells: list[str]) -> list[str]:
    """Each cell's output text (streams, results, error names and values), from one fresh kernel."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    client = NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=120, resources={})
    client.execute(env=env)
    texts = []
    for cell in nb.cells:
        parts = []
        for out in cell.outputs:
            if out.output_type == "stream":
                parts.append(out.text)
            elif out.output_type == "error":
                parts.append(f"{out.ename}: {out.evalue}")
            else:
                parts.append(out.get("data", {}).get("text/plain", ""))
        texts.append("\n".join(parts))
    return texts


def session(guarded: bool) -> dict:
    """The honest cells in one kernel; each hostile route, and two quiet cells after it, in a kernel of its own."""
    first = GUARD if guarded else "pass"
    honest = dict(zip(HONEST, run([first, *(source for source, _ in HONEST.values())])[1:], strict=True))
    hostile = {
        name: "\n".join(run([first, *((source,) if isinstance(source, str) else source), AFTER, AFTER])[1:])
        for name, source in HOSTILE.items()
    }
    return {"honest": honest, "hostile": hostile}


@pytest.fixture(scope="module")
def unguarded():
    return session(False)


@pytest.fixture(scope="module")
def guarded():
    return session(True)


@pytest.mark.parametrize("name", HOSTILE)
def test_each_route_runs_unread_text_without_the_guard_and_is_refused_with_it(unguarded, guarded, name):
    assert "FELL" in unguarded["hostile"][name]
    assert "FELL" not in guarded["hostile"][name]
    if name not in SILENT:  # a refusal inside a callback of the event loop goes to the kernel's log
        assert "Refused" in guarded["hostile"][name] and "the cell the grader sent" in guarded["hostile"][name]


@pytest.mark.parametrize("name", HONEST)
def test_an_honest_cell_gives_the_same_output_under_the_guard(unguarded, guarded, name):
    assert HONEST[name][1] in guarded["honest"][name]
    assert "Refused" not in guarded["honest"][name] and "Error" not in guarded["honest"][name]
    if "time" not in name:  # timings differ run to run
        assert guarded["honest"][name] == unguarded["honest"][name]
