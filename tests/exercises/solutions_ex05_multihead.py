"""Notebook 05's exercises of llm_lab/exercises/_ex05_multihead.py (a fused qkv split, grouped-query kv heads,
multi-head attention): solutions, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch
from _exercise_solutions import NEG_INF, NoRescale, SharedHeads, SharedMask, flex, with_mistake
from torch import nn


def split_qkv(qkv, num_heads, num_kv_heads):  # one view to all the heads, then cut (the notebook splits first)
    b, t, w = qkv.shape
    heads = qkv.view(b, t, num_heads + 2 * num_kv_heads, -1).transpose(1, 2)  # (B, nh + 2 n_kv, T, hs)
    return tuple(heads.split([num_heads, num_kv_heads, num_kv_heads], dim=1))


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
        scale = self.d_out if m in ("scale_uses_d_out", "both_bugs") else self.head_dim
        attn_weights = self.dropout(torch.softmax(attn_scores / scale**0.5, dim=-1))
        context_vec = attn_weights @ v
        if m == "view_without_transpose":
            context_vec = context_vec.contiguous().view(b, n, self.d_out)
        elif m in ("merge_features_first", "both_bugs"):  # exercise 4's merge: a view to (B, d_out, T), transposed
            context_vec = context_vec.contiguous().view(b, self.d_out, n).transpose(1, 2)
        else:
            context_vec = context_vec.transpose(1, 2).contiguous().view(b, n, self.d_out)
        if m in ("out_proj_missing", "no_out_proj_attribute"):
            return context_vec
        return self.out_proj(context_vec)


def _blocks(qkv, nh, n_kv):
    hs = qkv.shape[-1] // (nh + 2 * n_kv)
    return zip(qkv.split([nh * hs, n_kv * hs, n_kv * hs], dim=-1), (nh, n_kv, n_kv), strict=True)


def qkv_thirds(qkv, nh, n_kv):  # notebook 07's fused layer: three equal blocks
    b, t, _ = qkv.shape
    return tuple(
        part.reshape(b, t, h, -1).transpose(1, 2)
        for part, h in zip(qkv.chunk(3, dim=-1), (nh, n_kv, n_kv), strict=True)
    )


def qkv_lesson_07(qkv, nh, n_kv):  # notebook 07's CombinedQKVAttention: view (B, T, 3, nh, hs), a size error here
    b, t, w = qkv.shape
    return tuple(qkv.view(b, t, 3, nh, w // (3 * nh)).permute(2, 0, 3, 1, 4).unbind(0))


def qkv_kv_num_heads(qkv, nh, n_kv):
    b, t, _ = qkv.shape
    return tuple(part.reshape(b, t, nh, -1).transpose(1, 2) for part, _ in _blocks(qkv, nh, n_kv))


def qkv_per_group(qkv, nh, n_kv):
    b, t, w = qkv.shape
    g, hs = nh // n_kv, w // (nh + 2 * n_kv)
    x = qkv.view(b, t, n_kv, g + 2, hs)
    return (
        x[:, :, :, :g].reshape(b, t, nh, hs).transpose(1, 2),
        x[:, :, :, g].transpose(1, 2),
        x[:, :, :, g + 1].transpose(1, 2),
    )


def qkv_no_transpose(qkv, nh, n_kv):
    b, t, _ = qkv.shape
    return tuple(part.reshape(b, h, t, -1) for part, h in _blocks(qkv, nh, n_kv))


def qkv_interleaved(qkv, nh, n_kv):
    b, t, _ = qkv.shape
    return tuple(part.reshape(b, t, -1, h).permute(0, 3, 1, 2) for part, h in _blocks(qkv, nh, n_kv))


def qkv_kv_repeated(tile=False):
    """Grouped-query attention's habit in the split: each key/value head repeated for its query heads."""

    def fn(qkv, nh, n_kv):
        q, k, v = split_qkv(qkv, nh, n_kv)
        g = nh // n_kv
        if tile:
            return q, k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)
        return q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)

    return fn


def qkv_kv_swapped(qkv, nh, n_kv):
    queries, values, keys = (part.unflatten(-1, (h, -1)).transpose(1, 2) for part, h in _blocks(qkv, nh, n_kv))
    return queries, keys, values


def qkv_heads_first(qkv, nh, n_kv):  # correct: all heads at once, then three slices of the head dimension
    heads = qkv.unflatten(-1, (nh + 2 * n_kv, -1)).transpose(1, 2)
    return heads[:, :nh], heads[:, nh : nh + n_kv], heads[:, nh + n_kv :]


def qkv_listed_twice(qkv, nh, n_kv):
    return [*split_qkv(qkv, nh, n_kv), None]


SOLUTIONS = {
    "split_qkv": split_qkv,
    "multihead": MultiHeadAttention,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("split_qkv", qkv_thirds, "qkv_equal_thirds"),
    ("split_qkv", qkv_lesson_07, "qkv_equal_thirds"),
    ("split_qkv", qkv_kv_num_heads, "kv_split_into_num_heads"),
    ("split_qkv", qkv_per_group, "qkv_per_group"),
    ("split_qkv", qkv_no_transpose, "view_without_transpose"),
    ("split_qkv", qkv_interleaved, "heads_interleaved"),
    ("split_qkv", qkv_kv_repeated(), "kv_heads_repeated"),
    ("split_qkv", qkv_kv_repeated(tile=True), "kv_heads_repeated"),
    ("split_qkv", qkv_kv_swapped, "keys_values_swapped"),
    ("split_qkv", lambda qkv, nh, n_kv: torch.cat(split_qkv(qkv, nh, n_kv), dim=1), "not_triple"),
    ("split_qkv", qkv_listed_twice, "not_triple"),
    ("multihead", with_mistake(MultiHeadAttention, "view_without_transpose"), "view_without_transpose"),
    ("multihead", with_mistake(MultiHeadAttention, "out_proj_missing"), "out_proj_missing"),
    ("multihead", with_mistake(MultiHeadAttention, "no_out_proj_attribute"), "out_proj_missing"),
    ("multihead", with_mistake(MultiHeadAttention, "scale_uses_d_out"), "scale_uses_d_out"),
    ("multihead", with_mistake(MultiHeadAttention, "merge_features_first"), "merge_features_first"),
    ("multihead", with_mistake(MultiHeadAttention, "both_bugs"), "merge_features_first"),
    ("multihead", with_mistake(MultiHeadAttention, "mask_wrong_size"), "mask_wrong_size"),
    ("multihead", FusedQKV, "missing_attribute"),
]

CORRECT_BUT_DIFFERENT = [
    ("split_qkv", qkv_heads_first),
    ("multihead", flex(sdpa=True)),
    ("multihead", flex(f64=True)),
    ("multihead", flex(bias=(False, False, False, False))),  # out_proj without bias
    ("multihead", flex(bias=(True, True, True, True))),
    ("multihead", flex(bias=(False, True, False, True))),
]
# graded: a one-line message naming the hint (dropout: placement, rate, rescale, independence; an instance)
ROUND_MISTAKES = [
    ("multihead", flex(place="context"), "dropout_on_output"),
    ("multihead", flex(place="x"), "dropout_on_input"),
    ("multihead", flex(place="after"), "dropout_after_out_proj"),
    ("multihead", flex(rate=0.5), "dropout_default_rate"),
    ("multihead", flex(rate=0.3), "dropout_rate_fixed"),
    ("multihead", flex(drop=lambda p: nn.Dropout()), "dropout_default_rate"),
    ("multihead", flex(drop=lambda p: nn.Dropout(1 - p)), "dropout_rate_inverted"),
    ("multihead", flex(drop=NoRescale), "dropout_not_scaled"),
    ("multihead", flex(drop=SharedMask), "dropout_mask_shared"),
    ("multihead", flex(drop=SharedHeads), "dropout_mask_shared"),
    ("multihead", flex()(3, 6, 5, 0.0, 2), "instance_not_class"),
]
