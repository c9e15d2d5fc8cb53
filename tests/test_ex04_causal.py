"""Notebook 04's exercises (the causal attention class, its additive-mask variant): solutions.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""


import torch
import torch.nn.functional as F
from _exercise_solutions import NEG_INF, with_mistake
from torch import nn


class AdditiveAttention(nn.Module):
    """04 exercise 2: the causal mask stored as an additive float buffer (0 / -inf) and added to the scores."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), NEG_INF), diagonal=1))

    def forward(self, x):
        num_tokens = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2) + self.mask[:num_tokens, :num_tokens]
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return attn_weights @ values


class CausalAttention(nn.Module):
    """A configurable single head; each flag plants one mistake."""

    mistake = None

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout
        self.context_length = context_length
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        m = self.mistake
        b, num_tokens, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        n = self.context_length if m == "mask_wrong_size" else num_tokens
        mask = self.mask.bool()[:n, :n]
        if m == "diagonal_masked":
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool))
        if m != "future_open":
            attn_scores = attn_scores.masked_fill(mask, NEG_INF)
        d_k = keys.shape[-1]
        scale = {"scale_missing": 1.0, "scale_twice": d_k}.get(m, d_k**0.5)
        attn_weights = torch.softmax(attn_scores / scale, dim=1 if m == "softmax_dim" else -1)
        if m == "dropout_in_eval":
            attn_weights = F.dropout(attn_weights, self.p)
        elif m != "dropout_missing":
            attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


SOLUTIONS = {
    "additive_attention": AdditiveAttention,
    "causal_attention": CausalAttention,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("causal_attention", with_mistake(CausalAttention, "diagonal_masked"), "diagonal_masked"),
    ("causal_attention", with_mistake(CausalAttention, "future_open"), "future_open"),
    ("causal_attention", with_mistake(CausalAttention, "softmax_dim"), "softmax_dim"),
    ("causal_attention", with_mistake(CausalAttention, "scale_missing"), "scale_missing"),
    ("causal_attention", with_mistake(CausalAttention, "scale_twice"), "scale_twice"),
    ("causal_attention", with_mistake(CausalAttention, "mask_wrong_size"), "mask_wrong_size"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_in_eval"), "dropout_in_eval"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_missing"), "dropout_missing"),
]
