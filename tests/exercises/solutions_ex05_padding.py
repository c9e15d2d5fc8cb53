"""Notebook 05's padded-heads exercise (llm_lab/exercises/_ex05_padding.py): the solution, padded attention with
switches, the mistakes it names.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch
from _exercise_solutions import NEG_INF, _triu


def padded_attention(queries, keys, values, key_padding_mask):
    t = queries.shape[-2]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask[:, None, None, :]
    scores = (queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5).masked_fill(hidden, NEG_INF)
    weights = torch.softmax(scores, dim=-1).masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)
    return weights @ values


SOLUTIONS = {"padded_attention": padded_attention}
PLANTED = []  # (exercise, wrong implementation, hint): none here; the mistakes are PADDED_HINTS below


def padded(
    queries,
    keys,
    values,
    key_padding_mask,
    *,
    mask_index=(slice(None), None, None, slice(None)),
    num_tokens=None,
    keys_t=(-2, -1),
    diagonal=1,
    scale=None,
    zero_padded_queries=False,
    inplace=False,
):
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


def padded_factory(pad_axis="keys", zero_rows=True, causal=True, fill=NEG_INF):
    def fn(queries, keys, values, key_padding_mask):
        t = queries.shape[-2]
        pad = {
            "keys": key_padding_mask[:, None, None, :],
            "heads": key_padding_mask[:, None, :],
            "queries": key_padding_mask[:, None, :, None],
            "none": torch.zeros(t, dtype=torch.bool),
        }[pad_axis]
        hidden = (_triu(t, 1) if causal else torch.zeros(t, t, dtype=torch.bool)) | pad
        w = torch.softmax((queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5).masked_fill(hidden, fill), -1)
        return (w.masked_fill(hidden.all(-1, keepdim=True), 0.0) if zero_rows else w) @ values

    return fn


CORRECT_BUT_DIFFERENT = [("padded_attention", padded_attention)]
# graded in both languages: the transfer exercise, padded multi-head attention
TRANSFER_MISTAKES = [
    ("padded_attention", padded_factory(zero_rows=False), "nan_rows"),
    ("padded_attention", padded_factory(pad_axis="none"), "padding_ignored"),
    ("padded_attention", padded_factory(pad_axis="heads"), "padding_heads_axis"),
    ("padded_attention", padded_factory(pad_axis="queries"), "padding_wrong_axis"),
    ("padded_attention", padded_factory(causal=False), "future_open"),
    ("padded_attention", padded_factory(fill=-1e9, zero_rows=False), "fully_masked_not_zero"),
]
