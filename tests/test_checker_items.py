"""The statements of 04-07 checked across notebooks: the same verdicts when grading runs the learner's code in
another process, docs/checks.md covering every exercise, and correct solutions written differently passing.
(Each exercise's own requirements are tested in tests/test_exNN_*.py.)"""

import pytest
import torch
import torch.nn.functional as F
from test_ex04_causal import _scores_dropout_class, additive_class
from test_ex05_multihead import LESSON_LINES, padded_with
from test_ex06_data import embeddings, windows_loop, windows_strided, windows_unfold
from test_ex07_tiled import blocked, whole_rows
from test_observe import full_scores

from llm_lab import exercises as ex

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- the same verdicts when grading runs the learner's code in another process (_remote) -------------------------


def _through_a_kernel(exercise, obj):
    """``obj`` as grading sees it: a proxy whose calls go, as JSON, to ``_remote``'s kernel side (here in this
    process: the same encoding, the same ``_call``, no sandbox)."""
    import json

    from llm_lab.exercises import _remote

    def send(request, timeout):
        request = json.loads(json.dumps(request))
        if request["op"] == "describe":
            return json.loads(json.dumps(_remote.encode({"object": _remote._describe(obj)})))
        return json.loads(json.dumps(_remote.encode(_remote._call(request))))

    link = _remote.Link(send)
    link.exercise = exercise
    return link.lookup("obj")


REMOTE_CASES = [
    ("tiled_attention", blocked), ("tiled_attention", whole_rows), ("tiled_attention", full_scores),
    ("tiled_attention", lambda q, k, v, b: blocked(q, k, v, b, inplace=True)),
    ("tiled_attention", lambda q, k, v, b: blocked(q, k, v, b, init=0.0)),
    ("tiled_attention", lambda q, k, v, b: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ("additive_attention", additive_class()), ("additive_attention", additive_class(how="attribute")),
    ("additive_attention", additive_class(how="parameter")),
    ("additive_attention", additive_class(forward="masked_fill")),
    ("additive_attention", additive_class(mask=lambda n: torch.triu(torch.ones(n, n), 1))),
    ("padded_attention", padded_with(inplace=True)), ("padded_attention", padded_with(zero_padded_queries=True)),
    ("padded_attention", padded_with(num_tokens=lambda q: q.shape[1])),
    ("split_heads", LESSON_LINES[0][1]), ("merge_heads", LESSON_LINES[4][1]),
    ("windows", windows_unfold), ("windows", windows_loop), ("windows", windows_strided),
    ("input_embeddings", embeddings), ("input_embeddings", lambda ids, tok, pos: tok(ids) + pos(ids)),
]


@pytest.mark.parametrize(("exercise", "obj"), REMOTE_CASES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(REMOTE_CASES)])
def test_the_measured_requirements_hold_when_the_code_runs_in_a_kernel(exercise, obj):
    here, there = ex.grade(exercise, obj), ex.grade(exercise, _through_a_kernel(exercise, obj))
    assert (there.status, there.hint) == (here.status, here.hint), there.message


def test_dropout_on_scores_is_named_through_a_kernel():
    cls = _scores_dropout_class()
    assert ex.grade("causal_attention", _through_a_kernel("causal_attention", cls)).hint == "dropout_on_scores"


# ---- docs/checks.md: per exercise, what is checked automatically and what by hand --------------------------------


def test_the_checks_page_covers_every_notebook_with_exercises_in_both_languages():
    from pathlib import Path

    docs = Path(__file__).resolve().parent.parent / "docs"
    pages = {lang: (docs / name).read_text(encoding="utf-8")
             for lang, name in (("en", "checks.md"), ("zh", "checks.zh-CN.md"))}
    notebooks = [f"{n:02d}" for n in range(8)]  # 00-07 (08's exercises are their author's to document)
    assert set(notebooks) <= {r.notebook for r in ex.REGISTRY.values()}
    for lang, text in pages.items():
        for nn in notebooks:
            assert f"### {nn} · " in text, (lang, nn)
        assert "check_additive_attention" in text and "block_size" in text
    rows = {lang: sum(line.startswith("| ") for line in text.splitlines()) for lang, text in pages.items()}
    assert rows["en"] == rows["zh"]
    for name in ("additive_attention", "causal_attention", "split_heads", "merge_heads", "multihead",
                 "padded_attention", "windows", "input_embeddings", "tiled_attention"):
        assert ex.points(name) >= 1


# ---- keep what works: correct solutions written differently still pass ------------------------------------------


def padded_einsum_float64(queries, keys, values, key_padding_mask):
    num_tokens = queries.shape[-2]
    hidden = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :]
    scores = torch.einsum("bhqd,bhkd->bhqk", queries.double(), keys.double()) / keys.shape[-1] ** 0.5
    weights = torch.softmax(torch.where(hidden, torch.tensor(NEG_INF, dtype=torch.float64), scores), dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)
    return (weights @ values.double()).float().transpose(-2, -1).contiguous().transpose(-2, -1)  # non-contiguous


def padded_sdpa_mask(queries, keys, values, key_padding_mask):
    num_tokens = queries.shape[-2]
    visible = ~(torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :])
    out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=visible)
    return out.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0).nan_to_num(0.0)


def additive_sdpa():
    cls = additive_class()

    class AdditiveSDPA(cls):
        def forward(self, x):
            num_tokens = x.shape[1]
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask[:num_tokens, :num_tokens],
                                                  dropout_p=self.dropout.p if self.training else 0.0)

    return AdditiveSDPA


@pytest.mark.parametrize(("exercise", "obj"), [
    ("padded_attention", padded_einsum_float64),
    ("padded_attention", padded_sdpa_mask),
    ("additive_attention", additive_sdpa()),
    ("split_heads", lambda x, nh: x.unflatten(-1, (nh, -1)).permute(0, 2, 1, 3)),
    ("windows", lambda t, m, s: torch.as_tensor(t).unfold(0, m + 1, s).split([m, 1], dim=1)[0:1]
     + (torch.as_tensor(t).unfold(0, m + 1, s)[:, 1:],)),
], ids=["padded-einsum-float64-where", "padded-sdpa-bool-mask", "additive-sdpa-attn_mask", "split-unflatten",
        "windows-unfold-split"])
def test_correct_solutions_written_differently_pass(exercise, obj):
    result = ex.grade(exercise, obj)
    assert result.passed, result.message
