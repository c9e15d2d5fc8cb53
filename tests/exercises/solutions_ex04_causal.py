"""Notebook 04's exercises (the causal attention class, its additive-mask variant): solutions, planted mistakes, and
classes with switches that other notebooks' tests reuse.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch
import torch.nn.functional as F
from _exercise_solutions import NEG_INF, Flex, NoRescale, SharedMask, flex, with_mistake
from torch import nn

import llm_lab


def additive_class(mask=None, how="buffer", forward="add", guard=None, name="Additive"):
    """04 exercise 2's class (the causal mask stored as an additive float buffer, 0 / -inf, added to the scores),
    the one copy every test uses, with switches: the stored mask (a function of context_length), how it is stored
    (buffer, non-persistent buffer, plain attribute, nn.Parameter), how forward applies it, and ``guard``, a
    function applied to the weights right after the softmax."""

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
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            if guard is not None:
                attn_weights = guard(attn_weights)
            return self.dropout(attn_weights) @ values

    Additive.__name__ = Additive.__qualname__ = name
    return Additive


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
        scale = {"scale_missing": 1.0, "scale_twice": d_k, "scale_uses_d_in": x.shape[-1] ** 0.5}.get(m, d_k**0.5)
        attn_weights = torch.softmax(attn_scores / scale, dim=1 if m == "softmax_dim" else -1)
        if m == "dropout_in_eval":
            attn_weights = F.dropout(attn_weights, self.p)
        elif m != "dropout_missing":
            attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


SOLUTIONS = {
    "additive_attention": additive_class(name="AdditiveAttention"),
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
    ("causal_attention", with_mistake(CausalAttention, "scale_uses_d_in"), "scale_uses_d_in"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_in_eval"), "dropout_in_eval"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_missing"), "dropout_missing"),
]


CORRECT_BUT_DIFFERENT = [
    ("causal_attention", flex(sdpa=True)),
    ("causal_attention", flex(f64=True)),
    ("causal_attention", flex(bias=(True, False, True, True))),  # only some projections with a bias
    ("causal_attention", flex(drop=lambda p: nn.Dropout(p=p))),
]
# graded: a one-line message naming the hint (dropout: placement, rate, rescale, independence; an instance)
ROUND_MISTAKES = [
    ("causal_attention", flex(place="context"), "dropout_on_output"),
    ("causal_attention", flex(place="x"), "dropout_on_input"),
    ("causal_attention", flex(rate=0.1), "dropout_rate_fixed"),
    ("causal_attention", flex(drop=lambda p: nn.Dropout()), "dropout_default_rate"),
    ("causal_attention", flex(drop=NoRescale), "dropout_not_scaled"),
    ("causal_attention", flex(drop=SharedMask), "dropout_mask_shared"),
    ("causal_attention", flex(place="none"), "dropout_missing"),
    ("causal_attention", CausalAttention(3, 4, 6, 0.0), "instance_not_class"),
]


def _scores_dropout_class():
    """Dropout on the raw scores, before the softmax (04 and 05)."""

    class ScoresDropout(Flex):
        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = (
                layer(x).view(b, t, self.nh, self.hd).transpose(1, 2)
                for layer in (self.W_query, self.W_key, self.W_value)
            )
            attn_scores = self.dropout(q @ k.transpose(-2, -1))  # before the softmax
            attn_scores = attn_scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), NEG_INF)
            c = (torch.softmax(attn_scores / self.hd**0.5, dim=-1) @ v).transpose(1, 2).reshape(b, t, self.d_out)
            return self.out_proj(c) if self.multi else c

    return ScoresDropout


class CausalByHand(nn.Module):
    """Uses llm_lab.causal_mask as a helper: allowed, it is not the exercise's answer."""

    def __init__(self, d_in, d_out, context_length, dropout):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=False) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", llm_lab.causal_mask(context_length))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask[:t, :t], NEG_INF)
        return self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)) @ v
