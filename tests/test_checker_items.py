"""The statements of 04-07, checked: their requirements measured (blocked, online, buffer, inputs left
alone, the named ops), stability, hints and fixes that fit their exercise; the observation hook they rely on."""

import pytest
import torch
import torch.nn.functional as F

from llm_lab import exercises as ex
from llm_lab.exercises import _harness, _observe
from llm_lab.exercises._core import LearnerError

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- the observation hook (_observe, _harness.call(..., observe=True)) ------------------------------------------


def full_scores(q, k, v, block_size):
    t = q.shape[-2]
    s = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), NEG_INF)
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize(("fn", "fragment"), [
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
    (lambda q, k, v: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
    (lambda q, k, v: torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0],
     "scaled_dot_product"),
    (lambda q, k, v: torch._C._nn.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
    (lambda q, k, v: q.view(-1).reshape(q.shape), "torch.Tensor.view"),
    (lambda q, k, v: q.reshape(q.shape).permute(0, 1, 3, 2), "torch.Tensor.permute"),
])
def test_observed_ops_name_what_was_called_on_the_cpu(fn, fragment):
    q = torch.randn(1, 2, 6, 4)
    with torch.no_grad():
        _harness.call(fn, q, q, q, case="-", observe=True)
    record = _harness.last_observed()
    assert set(record) == {"largest", "ops"} and record["ops"] == sorted(record["ops"])
    assert _observe.called_matching(record, fragment), record["ops"]


def test_observed_largest_tensor_tells_a_t_by_t_matrix_from_blocks():
    q = torch.randn(1, 1, 64, 2)
    with torch.no_grad():
        _harness.call(full_scores, q, q, q, 8, case="-", observe=True)
    assert _harness.last_observed()["largest"] == 64 * 64
    with torch.no_grad():
        _harness.call(lambda q, k, v, b: torch.stack([q[:, :, :b] @ k[:, :, :b].transpose(-2, -1)]), q, q, q, 8,
                      case="-", observe=True)
    assert _harness.last_observed()["largest"] == 8 * 8


def test_views_do_not_count_as_allocations_and_unobserved_calls_record_nothing():
    x = torch.randn(4, 1)
    with torch.no_grad():
        _harness.call(lambda t: t.expand(4, 1000), x, case="-", observe=True)
    assert _harness.last_observed()["largest"] == 0
    with _harness.checking(None, _harness.Watch()):
        _harness.call(lambda t: t + 1, x, case="-")
        assert _harness.last_observed() is None


def test_observation_of_a_raising_call_is_kept():
    def boom(t):
        t = t @ t.T
        raise ValueError("x")

    with _harness.checking(None, _harness.Watch()):
        with pytest.raises(LearnerError, match="x"):
            _harness.call(boom, torch.randn(5, 2), case="-", observe=True)
        assert _harness.last_observed()["largest"] == 25


# ---- 07 blocked attention: items 1 (blocked and online), 2 (SDPA and reference routes), 3 (stability) ---------


def _hidden(t, rows, k_start, width):
    return torch.arange(k_start, k_start + width) > rows


def blocked(queries, keys, values, block_size, *, dtype=None, init=NEG_INF, mask=True, max_sub=True, order=1,
            inplace=False):
    """The notebook's blocked online softmax with switches: dtype of the internals, the running maximum's start,
    the causal mask inside blocks, the maximum subtracted or not, key blocks forward (1) or backward (-1)."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    dtype = dtype or queries.dtype
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        if inplace:
            q = queries[:, :, q_start : q_start + block_size]
            q /= head_dim**0.5
        else:
            q = queries[:, :, q_start : q_start + block_size].to(dtype) / head_dim**0.5
        rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        running_max = torch.full(q.shape[:-1], init, dtype=dtype)
        running_sum = torch.zeros(q.shape[:-1], dtype=dtype)
        acc = torch.zeros(q.shape, dtype=dtype)
        starts = list(range(0, q_start + q.shape[2], block_size))[::order]
        for k_start in starts:
            scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1).to(dtype)
            if mask:
                scores = scores.masked_fill(_hidden(num_tokens, rows, k_start, scores.shape[-1]), NEG_INF)
            v_block = values[:, :, k_start : k_start + block_size].to(dtype)
            if not max_sub:
                p = torch.exp(scores)
                running_sum, acc = running_sum + p.sum(-1), acc + p @ v_block
                continue
            new_max = torch.maximum(running_max, scores.amax(dim=-1))
            safe = torch.where(new_max.isinf(), torch.zeros_like(new_max), new_max) if order < 0 else new_max
            rescale = torch.exp(running_max - safe)
            p = torch.exp(scores - safe.unsqueeze(-1))
            running_sum = running_sum * rescale + p.sum(dim=-1)
            acc = acc * rescale.unsqueeze(-1) + p @ v_block
            running_max = new_max
        out[:, :, q_start : q_start + block_size] = (acc / running_sum.unsqueeze(-1)).to(out.dtype)
    return out


def whole_rows(queries, keys, values, block_size):
    """Score blocks, concatenated into whole rows, then one softmax per row: blocked, but not online."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5
        rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        scores = torch.cat([q @ keys[:, :, k : k + block_size].transpose(-2, -1)
                            for k in range(0, num_tokens, block_size)], dim=-1)
        scores = scores.masked_fill(torch.arange(num_tokens) > rows, NEG_INF)
        out[:, :, q_start : q_start + block_size] = torch.softmax(scores, dim=-1) @ values
    return out


def lse_blocked(queries, keys, values, block_size):
    """Correct: log-sum-exp bookkeeping instead of a running maximum and sum, einsum for the products."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        q = queries[:, :, q_start : q_start + block_size] * head_dim**-0.5
        rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        lse = torch.full(q.shape[:-1], NEG_INF)
        acc = torch.zeros(q.shape)
        for k_start in range(0, q_start + q.shape[2], block_size):
            scores = torch.einsum("bhqd,bhkd->bhqk", q, keys[:, :, k_start : k_start + block_size])
            scores = scores.masked_fill(_hidden(num_tokens, rows, k_start, scores.shape[-1]), NEG_INF)
            new_lse = torch.logaddexp(lse, torch.logsumexp(scores, dim=-1))
            v_block = values[:, :, k_start : k_start + block_size]
            p = torch.exp(scores - new_lse.unsqueeze(-1))
            acc = acc * torch.exp(lse - new_lse).unsqueeze(-1) + torch.einsum("bhqk,bhkd->bhqd", p, v_block)
            lse = new_lse
        out[:, :, q_start : q_start + block_size] = acc
    return out


def baddbmm_blocked(queries, keys, values, block_size):
    """Correct: heads flattened into one batch, products by torch.baddbmm, output stacked from a list."""
    b, nh, num_tokens, head_dim = queries.shape
    q_all, k_all, v_all = (t.reshape(b * nh, num_tokens, head_dim) for t in (queries, keys, values))
    blocks = []
    for q_start in range(0, num_tokens, block_size):
        q = q_all[:, q_start : q_start + block_size]
        rows = torch.arange(q_start, q_start + q.shape[1]).unsqueeze(-1)
        m = torch.full(q.shape[:-1], NEG_INF)
        s, acc = torch.zeros(q.shape[:-1]), torch.zeros(q.shape)
        for k_start in range(0, num_tokens, block_size):  # every key block, the future ones fully masked
            k = k_all[:, k_start : k_start + block_size]
            scores = torch.baddbmm(torch.zeros(q.shape[0], q.shape[1], k.shape[1]), q, k.transpose(1, 2),
                                   alpha=head_dim**-0.5)
            scores = scores.masked_fill(_hidden(num_tokens, rows, k_start, k.shape[1]), NEG_INF)
            new = torch.maximum(m, scores.amax(-1))
            p = torch.exp(scores - new.unsqueeze(-1))
            factor = torch.exp(m - new)
            s = s * factor + p.sum(-1)
            acc = torch.baddbmm(acc * factor.unsqueeze(-1), p, v_all[:, k_start : k_start + block_size])
            m = new
        blocks.append(acc / s.unsqueeze(-1))
    return torch.cat(blocks, dim=1).reshape(b, nh, num_tokens, head_dim)


def per_query_loop(queries, keys, values, block_size):
    """Correct: one query at a time (a loop), keys in blocks; the output a non-contiguous view."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    out = torch.zeros(values.shape[-1], *values.shape[:-1]).permute(1, 2, 3, 0)
    for i in range(num_tokens):
        q = queries[:, :, i] / head_dim**0.5  # (B, nh, hs)
        m = torch.full(q.shape[:-1], NEG_INF, dtype=torch.float64)
        s = torch.zeros(q.shape[:-1], dtype=torch.float64)
        acc = torch.zeros(q.shape, dtype=torch.float64)
        for k_start in range(0, i + 1, block_size):
            kb = keys[:, :, k_start : min(k_start + block_size, i + 1)]
            scores = (kb @ q.unsqueeze(-1)).squeeze(-1).double()
            new = torch.maximum(m, scores.amax(-1))
            p = torch.exp(scores - new.unsqueeze(-1))
            s = s * torch.exp(m - new) + p.sum(-1)
            weighted = (p.unsqueeze(-1) * values[:, :, k_start : k_start + kb.shape[2]]).sum(2)
            acc = acc * torch.exp(m - new).unsqueeze(-1) + weighted
            m = new
        out[:, :, i] = (acc / s.unsqueeze(-1)).float()
    return out


CORRECT_07 = {
    "notebook": blocked,
    "float64 internals": lambda q, k, v, b: blocked(q, k, v, b, dtype=torch.float64),
    "reversed key order": lambda q, k, v, b: blocked(q, k, v, b, order=-1),
    "log-sum-exp and einsum": lse_blocked,
    "baddbmm, every key block": baddbmm_blocked,
    "one query at a time": per_query_loop,
}


@pytest.mark.parametrize("name", list(CORRECT_07))
def test_correct_blocked_solutions_pass(name):
    result = ex.grade("tiled_attention", CORRECT_07[name])
    assert result.passed, result.message
    assert "T=64 block=8" in result.message and "extreme scores" in result.message


@pytest.mark.parametrize("fn", [full_scores, whole_rows], ids=["never-reads-block_size", "whole-rows-softmax"])
def test_item1_attention_that_is_not_blocked_and_online_fails(fn):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", "not_blocked"), result.message
    assert "(2, 4, 64, 2)" in result.message
    ex.set_language("zh")
    assert ex.evaluate("tiled_attention", fn).hint == "not_blocked"


def mask_rows(queries, keys, values, block_size):
    """Correct: the causal mask of a query block against all keys, (block_size, T) bools, sliced per key block."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5
        hidden = torch.arange(num_tokens) > torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        m = torch.full(q.shape[:-1], NEG_INF)
        s, acc = torch.zeros(q.shape[:-1]), torch.zeros(q.shape)
        for k_start in range(0, q_start + q.shape[2], block_size):
            scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1)
            scores = scores.masked_fill(hidden[:, k_start : k_start + scores.shape[-1]], NEG_INF)
            new = torch.maximum(m, scores.amax(-1))
            p = torch.exp(scores - new.unsqueeze(-1))
            s = s * torch.exp(m - new) + p.sum(-1)
            acc = acc * torch.exp(m - new).unsqueeze(-1) + p @ values[:, :, k_start : k_start + block_size]
            m = new
        out[:, :, q_start : q_start + block_size] = acc / s.unsqueeze(-1)
    return out


def test_item1_a_mask_row_per_query_block_is_allowed():
    """(block_size, T) bools per query block (no batch, no heads) are not whole rows of scores."""
    result = ex.grade("tiled_attention", mask_rows)
    assert result.passed, result.message


@pytest.mark.parametrize("fn", [
    lambda q, k, v, b: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True),
    lambda q, k, v, b: torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0],
    lambda q, k, v, b: torch._C._nn.scaled_dot_product_attention(q, k, v, is_causal=True),
    lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, is_causal=True),
], ids=["aten", "aten-math", "C-nn", "F"])
def test_item2_every_route_to_sdpa_is_named(fn):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", "uses_sdpa"), result.message
    assert "scaled_dot_product" in result.message


def test_item2_llm_labs_softmax_and_the_checkers_own_helpers_are_references():
    import llm_lab
    from llm_lab.exercises import _ex07_tiled, _shared

    for fn in (lambda q, k, v, b: llm_lab.causal_softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5) @ v,
               lambda q, k, v, b: _ex07_tiled.tiled(q, k, v, b),
               lambda q, k, v, b: _shared.attention(q, k, v),
               _ex07_tiled.tiled):
        result = ex.grade("tiled_attention", fn)
        assert (result.status, result.score) == ("reference", 0), result.message


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda q, k, v, b: blocked(q, k, v, b, dtype=torch.float64, max_sub=False), "max_not_subtracted"),
    (lambda q, k, v, b: blocked(q, k, v, b, init=0.0), "max_init_zero"),
    (lambda q, k, v, b: blocked(q, k, v, b, dtype=torch.float64, init=0.0), "max_init_zero"),
], ids=["float64-no-running-max", "max-starts-at-0", "float64-max-starts-at-0"])
def test_item3_unstable_softmax_fails_whatever_the_internal_dtype(fn, hint):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message


def test_item3_the_issues_own_example_is_a_checked_case():
    """q = [[-10, 0], [1, 1]], k = [[40, 0], [1, 1]], block 1: row 0's only score is -282.8; SDPA is finite there
    and a running maximum started at 0 gives NaN. The checker's extreme case goes further (-800, +800)."""
    q, k = torch.tensor([[[[-10.0, 0], [1, 1]]]]), torch.tensor([[[[40.0, 0], [1, 1]]]])
    v = torch.randn(1, 1, 2, 2)
    assert torch.isfinite(F.scaled_dot_product_attention(q, k, v, is_causal=True)).all()
    assert blocked(q, k, v, 1, init=0.0)[0, 0, 0].isnan().all()
    from llm_lab.exercises._ex07_tiled import _extreme_scores

    q, k = _extreme_scores()
    scores = q @ k.transpose(-2, -1) / 2
    assert scores.tril().abs().max() >= 800 and torch.exp(scores.double().tril().max()).isinf()



def test_item10_a_query_block_scaled_in_place_is_named():
    result = ex.grade("tiled_attention", lambda q, k, v, b: blocked(q, k, v, b, inplace=True))
    assert (result.status, result.hint) == ("fail", "input_modified"), result.message
    assert "`queries`" in result.message


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda q, k, v, b: blocked(q, k, v, b, mask=False), "future_open"),  # the notebook's block skipping kept
    (lambda q, k, v, b: blocked(q, k, v, b) if q.shape[-2] % b == 0 else 1 / 0, "partial_block"),
    (lambda q, k, v, b: blocked(q.view(*q.shape[:2], -1, b, q.shape[-1]).flatten(2, 3), k, v, b), "partial_block"),
], ids=["mask-forgotten-blocks-skipped", "raises-on-a-partial-block", "view-into-whole-blocks"])
def test_item12_07_mistakes_get_their_own_hint(fn, hint):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message


# ---- 05: items 4 (padded hints and fixes), 9 (reshape/permute/flatten), 10 (inputs), 11 (helpers), 12 -------


def padded(queries, keys, values, key_padding_mask, *, mask_index=(slice(None), None, None, slice(None)),
           num_tokens=None, keys_t=(-2, -1), diagonal=1, scale=None, zero_padded_queries=False, inplace=False):
    """Exercise 5 with switches; the defaults are the notebook's solution."""
    num_tokens = queries.shape[-2] if num_tokens is None else num_tokens(queries)
    causal = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=diagonal)
    hidden = causal | key_padding_mask[mask_index]
    d = keys.shape[-1] if scale is None else scale(queries)
    if inplace:
        queries /= d**0.5
        attn_scores = queries @ keys.transpose(*keys_t)
    else:
        attn_scores = queries @ keys.transpose(*keys_t) / d**0.5
    attn_weights = torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)
    attn_weights = attn_weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)
    out = attn_weights @ values
    return out.masked_fill(key_padding_mask[:, None, :, None], 0.0) if zero_padded_queries else out


def padded_with(**switches):
    return lambda q, k, v, m: padded(q, k, v, m, **switches)


PADDED_HINTS = [
    ("padded_queries_zeroed", padded_with(zero_padded_queries=True)),
    ("padding_wrong_axis", padded_with(mask_index=(slice(None), None, slice(None), None))),
    ("padding_heads_axis", padded_with(mask_index=(slice(None), None, slice(None)))),
    ("diagonal_masked", padded_with(diagonal=0)),
    ("scale_uses_T", padded_with(scale=lambda q: q.shape[-2])),
    ("scale_uses_d_out", padded_with(scale=lambda q: q.shape[1] * q.shape[-1])),
    ("input_modified", padded_with(inplace=True)),
]


@pytest.mark.parametrize(("hint", "fn"), PADDED_HINTS, ids=[h for h, _ in PADDED_HINTS])
def test_items4_10_12_padded_mistakes_are_named(hint, fn):
    result = ex.grade("padded_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert ex.evaluate("padded_attention", fn).hint == hint


@pytest.mark.parametrize("fn", [padded_with(num_tokens=lambda q: q.shape[1]), padded_with(keys_t=(1, 2))],
                         ids=["T-from-the-heads-axis", "keys-transposed-over-heads"])
def test_item4_a_size_error_is_not_called_the_heads_axis_unless_it_is(fn):
    result = ex.grade("padded_attention", fn)
    assert (result.status, result.hint) == ("error", "exception"), result.message
    assert "RuntimeError" in result.message


def test_item4_padding_fixes_are_written_for_four_dimensional_scores():
    for hint in ("padding_ignored", "padding_wrong_axis", "padding_heads_axis"):
        fix = ex.REGISTRY["padded_attention"].fixes[hint]
        assert "key_padding_mask[:, None, None, :]" in fix["en"] and "key_padding_mask[:, None, None, :]" in fix["zh"]
        assert "unsqueeze(-2)" not in fix["en"]


def test_item10_split_and_merge_must_leave_their_input_alone():
    def split_in_place(x, num_heads):
        b, t, d = x.shape
        out = x.reshape(b, t, num_heads, d // num_heads).permute(0, 2, 1, 3).clone()
        x.zero_()
        return out

    def merge_in_place(context_vec):
        context_vec.mul_(2.0)
        return (context_vec / 2).permute(0, 2, 1, 3).flatten(start_dim=2)

    assert ex.grade("split_heads", split_in_place).hint == "input_modified"
    assert ex.grade("merge_heads", merge_in_place).hint == "input_modified"


LESSON_LINES = [
    ("split_heads", lambda x, nh: x.view(x.shape[0], x.shape[1], nh, -1).transpose(1, 2)),
    ("split_heads", lambda x, nh: x.reshape(x.shape[0], x.shape[1], nh, -1).transpose(1, 2)),
    ("split_heads", lambda x, nh: x.view(x.shape[0], x.shape[1], nh, -1).permute(0, 2, 1, 3)),
    ("split_heads", lambda x, nh: torch.swapaxes(x.reshape(x.shape[0], x.shape[1], nh, -1), 1, 2)),
    ("merge_heads", lambda c: c.transpose(1, 2).contiguous().view(c.shape[0], c.shape[2], -1)),
    ("merge_heads", lambda c: c.transpose(1, 2).flatten(start_dim=2)),
    ("merge_heads", lambda c: c.permute(0, 2, 1, 3).contiguous().view(c.shape[0], c.shape[2], -1)),
]


@pytest.mark.parametrize(("exercise", "fn"), LESSON_LINES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(LESSON_LINES)])
def test_item9_the_lessons_view_and_transpose_do_not_pass_split_and_merge(exercise, fn):
    result = ex.grade(exercise, fn)
    assert (result.status, result.hint) == ("fail", "uses_lesson_ops"), result.message


@pytest.mark.parametrize(("exercise", "fn"), [
    ("split_heads", lambda x, nh: x.reshape(*x.shape[:2], nh, -1).permute(0, 2, 1, 3)),
    ("split_heads", lambda x, nh: x.unflatten(-1, (nh, -1)).movedim(2, 1)),
    ("merge_heads", lambda c: c.permute(0, 2, 1, 3).flatten(start_dim=2)),
    ("merge_heads", lambda c: c.permute(0, 2, 1, 3).reshape(c.shape[0], c.shape[2], -1)),
    ("merge_heads", lambda c: torch.flatten(c.movedim(1, 2), 2)),
])
def test_item9_reshape_permute_flatten_and_their_cousins_pass(exercise, fn):
    result = ex.grade(exercise, fn)
    assert result.passed, result.message


def test_item11_internal_helpers_are_references():
    from llm_lab import MultiHeadAttention
    from llm_lab.exercises import _ex05_multihead, _shared

    cases = [
        ("split_heads", lambda x, nh: MultiHeadAttention(x.shape[-1], x.shape[-1], 8, 0.0, nh)._split_heads(
            x, x.shape[0], x.shape[1])),
        ("split_heads", _ex05_multihead.split),
        ("merge_heads", _ex05_multihead.merge),
        ("padded_attention", lambda q, k, v, m: _ex05_multihead._padded_ref(
            q, k, v, torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).triu(1) | m[:, None, None, :])),
        ("padded_attention", lambda q, k, v, m: _shared.softmax_masked(
            q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5,
            torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).triu(1) | m[:, None, None, :]).nan_to_num() @ v),
    ]
    for exercise, fn in cases:
        result = ex.grade(exercise, fn)
        assert (result.status, result.score) == ("reference", 0), (exercise, result.message)


# ---- 04/05: item 6 (dropout on the raw scores) -------------------------------------------------------------------


def _scores_dropout_class():
    from test_exercise_mistakes import Flex

    class ScoresDropout(Flex):
        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = (layer(x).view(b, t, self.nh, self.hd).transpose(1, 2)
                       for layer in (self.W_query, self.W_key, self.W_value))
            attn_scores = self.dropout(q @ k.transpose(-2, -1))  # before the softmax
            attn_scores = attn_scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), NEG_INF)
            c = (torch.softmax(attn_scores / self.hd**0.5, dim=-1) @ v).transpose(1, 2).reshape(b, t, self.d_out)
            return self.out_proj(c) if self.multi else c

    return ScoresDropout


@pytest.mark.parametrize("exercise", ["causal_attention", "multihead"])
def test_item6_dropout_on_the_raw_scores_is_not_called_missing(exercise):
    result = ex.grade(exercise, _scores_dropout_class())
    assert (result.status, result.hint) == ("fail", "dropout_on_scores"), result.message
    from test_exercise_mistakes import flex

    assert ex.grade(exercise, flex(place="none")).hint == "dropout_missing"  # no dropout at all: still missing


# ---- 06: items 7 (IndexError), 8 (fixes that say unfold), 9 (unfold enforced), 10, 12 (window counts) -----------


def windows_unfold(token_ids, max_length, stride):
    ids = torch.tensor(token_ids, dtype=torch.long)
    windows = ids.unfold(0, max_length + 1, stride)
    return windows[:, :-1], windows[:, 1:]


def windows_loop(token_ids, max_length, stride):
    inputs, targets = [], []
    for i in range(0, len(token_ids) - max_length, stride):
        inputs.append(torch.tensor(token_ids[i : i + max_length]))
        targets.append(torch.tensor(token_ids[i + 1 : i + max_length + 1]))
    return torch.stack(inputs), torch.stack(targets)


def windows_strided(token_ids, max_length, stride):
    ids = torch.tensor(token_ids, dtype=torch.long)
    n = (len(token_ids) - max_length - 1) // stride + 1
    windows = ids.as_strided((n, max_length + 1), (stride, 1))
    return windows[:, :-1], windows[:, 1:]


def windows_counts_differ(token_ids, max_length, stride):
    """Inputs cut with windows of max_length (one too many at the end), targets from ids[1:]: counts differ."""
    ids = torch.tensor(token_ids, dtype=torch.long)
    return ids.unfold(0, max_length, stride), ids[1:].unfold(0, max_length, stride)


def windows_pop(token_ids, max_length, stride):
    token_ids.append(0)
    token_ids.pop()
    token_ids.reverse()
    token_ids.reverse()
    token_ids[0] += 0
    out = windows_unfold(token_ids, max_length, stride)
    token_ids.pop()
    return out


@pytest.mark.parametrize(("fn", "hint"), [
    (windows_loop, "windows_without_unfold"),
    (windows_strided, "windows_as_strided"),
    (windows_counts_differ, "extra_window"),
    (windows_pop, "input_modified"),
], ids=["loop", "as_strided", "counts-differ", "list-changed"])
def test_items9_10_12_windows_requirements_and_counts(fn, hint):
    result = ex.grade("windows", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message


def test_item9_unfold_with_views_passes():
    """Non-contiguous views of one unfold (as here) and contiguous copies (the notebook's) both pass."""
    assert ex.grade("windows", windows_unfold).passed
    assert ex.grade("windows", lambda t, m, s: tuple(w.contiguous() for w in windows_unfold(t, m, s))).passed


def test_item8_window_fixes_say_unfold_and_no_loop():
    windows = ex.REGISTRY["windows"]
    for hint, fix in ((h, windows.fixes[h]) for h in windows.hints if h in windows.fixes):
        assert "range(" not in fix["en"] and "token_ids[i" not in fix["en"], hint
    for hint in ("targets_not_shifted", "stride_ignored", "missing_last_window", "extra_window"):
        assert "ids.unfold(0, max_length + 1, stride)" in ex.REGISTRY["windows"].fixes[hint]["en"], hint
        assert "ids.unfold(0, max_length + 1, stride)" in ex.REGISTRY["windows"].fixes[hint]["zh"], hint


def embeddings(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(token_ids.shape[-1]))


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda ids, tok, pos: tok(ids) + pos(torch.arange(ids.shape[2])), "exception"),  # IndexError: tuple index
    (lambda ids, tok, pos: tok(ids) + pos(torch.arange(ids.shape[1]) + ids.shape[1]), "exception"),
    (lambda ids, tok, pos: tok(ids)[ids.shape[0] + 5], "exception"),
    (lambda ids, tok, pos: tok(ids) + pos(torch.arange(1, ids.shape[1] + 1)), "positions_one_based"),
    (lambda ids, tok, pos: tok(ids) + pos(ids), "positions_from_ids"),
], ids=["shape[2]", "shifted-by-T", "index-past-batch", "one-based", "from-ids"])
def test_item7_only_a_position_mistake_is_called_one(fn, hint):
    result = ex.grade("input_embeddings", fn)
    assert result.hint == hint, result.message
    if hint == "exception":
        assert "IndexError" in result.message


def test_item10_embeddings_leave_ids_and_tables_alone():
    def shifts_ids(token_ids, tok_emb, pos_emb):
        token_ids += 0
        token_ids[..., 0] = token_ids[..., 0]
        out = embeddings(token_ids, tok_emb, pos_emb)
        token_ids.zero_()
        return out

    def scales_table(token_ids, tok_emb, pos_emb):
        out = embeddings(token_ids, tok_emb, pos_emb)
        with torch.no_grad():
            pos_emb.weight.mul_(1.5)
        return out

    assert ex.grade("input_embeddings", shifts_ids).hint == "input_modified"
    assert ex.grade("input_embeddings", scales_table).hint == "input_modified"
    assert ex.grade("input_embeddings", embeddings).passed


# ---- 04 exercise 2: item 5 (an additive mask, registered as a buffer), item 12 (a 0/1 additive mask) -------------


def additive_class(mask=None, how="buffer", forward="add"):
    """04 exercise 2's class with switches: the stored mask (a function of context_length), how it is stored
    (buffer, non-persistent buffer, plain attribute, nn.Parameter), and how forward applies it."""
    from torch import nn

    class Additive(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__()
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.dropout = nn.Dropout(dropout)
            t = (mask or (lambda n: torch.triu(torch.full((n, n), NEG_INF), diagonal=1)))(context_length)
            if how == "attribute":
                self.mask = t
            elif how == "parameter":
                self.mask = nn.Parameter(t, requires_grad=False)
            else:
                self.register_buffer("mask", t, persistent=how != "non-persistent")

        def forward(self, x):
            num_tokens = x.shape[1]
            queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
            attn_scores = queries @ keys.transpose(1, 2)
            m = self.mask[:num_tokens, :num_tokens]
            if forward == "masked_fill":
                attn_scores = attn_scores.masked_fill(m.bool() if m.dtype == torch.bool else m < 0, NEG_INF)
            elif forward == "where":
                attn_scores = torch.where(m < 0, NEG_INF, attn_scores)
            else:
                attn_scores = attn_scores + m
            attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
            return attn_weights @ values

    return Additive


def test_item5_the_lessons_masked_fill_class_does_not_earn_exercise_2():
    import llm_lab

    lesson = ex.grade("additive_attention", additive_class(
        mask=lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1), forward="masked_fill"))
    assert (lesson.status, lesson.hint) == ("fail", "additive_uses_masked_fill"), lesson.message
    assert "masked_fill" in lesson.message
    assert ex.grade("additive_attention", additive_class(forward="where")).hint == "additive_uses_masked_fill"
    assert ex.grade("additive_attention", llm_lab.CausalAttention).status == "reference"
    # the same lesson class still passes exercise 4, which is about that class
    assert ex.grade("causal_attention", additive_class(
        mask=lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1), forward="masked_fill")).passed


@pytest.mark.parametrize(("how", "hint"), [("attribute", "mask_not_buffer"), ("parameter", "mask_is_parameter")])
def test_item5_the_mask_must_be_a_registered_buffer(how, hint):
    result = ex.grade("additive_attention", additive_class(how=how))
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert "register_buffer" in ex.evaluate("additive_attention", additive_class(how=how)).message


@pytest.mark.parametrize("mask", [
    None,
    lambda n: torch.triu(torch.full((n, n), -1e9), diagonal=1),
    lambda n: torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), NEG_INF),
], ids=["-inf", "-1e9", "masked_fill-in-init"])
@pytest.mark.parametrize("how", ["buffer", "non-persistent"])
def test_item5_additive_buffers_pass(mask, how):
    result = ex.grade("additive_attention", additive_class(mask=mask, how=how))
    assert result.passed, result.message


@pytest.mark.parametrize("mask", [lambda n: torch.triu(torch.ones(n, n), 1), lambda n: torch.tril(torch.ones(n, n))],
                         ids=["ones-above", "ones-below"])
def test_item12_a_0_1_additive_mask_is_named(mask):
    result = ex.grade("additive_attention", additive_class(mask=mask))
    assert (result.status, result.hint) == ("fail", "additive_mask_01"), result.message
    assert "-inf" in result.fix


def test_item5_a_bool_buffer_added_is_not_additive():
    unused = additive_class(mask=lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1))
    assert ex.grade("additive_attention", unused).hint == "additive_mask_01"  # True + score: adds 1


def test_item5_exercise_2_has_its_own_checker_in_the_notebook():
    from pathlib import Path

    src = (Path(__file__).resolve().parent.parent / "notebooks" / "src" /
           "04_causal_attention_class.exercises.nbsrc").read_text(encoding="utf-8")
    assert "check_additive_attention(MyCausalAttention)" in src
    assert "check_causal_attention(CausalAttentionFixed)" in src
    assert ex.points("additive_attention") == ex.points("causal_attention") == 2


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


def test_item6_dropout_on_scores_is_named_through_a_kernel():
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
