"""make grade on a hostile class: every trick of tests/_hostile.py scores 0 for its wrong answer, the honest
students beside it are graded normally, and the grading machine is unchanged afterwards (no file written
outside a sandbox, package and course byte-identical, no process left, the loopback listener never reached,
the instructor's environment unseen). Needs bubblewrap (`.ci/run` installs it); skipped only where the
sandbox cannot run, with the reason."""

from __future__ import annotations

import os

import _course_fixture as fx
import _hostile
import nbformat
import pytest

from tools.teaching import grade

pytestmark = pytest.mark.usefixtures("sandbox_required")  # skipped with how to run it, failed under CI


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    notebooks = fx.build_course(root)
    subs = root / "submissions"
    subs.mkdir()
    host = _hostile.host_for(root, notebooks, subs)
    host.listen()
    os.environ["LLM_LAB_TEST_SECRET"] = host.secret  # the grader's environment: no kernel may see it
    nbformat.write(fx.filled(notebooks), str(subs / "alice.ipynb"))
    nbformat.write(fx.filled(notebooks, causal_mask="def causal_mask(n):\n    import torch\n"
                             "    return torch.ones(n, n, dtype=torch.bool).triu()\n"), str(subs / "carol.ipynb"))
    attacks = _hostile.tricks(host)
    for student, code in attacks.items():
        nb = fx.filled(notebooks, causal_mask=code)
        fx.solution_cells(nb)[1].source = "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"
        nbformat.write(nb, str(subs / f"{student}.ipynb"))
    before = host.digest()
    try:
        results = grade.grade(subs, root / "out", cell_timeout=10, src=notebooks, echo=lambda *a: None,
                              max_seconds=120)
    finally:
        host.stop()
        os.environ.pop("LLM_LAB_TEST_SECRET", None)
    return {"results": {r.student: r for r in results}, "attacks": attacks, "host": host, "before": before,
            "points": fx.points(notebooks)}


def test_a_big_class_of_attacks(hostile):
    assert len(hostile["attacks"]) >= 15


def test_every_hostile_submission_scores_zero(hostile):
    scored = {s: (r.total, [(v.key, v.status, v.message[:120]) for v in r.verdicts])
              for s, r in hostile["results"].items() if s in hostile["attacks"] and r.total}
    assert not scored, scored
    problems = {s: r.problem for s, r in hostile["results"].items() if r.problem}
    assert problems == {}  # each was graded (a verdict per exercise), not dropped


def test_the_honest_students_beside_them_are_graded_normally(hostile):
    pts = hostile["points"]
    assert hostile["results"]["alice"].total == sum(pts.values())
    assert hostile["results"]["carol"].total == pts["mask_and_renormalize"]


def test_the_host_is_unchanged(hostile):
    host = hostile["host"]
    after = host.digest()
    changed = [f for f, sha in hostile["before"].items() if after.get(f) != sha]
    assert changed == [], "package or course files changed"
    assert [p for p in host.planted() if p.exists()] == []
    assert host.survivors() == []
    assert host.connections == []


def test_tampering_is_named(hostile):
    for student in ("input_transformer", "ast_transformer", "sys_modules"):
        v = next(v for v in hostile["results"][student].verdicts if v.key == "causal_mask")
        assert v.status == "tampered", (student, v)


def test_the_reference_through_a_transformer_is_not_credited(hostile):
    v = next(v for v in hostile["results"]["input_transformer"].verdicts if v.key == "causal_mask")
    assert v.points == 0 and "input_transformers" in v.message


def test_killing_and_flooding_cost_only_that_submission(hostile):
    r = hostile["results"]
    assert any("kernel died" in n for n in r["kill_everything"].notes), r["kill_everything"]
    assert any("output cut" in n for n in r["output_flood"].notes)
    assert all(v.status in ("fail", "todo") for v in r["big_alloc"].verdicts)  # MemoryError caught in its cell


def test_no_sandbox_mode_says_so_in_every_report(tmp_path):
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(fx.filled(notebooks), str(subs / "alice.ipynb"))
    [r] = grade.grade(subs, tmp_path / "out", src=notebooks, echo=lambda *a: None, sandboxed=False)
    assert r.total == sum(fx.points(notebooks).values())
    assert any("WITHOUT the sandbox" in n for n in r.notes)
    assert "WITHOUT the sandbox" in (tmp_path / "out" / "feedback" / "alice.html").read_text(encoding="utf-8")
