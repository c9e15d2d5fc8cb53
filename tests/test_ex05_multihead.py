"""Notebook 05's exercises (split/merge heads, multi-head attention, padded heads): solutions, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""


import torch
from _exercise_solutions import NEG_INF, with_mistake
from torch import nn


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
