"""Notebook 02's exercises (scaled causal weights, the causal softmax with padding): solutions, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""

import torch
from _exercise_solutions import NEG_INF, _triu


def attention_weights(queries, keys):
    scores = queries @ keys.transpose(-2, -1)
    t = scores.shape[-1]
    scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), NEG_INF)
    return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)


def causal_softmax(attn_scores, key_padding_mask):
    t = attn_scores.shape[-1]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask.unsqueeze(-2)
    weights = torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)
    return weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)


def weights_factory(scale="ok", dim=-1, mask="ok", fill=NEG_INF, keys_t=False):
    def fn(queries, keys):
        kt = keys.T if keys_t else keys.transpose(-2, -1)
        s = queries @ kt
        t, d = s.shape[-1], keys.shape[-1]
        s = {"ok": s / d**0.5, "none": s, "twice": s / d, "T": s / t**0.5, "inverted": s * d**0.5}[scale]
        hide = {"ok": _triu(t, 1), "diag": _triu(t, 0)}.get(mask)
        if hide is not None:
            s = s.masked_fill(hide, fill)
        return torch.softmax(s, dim=dim)

    return fn


def weights_masked_after_softmax(queries, keys):
    w = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)
    return w.masked_fill(_triu(w.shape[-1], 1), 0.0)


def softmax_nan(attn_scores, key_padding_mask):
    hidden = _triu(attn_scores.shape[-1], 1) | key_padding_mask.unsqueeze(-2)
    return torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)


def softmax_big_negative(attn_scores, key_padding_mask):
    hidden = _triu(attn_scores.shape[-1], 1) | key_padding_mask.unsqueeze(-2)
    return torch.softmax(attn_scores.masked_fill(hidden, -1e9), dim=-1)


def softmax_no_padding(attn_scores, key_padding_mask):
    return torch.softmax(attn_scores.masked_fill(_triu(attn_scores.shape[-1], 1), NEG_INF), dim=-1)


def softmax_rows(attn_scores, key_padding_mask):
    hidden = _triu(attn_scores.shape[-1], 1) | key_padding_mask.unsqueeze(-1)
    weights = torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)
    return weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)


SOLUTIONS = {
    "attention_weights": attention_weights,
    "causal_softmax": causal_softmax,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("attention_weights", weights_factory(dim=-2), "softmax_dim"),
    ("attention_weights", weights_factory(scale="none"), "scale_missing"),
    ("attention_weights", weights_factory(scale="twice"), "scale_twice"),
    ("attention_weights", weights_factory(scale="inverted"), "scale_inverted"),
    ("attention_weights", weights_factory(scale="T"), "scale_uses_T"),
    ("attention_weights", weights_factory(mask="diag"), "diagonal_masked"),
    ("attention_weights", weights_factory(mask="none"), "future_open"),
    ("attention_weights", weights_factory(fill=0.0), "masked_with_zero"),
    ("attention_weights", weights_masked_after_softmax, "not_renormalized"),
    ("attention_weights", weights_factory(keys_t=True), "batch_dims"),
    ("causal_softmax", softmax_nan, "nan_rows"),
    ("causal_softmax", softmax_big_negative, "fully_masked_not_zero"),
    ("causal_softmax", softmax_no_padding, "padding_ignored"),
    ("causal_softmax", softmax_rows, "padding_wrong_axis"),
]
