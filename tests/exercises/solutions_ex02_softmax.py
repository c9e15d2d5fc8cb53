"""Notebook 02's exercises (causal weights on packed documents, the causal softmax with padding): solutions,
planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch
from _exercise_solutions import NEG_INF, _triu


def packed_weights(queries, keys, doc_ids):
    """Written as a loop over the keys' documents, unlike the notebook's one comparison of doc_ids."""
    t = keys.shape[-2]
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    same_doc = torch.stack([doc_ids == doc_ids[..., j : j + 1] for j in range(t)], dim=-1)  # (..., T, T)
    visible = same_doc & torch.ones(t, t, dtype=torch.bool).tril()
    return torch.softmax(torch.where(visible, scores, NEG_INF), dim=-1)


def causal_softmax(attn_scores, key_padding_mask):
    t = attn_scores.shape[-1]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask.unsqueeze(-2)
    weights = torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)
    return weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)


def packed_factory(scale="ok", dim=-1, mask="ok", fill=NEG_INF, keys_t=False, docs="ok"):
    def fn(queries, keys, doc_ids):
        kt = keys.T if keys_t else keys.transpose(-2, -1)
        s = queries @ kt
        t, d = s.shape[-1], keys.shape[-1]
        s = {"ok": s / d**0.5, "none": s, "twice": s / d, "T": s / t**0.5, "inverted": s * d**0.5}[scale]
        ids = doc_ids.reshape(-1, t)[0] if docs == "first" else doc_ids
        other = ids[..., :, None] != ids[..., None, :]
        if docs == "axis":  # doc_ids[:, None]: fine for one sequence, (B, B, T) for a batch
            other = ids[:, None] != ids[None, :]
        hide = {"ok": _triu(t, 1), "diag": _triu(t, 0), "none": torch.zeros(t, t, dtype=torch.bool)}[mask]
        if docs != "ignored":
            hide = hide | other
        return torch.softmax(s.masked_fill(hide, fill), dim=dim)

    return fn


def packed_masked_after_softmax(queries, keys, doc_ids):
    w = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)
    return w.masked_fill(_triu(w.shape[-1], 1) | (doc_ids[..., :, None] != doc_ids[..., None, :]), 0.0)


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


def causal_softmax_where(attn_scores, key_padding_mask):
    t = attn_scores.shape[-1]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask[:, None, :]
    scores = torch.where(hidden, torch.full_like(attn_scores, NEG_INF), attn_scores).double()
    weights = torch.softmax(scores, dim=-1)
    return torch.where(hidden.all(-1, keepdim=True), torch.zeros_like(weights), weights).float()


def softmax_zero_padded_queries(attn_scores, key_padding_mask):
    return causal_softmax(attn_scores, key_padding_mask).masked_fill(key_padding_mask[:, :, None], 0.0)


SOLUTIONS = {
    "packed_weights": packed_weights,
    "causal_softmax": causal_softmax,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("packed_weights", packed_factory(docs="ignored"), "documents_ignored"),
    ("packed_weights", packed_factory(dim=-2), "softmax_dim"),
    ("packed_weights", packed_factory(scale="none"), "scale_missing"),
    ("packed_weights", packed_factory(scale="twice"), "scale_twice"),
    ("packed_weights", packed_factory(scale="inverted"), "scale_inverted"),
    ("packed_weights", packed_factory(scale="T"), "scale_uses_T"),
    ("packed_weights", packed_factory(mask="diag"), "diagonal_masked"),
    ("packed_weights", packed_factory(mask="none"), "future_open"),
    ("packed_weights", packed_factory(fill=0.0), "masked_with_zero"),
    ("packed_weights", packed_masked_after_softmax, "not_renormalized"),
    ("packed_weights", packed_factory(keys_t=True), "batch_dims"),
    ("packed_weights", packed_factory(docs="first"), "batch_dims"),
    ("packed_weights", packed_factory(docs="axis"), "batch_dims"),
    ("causal_softmax", softmax_nan, "nan_rows"),
    ("causal_softmax", softmax_big_negative, "fully_masked_not_zero"),
    ("causal_softmax", softmax_no_padding, "padding_ignored"),
    ("causal_softmax", softmax_rows, "padding_wrong_axis"),
]
CORRECT_BUT_DIFFERENT = [("causal_softmax", causal_softmax_where)]
# right padding: the padded queries' rows zeroed too
ROUND_MISTAKES = [("causal_softmax", softmax_zero_padded_queries, "padded_queries_zeroed")]
