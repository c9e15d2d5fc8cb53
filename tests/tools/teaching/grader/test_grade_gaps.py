"""make grade on gaps an independent review found, each through the grader's entry point on real submission files:
torch's ready-made causal mask handed in as the learner's work, a notebook whose saved outputs are large, and the
budget of one exercise's check under a small ``--max-seconds``."""

from __future__ import annotations

import base64
import json
import os

import _course_fixture as fx
import nbformat
import pytest

import llm_lab.exercises as exercises

TORCH_MASK = (
    "def causal_mask(num_tokens):\n    return torch.nn.Transformer.generate_square_subsequent_mask(num_tokens) != 0\n"
)
TORCH_MASK_INNER = (
    "from torch.nn.modules.transformer import _generate_square_subsequent_mask\n\n\n"
    "def causal_mask(num_tokens):\n"
    "    return _generate_square_subsequent_mask(num_tokens).isinf()\n"
)
OUTPUT_MB = 90
MAX_SECONDS = 40.0


def with_big_outputs(nb: nbformat.NotebookNode, megabytes: int) -> dict:
    """``nb`` as saved by a learner who printed a lot and drew a large figure: ``megabytes`` MB of outputs."""
    data = json.loads(nbformat.writes(nb))
    code = [c for c in data["cells"] if c["cell_type"] == "code"]
    half = megabytes * 500_000
    png = base64.b64encode(os.urandom(half * 3 // 4)).decode()
    code[0]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": ["step 1234: loss 0.5\n"] * (half // 20)},
        {"output_type": "display_data", "data": {"image/png": png, "text/plain": ["<Figure>"]}, "metadata": {}},
    ]
    return data


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sandbox_required):
    root = tmp_path_factory.mktemp("gaps")
    notebooks, subs = fx.new_class(root)
    nbformat.write(fx.filled(notebooks, causal_mask=TORCH_MASK), str(subs / "tom.ipynb"))
    nbformat.write(fx.filled(notebooks, causal_mask=TORCH_MASK_INNER), str(subs / "tim.ipynb"))
    big = subs / "olga.ipynb"
    big.write_text(json.dumps(with_big_outputs(fx.filled(notebooks), OUTPUT_MB)), encoding="utf-8")
    budgets = []
    grade = exercises.grade

    def recorded(*args, **kw):
        budgets.append(kw.get("timeout"))
        return grade(*args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        load = 9.0 * (os.cpu_count() or 1)  # a busy machine: the check's budget stretched fourfold before
        mp.setattr(os, "getloadavg", lambda: (load, load, load))
        mp.setattr(exercises, "grade", recorded)
        results = fx.grade_class(root, notebooks, lang="en", max_seconds=MAX_SECONDS)
    return {
        "results": {r.student: r for r in results},
        "points": fx.points(notebooks),
        "out": root / "out",
        "budgets": budgets,
        "size": big.stat().st_size,
    }


def verdict(graded, student, key):
    return next(v for v in graded["results"][student].verdicts if v.key == key)


@pytest.mark.parametrize("student", ["tom", "tim"])
def test_torchs_own_causal_mask_is_not_the_learners_work(graded, student):
    v = verdict(graded, student, "causal_mask")
    assert (v.status, v.mistake, v.points) == ("fail", "uses_torch_mask", 0), v.message
    assert "generate_square_subsequent_mask" in v.message and "not allowed" in v.message
    assert verdict(graded, student, "mask_and_renormalize").points == graded["points"]["mask_and_renormalize"]
    page = (graded["out"] / "feedback" / f"{student}.html").read_text(encoding="utf-8")
    assert "generate_square_subsequent_mask" in page


def test_a_notebook_with_large_saved_outputs_gets_its_marks(graded):
    assert graded["size"] > OUTPUT_MB * 1_000_000
    olga = graded["results"]["olga"]
    assert not olga.problem, olga.problem
    assert olga.total == sum(graded["points"].values()), [(v.key, v.status, v.message) for v in olga.verdicts]


def test_a_checks_budget_never_exceeds_the_submissions_limit(graded):
    assert graded["budgets"], "no check ran in this process"
    assert max(graded["budgets"]) <= MAX_SECONDS
    alice = graded["results"]["alice"]
    assert alice.total == sum(graded["points"].values()), [(v.key, v.status, v.message) for v in alice.verdicts]
