"""Notebook 05's exercises (split/merge heads, multi-head attention, padded heads): solutions, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""

import pytest
import torch
from _exercise_solutions import NEG_INF, with_mistake
from torch import nn

from llm_lab import exercises as ex


def split_heads(x, num_heads):  # the exercise asks for reshape and permute, not the lesson's view/transpose
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads).permute(0, 2, 1, 3)


def merge_heads(context_vec):
    return context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)


def padded_attention(queries, keys, values, key_padding_mask):
    t = queries.shape[-2]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask[:, None, None, :]
    scores = (queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5).masked_fill(hidden, NEG_INF)
    weights = torch.softmax(scores, dim=-1).masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)
    return weights @ values


class FusedQKV(nn.Module):
    """One (d_in, 3 * d_out) projection instead of the book's three: the checker cannot find W_query."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.qkv = nn.Linear(d_in, 3 * d_out)

    def forward(self, x):
        return self.qkv(x)


class MultiHeadAttention(nn.Module):
    mistake = None

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        if self.mistake != "no_out_proj_attribute":
            self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.context_length = context_length
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def _split(self, t, b, n):
        if self.mistake == "view_without_transpose":
            return t.view(b, self.num_heads, n, self.head_dim)
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        m = self.mistake
        b, n, _ = x.shape
        q, k, v = (self._split(layer(x), b, n) for layer in (self.W_query, self.W_key, self.W_value))
        attn_scores = q @ k.transpose(2, 3)
        size = self.context_length if m == "mask_wrong_size" else n
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:size, :size], NEG_INF)
        scale = self.d_out if m == "scale_uses_d_out" else self.head_dim
        attn_weights = self.dropout(torch.softmax(attn_scores / scale**0.5, dim=-1))
        context_vec = attn_weights @ v
        if m == "view_without_transpose":
            context_vec = context_vec.contiguous().view(b, n, self.d_out)
        else:
            context_vec = context_vec.transpose(1, 2).contiguous().view(b, n, self.d_out)
        if m in ("out_proj_missing", "no_out_proj_attribute"):
            return context_vec
        return self.out_proj(context_vec)


def split_no_transpose(x, num_heads):
    b, t, d = x.shape
    return x.view(b, num_heads, t, d // num_heads)


def split_only_view(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, num_heads, d // num_heads)


def split_interleaved(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, d // num_heads, num_heads).permute(0, 3, 1, 2)


def merge_no_transpose(context_vec):
    b, nh, t, hd = context_vec.shape
    return context_vec.reshape(b, t, nh * hd)


def merge_no_contiguous(context_vec):
    b, nh, t, hd = context_vec.shape
    return context_vec.transpose(1, 2).view(b, t, nh * hd)

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


SOLUTIONS = {
    "split_heads": split_heads,
    "merge_heads": merge_heads,
    "multihead": MultiHeadAttention,
    "padded_attention": padded_attention,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("split_heads", split_no_transpose, "view_without_transpose"),
    ("split_heads", split_only_view, "view_without_transpose"),
    ("split_heads", split_interleaved, "heads_interleaved"),
    ("merge_heads", merge_no_transpose, "merge_without_transpose"),
    ("merge_heads", merge_no_contiguous, "not_contiguous"),
    ("multihead", with_mistake(MultiHeadAttention, "view_without_transpose"), "view_without_transpose"),
    ("multihead", with_mistake(MultiHeadAttention, "out_proj_missing"), "out_proj_missing"),
    ("multihead", with_mistake(MultiHeadAttention, "no_out_proj_attribute"), "out_proj_missing"),
    ("multihead", with_mistake(MultiHeadAttention, "scale_uses_d_out"), "scale_uses_d_out"),
    ("multihead", with_mistake(MultiHeadAttention, "mask_wrong_size"), "mask_wrong_size"),
    ("multihead", FusedQKV, "missing_attribute"),
]


# ---- padded heads: hints and fixes; split/merge with reshape/permute/flatten; inputs; helpers ---------------------


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
def test_padded_mistakes_are_named(hint, fn):
    result = ex.grade("padded_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert ex.evaluate("padded_attention", fn).hint == hint


@pytest.mark.parametrize("fn", [padded_with(num_tokens=lambda q: q.shape[1]), padded_with(keys_t=(1, 2))],
                         ids=["T-from-the-heads-axis", "keys-transposed-over-heads"])
def test_a_size_error_is_not_called_the_heads_axis_unless_it_is(fn):
    result = ex.grade("padded_attention", fn)
    assert (result.status, result.hint) == ("error", "exception"), result.message
    assert "RuntimeError" in result.message


def test_padding_fixes_are_written_for_four_dimensional_scores():
    for hint in ("padding_ignored", "padding_wrong_axis", "padding_heads_axis"):
        fix = ex.REGISTRY["padded_attention"].fixes[hint]
        assert "key_padding_mask[:, None, None, :]" in fix["en"] and "key_padding_mask[:, None, None, :]" in fix["zh"]
        assert "unsqueeze(-2)" not in fix["en"]


def test_split_and_merge_must_leave_their_input_alone():
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
def test_the_lessons_view_and_transpose_do_not_pass_split_and_merge(exercise, fn):
    result = ex.grade(exercise, fn)
    assert (result.status, result.hint) == ("fail", "uses_lesson_ops"), result.message


@pytest.mark.parametrize(("exercise", "fn"), [
    ("split_heads", lambda x, nh: x.reshape(*x.shape[:2], nh, -1).permute(0, 2, 1, 3)),
    ("split_heads", lambda x, nh: x.unflatten(-1, (nh, -1)).movedim(2, 1)),
    ("merge_heads", lambda c: c.permute(0, 2, 1, 3).flatten(start_dim=2)),
    ("merge_heads", lambda c: c.permute(0, 2, 1, 3).reshape(c.shape[0], c.shape[2], -1)),
    ("merge_heads", lambda c: torch.flatten(c.movedim(1, 2), 2)),
])
def test_reshape_permute_flatten_and_their_cousins_pass(exercise, fn):
    result = ex.grade(exercise, fn)
    assert result.passed, result.message


def test_internal_helpers_are_references():
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
