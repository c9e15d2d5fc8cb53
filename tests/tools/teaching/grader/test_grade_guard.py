"""The graded kernel's guard on its own (llm_lab/exercises/grading/kernel_guard.py), end to end: with the grader's
reading of the source turned off (``run_unvouched``: every learner cell runs), a right ``causal_mask`` brought in
through a route that runs unread code scores 0 with the guard on, and full marks with it off (the control: each
route works where the guard is not). The routes are the red team's kinds: text run as code by a readable module,
a module the notebook wrote, a pickle, ctypes. Each student's second exercise is right: it keeps its points.

The fixture course's 01_demo (tests/_course_fixture.py), sandboxed; two gradings of a small class.
"""

from __future__ import annotations

import pickle

import _course_fixture as fx
import nbformat
import pytest

from tools.teaching.grader import cli
from tools.teaching.grader import kernel as grader_kernel

MASK = "lambda n: __import__('torch').ones(n, n, dtype=__import__('torch').bool).triu(1)"


class _Defines:
    """Unpickled, defines ``causal_mask`` in ``__main__`` through ``exec`` (what a pickle can name)."""

    def __reduce__(self):
        return exec, (f"import __main__\n__main__.causal_mask = {MASK}\n",)


ROUTES = {
    "plain": f"causal_mask = {MASK}\n",  # control of the control: no route, read or not
    "exec": f"exec({f'causal_mask = {MASK}'!r})\n",
    "timeit": f"import timeit\n\ntimeit.timeit({f'G[0][chr(99) + {chr(39)}ausal_mask{chr(39)}] = {MASK}'!r}, "
    "globals={'G': [globals()]}, number=1)\n",
    "type_hints": "import typing\n\n\nclass H:\n    pass\n\n\n"
    f"H.__annotations__ = {{'x': {f'exec({chr(34)}causal_mask = {MASK}{chr(34)}, G) or int'!r}}}\n"
    "typing.get_type_hints(H, {'G': globals()})\n",
    "written_module": "import sys\n\nopen('/tmp/rtmask.py', 'w').write("
    f"{f'causal_mask = {MASK}{chr(10)}'!r})\nsys.path.insert(0, '/tmp')\nfrom rtmask import causal_mask\n",
    "pickle": f"import pickle\n\npickle.loads({pickle.dumps(_Defines(), protocol=2)!r})\n",
    "ctypes": "import ctypes\n\nctypes.pythonapi.PyRun_SimpleString("
    f"{f'import __main__{chr(10)}__main__.causal_mask = {MASK}{chr(10)}'.encode()!r})\n",
}


def _class(notebooks, subs):
    subs.mkdir()
    for name, source in ROUTES.items():
        nbformat.write(fx.filled(notebooks, causal_mask=source), str(subs / f"{name.replace('_', '')}.ipynb"))


@pytest.fixture(scope="module")
def scores(tmp_path_factory, sandbox_required):
    root = tmp_path_factory.mktemp("guard")
    notebooks = fx.build_course(root)
    subs = root / "submissions"
    _class(notebooks, subs)
    found = {}
    for guarded in (True, False):
        grader_kernel.Kernel.GUARDED = guarded
        try:
            out = root / f"out-{guarded}"
            results = cli.grade(
                subs, out, "01", cell_timeout=20, src=notebooks, echo=lambda *a: None, lang="en", run_unvouched=True
            )
        finally:
            grader_kernel.Kernel.GUARDED = True
        found[guarded] = {r.student: r for r in results}
    return found, fx.points(notebooks)


def _exercise(result, name: str) -> int:
    return sum(v.points for v in result.verdicts if v.key == name)


@pytest.mark.parametrize("route", list(ROUTES))
def test_each_route_scores_without_the_guard(scores, route):
    found, points = scores
    result = found[False][route.replace("_", "")]
    assert _exercise(result, "causal_mask") == points["causal_mask"], result


@pytest.mark.parametrize("route", [r for r in ROUTES if r != "plain"])
def test_the_guard_alone_holds_each_route_and_the_other_exercise_keeps_its_points(scores, route):
    found, points = scores
    result = found[True][route.replace("_", "")]
    assert _exercise(result, "causal_mask") == 0, result
    assert "the graded kernel refused" in next(v.message for v in result.verdicts if v.key == "causal_mask")
    assert _exercise(result, "mask_and_renormalize") == points["mask_and_renormalize"], result


def test_plain_code_is_what_the_guard_leaves_to_the_reading(scores):
    found, points = scores
    assert _exercise(found[True]["plain"], "causal_mask") == points["causal_mask"]
