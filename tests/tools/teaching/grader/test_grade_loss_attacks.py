"""make grade on the third red team's class (tests/_loss_attacks.py), the real notebooks 06 and 03 handed in:
every attack scores 0 for the exercise it attacks (06's loss, 03's dropout) and keeps the other one; the honest
and careless students beside them keep every mark (a ``check_window`` helper of their own, ``getattr`` over a
written tuple of names). The cells the source decides are also parsed one by one in test_source_checks.py; here
the whole path runs, the kernel's checks included (an ``autograd.Function``, an ``__index__`` hook, a reply
forged on the kernel's stream). Needs bubblewrap (`.ci/run` installs it); skipped only where the sandbox cannot
run, with the reason."""

from __future__ import annotations

import _course_fixture as fx
import _loss_attacks as rt
import nbformat
import pytest

from tools.teaching import student
from tools.teaching.grader import cli

pytestmark = pytest.mark.usefixtures("sandbox_required")
NOTEBOOKS = {"06": "06_attention_on_real_batches.ipynb", "03": "03_dropout_on_attention.ipynb"}
EXERCISES = {"06": (rt.WINDOWS, rt.LOSS), "03": (rt.DROPOUT,)}


def handed_in(nn: str, solutions: dict, before: list) -> nbformat.NotebookNode:
    """The student copy of notebook ``nn`` with the instructor's solutions written in, ``solutions`` (by the
    solution cell's index) in their place and the ``before`` cells added before a solution cell."""
    pytest.importorskip("nbgrader", reason=fx.NO_NBGRADER)
    instructor = nbformat.read(str(fx.ROOT / "notebooks" / "instructor" / "en" / NOTEBOOKS[nn]), as_version=4)
    answers = {c.id: c.source for c in instructor.cells if "solution" in c.metadata.get("tags", [])}
    nb = nbformat.reads(student.make_student_copy(instructor, "en", NOTEBOOKS[nn]), as_version=4)
    cells = [c for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    for i, cell in enumerate(cells):
        cell.source = solutions.get(i, answers[cell.id])
    for i, source in reversed(before):
        nb.cells.insert(nb.cells.index(cells[i]), nbformat.v4.new_code_cell(source))
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("loss-attacks")
    subs = root / "submissions"
    subs.mkdir()
    for name, (nn, solutions, before) in rt.CLASS.items():
        nbformat.write(handed_in(nn, solutions, before), str(subs / f"{name}.ipynb"))
    results = cli.grade(subs, root / "out", "03,06", jobs=2, cell_timeout=30, echo=lambda *a: None, lang="en")
    return {r.student: r for r in results}


def scores(r) -> dict[str, int]:
    return {v.key: v.points for v in r.verdicts}


def test_every_student_was_graded(graded):
    assert sorted(graded) == sorted(rt.CLASS)
    assert {s: r.problem for s, r in graded.items() if r.problem} == {}


@pytest.mark.parametrize("name", sorted(rt.ATTACKED))
def test_each_attack_scores_0_for_its_exercise_and_keeps_the_other(graded, name):
    r = graded[name]
    got = scores(r)
    attacked = rt.ATTACKED[name]
    assert got[attacked] == 0, [(v.key, v.status, v.message[:160]) for v in r.verdicts]
    kept = {k: p for k, p in got.items() if k != attacked}
    assert all(p > 0 for p in kept.values()), [(v.key, v.status, v.message[:160]) for v in r.verdicts]


@pytest.mark.parametrize("name", [s for s in rt.CLASS if s not in rt.ATTACKED])
def test_the_honest_and_careless_keep_every_mark(graded, name):
    r = graded[name]
    assert sorted(scores(r)) == sorted(EXERCISES[rt.CLASS[name][0]])
    assert all(v.status == "pass" and v.points > 0 for v in r.verdicts), [
        (v.key, v.status, v.message[:160]) for v in r.verdicts
    ]


def test_the_forged_reply_and_the_custom_operator_are_named(graded):
    loss = {s: next(v for v in graded[s].verdicts if v.key == rt.LOSS) for s in graded if rt.CLASS[s][0] == "06"}
    for name in ("custom_op_log_softmax", "dataloader_worker"):  # those statements are not run: the loss has no kernel
        assert loss[name].points == 0 and any("changes the checkers" in n for n in graded[name].notes), graded[name]
    assert (
        loss["wire_forged_late_reply"].status == "error" and "cannot be read" in loss["wire_forged_late_reply"].message
    )
    assert "log_softmax" in loss["autograd_function_log_softmax"].message
