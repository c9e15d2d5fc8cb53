"""Notebook 07's exercises (tiled attention, attention over a cache with a window): llm_lab's references, blocked
and online solutions, every route to SDPA named, stability, the mask built by hand (the solutions and planted
mistakes: solutions_ex07_tiled.py)."""

import pytest
import torch
import torch.nn.functional as F
from _exercise_solutions import NEG_INF
from _remote_loopback import remote_grade
from solutions_ex07_tiled import (
    _hidden,
    blocked,
    chunk_attention,
    chunk_by_query,
    chunk_last_keys,
    chunk_window_zeroed,
    full_scores,
    numpy_whole,
    tiled_attention,
    tiled_factory,
    whole_rows,
)

import llm_lab
from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


def test_llm_labs_cache_attention_is_the_reference():
    from llm_lab import kv_cache

    assert ex.grade("cached_attention", kv_cache.cached_attention).status == "reference"

    def mask_from_llm_lab(q, k, v, window):
        q_len, k_len = q.shape[-2], k.shape[-2]
        old = torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=~(kv_cache.causal_mask_bottom_right(q_len, k_len) | old)
        )

    assert ex.grade("cached_attention", mask_from_llm_lab).status == "reference"


# ---- blocked attention: blocked and online, every route to SDPA named, stability --------------------------------


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
            scores = torch.baddbmm(
                torch.zeros(q.shape[0], q.shape[1], k.shape[1]), q, k.transpose(1, 2), alpha=head_dim**-0.5
            )
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
def test_attention_that_is_not_blocked_and_online_fails(fn):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", "not_blocked"), result.message
    assert "(2, 4, 64, 2)" in result.message
    ex.set_language("zh")
    assert ex.evaluate("tiled_attention", fn).hint == "not_blocked"


def test_attention_computed_outside_torch_is_named_left_torch():
    """NumPy hides every score from the size bound: the whole (T, T) scores in NumPy gave the right values and
    passed as blocked; it is now named, in both languages, through the grading protocol too."""
    for lang in ("en", "zh"):
        result = ex.grade("tiled_attention", numpy_whole, lang=lang)
        assert (result.status, result.hint) == ("fail", "left_torch"), result.message
    assert remote_grade("tiled_attention", numpy_whole).hint == "left_torch"
    assert ex.grade("tiled_attention", tiled_attention).passed


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


def test_a_mask_row_per_query_block_is_allowed():
    """(block_size, T) bools per query block (no batch, no heads) are not whole rows of scores."""
    result = ex.grade("tiled_attention", mask_rows)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "fn",
    [
        lambda q, k, v, b: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v, b: torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0],
        lambda q, k, v, b: torch._C._nn.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    ],
    ids=["aten", "aten-math", "C-nn", "F"],
)
def test_every_route_to_sdpa_is_named(fn):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", "uses_sdpa"), result.message
    assert "scaled_dot_product" in result.message


def test_llm_labs_softmax_and_the_checkers_own_helpers_are_references():
    from llm_lab.exercises import _ex07_tiled, _shared

    for fn in (
        lambda q, k, v, b: llm_lab.causal_softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5) @ v,
        lambda q, k, v, b: _ex07_tiled.tiled(q, k, v, b),
        lambda q, k, v, b: _shared.attention(q, k, v),
        _ex07_tiled.tiled,
    ):
        result = ex.grade("tiled_attention", fn)
        assert (result.status, result.score) == ("reference", 0), result.message


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda q, k, v, b: blocked(q, k, v, b, dtype=torch.float64, max_sub=False), "max_not_subtracted"),
        (lambda q, k, v, b: blocked(q, k, v, b, init=0.0), "max_init_zero"),
        (lambda q, k, v, b: blocked(q, k, v, b, dtype=torch.float64, init=0.0), "max_init_zero"),
    ],
    ids=["float64-no-running-max", "max-starts-at-0", "float64-max-starts-at-0"],
)
def test_unstable_softmax_fails_whatever_the_internal_dtype(fn, hint):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message


def test_the_issues_own_example_is_a_checked_case():
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


def test_a_query_block_scaled_in_place_is_named():
    result = ex.grade("tiled_attention", lambda q, k, v, b: blocked(q, k, v, b, inplace=True))
    assert (result.status, result.hint) == ("fail", "input_modified"), result.message
    assert "`queries`" in result.message


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda q, k, v, b: blocked(q, k, v, b, mask=False), "future_open"),  # the notebook's block skipping kept
        (lambda q, k, v, b: blocked(q, k, v, b) if q.shape[-2] % b == 0 else 1 / 0, "partial_block"),
        (lambda q, k, v, b: blocked(q.view(*q.shape[:2], -1, b, q.shape[-1]).flatten(2, 3), k, v, b), "partial_block"),
    ],
    ids=["mask-forgotten-blocks-skipped", "raises-on-a-partial-block", "view-into-whole-blocks"],
)
def test_mistakes_get_their_own_hint(fn, hint):
    result = ex.grade("tiled_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message


# ---- exercise 2: "build that mask yourself, without is_causal=True", checked where it changes nothing too -------


def _is_causal_when_square(route):
    def attend(queries, keys, values, window):
        q_len, k_len = queries.shape[-2], keys.shape[-2]
        if q_len != k_len or window < k_len:
            return chunk_attention(queries, keys, values, window)
        if route == "keyword":
            return F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        return torch.ops.aten.scaled_dot_product_attention.default(queries, keys, values, None, 0.0, True)

    return attend


def _lower_right(queries, keys, values, window):
    if window < keys.shape[-2]:
        return chunk_attention(queries, keys, values, window)
    mask = torch.nn.attention.bias.causal_lower_right(queries.shape[-2], keys.shape[-2])
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)


@pytest.mark.parametrize(
    "fn",
    [_is_causal_when_square("keyword"), _is_causal_when_square("positional overload"), _lower_right],
    ids=["is_causal-keyword", "is_causal-positional-overload", "causal_lower_right"],
)
def test_torchs_causal_mask_is_named_even_where_its_numbers_are_right(fn):
    import torch.nn.attention.bias  # noqa: F401 - before the timed call, as a notebook's import cell: it loads dynamo

    result = ex.grade("cached_attention", fn)
    assert (result.status, result.hint) == ("fail", "uses_is_causal"), result.message


def test_a_mask_built_by_hand_and_passed_to_sdpa_passes():
    def attend(queries, keys, values, window):
        q_len, k_len = queries.shape[-2], keys.shape[-2]
        hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
        hidden |= torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)
        return F.scaled_dot_product_attention(queries, keys, values, attn_mask=~hidden, is_causal=False)

    result = ex.grade("cached_attention", attend)
    assert result.passed, result.message


def test_tiled_attention_mistakes_of_the_checker_are_right_when_unplanted():
    """The checker's own blocked reference (all mistakes off) equals SDPA: its planted mistakes are honest."""
    from llm_lab.exercises._ex07_tiled import tiled

    q, k, v = (torch.randn(2, 3, 10, 4) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(tiled(q, k, v, 4), want, atol=1e-6)
    assert torch.allclose(tiled_factory()(q, k, v, 3), want, atol=1e-6)


# ---- the window zeroed after the softmax, or anchored to the newest key: named only on every case ----


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (chunk_window_zeroed(), "window_not_renormalized"),
        (chunk_last_keys(), "window_from_newest_key"),
        (chunk_last_keys(sdpa=True), "window_from_newest_key"),
    ],
    ids=["zeroed-after-softmax", "last-keys-softmax", "last-keys-sdpa"],
)
def test_a_window_applied_after_the_softmax_or_from_the_newest_key_is_named(fn, hint):
    for secret in (None, 5):
        result = ex.grade("cached_attention", fn, secret=secret)
        assert (result.status, result.hint) == ("fail", hint), result.message


def test_a_window_mistake_on_some_cases_only_is_not_named():
    zeroed, right = chunk_window_zeroed(), chunk_attention

    def zeroed_on_long_chunks(queries, keys, values, window):  # right where q_len < 4, zeroed on the others
        return (zeroed if queries.shape[-2] >= 4 else right)(queries, keys, values, window)

    def last_keys_on_one_case(queries, keys, values, window):
        return (chunk_last_keys() if keys.shape[-2] == 8 else right)(queries, keys, values, window)

    for fn in (zeroed_on_long_chunks, last_keys_on_one_case):
        result = ex.grade("cached_attention", fn)
        assert result.status == "fail", result.message
        assert result.hint not in ("window_not_renormalized", "window_from_newest_key"), result.message
    for fn in (chunk_window_zeroed(renormalize=True), chunk_by_query):
        assert ex.grade("cached_attention", fn).passed
