"""Notebook 01's exercises (the causal mask, mask-and-renormalize for the rows of the last queries): a correct
solution, planted mistakes, and the lesson's own square answer, which the transfer exercise must reject.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch
from _exercise_solutions import _triu


def causal_mask(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


def renormalize(attn_weights):
    q_len, k_len = attn_weights.shape[-2:]
    masked = attn_weights * torch.tril(torch.ones(q_len, k_len), diagonal=k_len - q_len)
    return masked / masked.sum(dim=-1, keepdim=True)


def renormalize_masked_fill(attn_weights):  # the hidden keys filled with 0, the rows divided in place of a product
    q_len, k_len = attn_weights.shape[-2:]
    future = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
    masked = attn_weights.masked_fill(future, 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)


def renorm_lesson(attn_weights):  # the lesson's cell: a (T, T) triangle of the keys' count
    t = attn_weights.shape[-1]
    masked = attn_weights * torch.tril(torch.ones(t, t))
    return masked / masked.sum(dim=-1, keepdim=True)


def renorm_top_left(attn_weights):  # the lesson's tril with both sizes, not shifted: row 0 taken as position 0
    masked = attn_weights * torch.tril(torch.ones(attn_weights.shape[-2], attn_weights.shape[-1]))
    return masked / masked.sum(dim=-1, keepdim=True)


def mask_diag(n):
    return _triu(n, 0)


def mask_keep(n):
    return torch.tril(torch.ones(n, n))  # the book's keep-mask: visible positions, float


def mask_past(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool), -1)


def mask_float(n):
    return torch.triu(torch.ones(n, n), 1)


def mask_open(n):
    return torch.zeros(n, n, dtype=torch.bool)


def mask_by_torch(n):
    return torch.nn.Transformer.generate_square_subsequent_mask(n) != 0  # torch's ready-made mask: not the work


def mask_by_bias(n):
    from torch.nn.attention.bias import causal_upper_left

    return ~causal_upper_left(n, n)._materialize()


def mask_by_bias_method(n):  # the private method behind _materialize, on a CausalBias built by hand
    from torch.nn.attention.bias import CausalBias, CausalVariant

    return ~CausalBias(CausalVariant.UPPER_LEFT, n, n)._upper_left("cpu")


def mask_by_sdpa(n):  # read off SDPA's own causal mask: attention of zeros over the identity's rows
    import torch.nn.functional as F

    eye = torch.eye(n).view(1, 1, n, n)
    zeros = torch.zeros(1, 1, n, 1)
    return (F.scaled_dot_product_attention(zeros, zeros, eye, is_causal=True) == 0).view(n, n)


def mask_by_sdpa_from_c(n):  # the same, SDPA called by map (from C: no Python call the watch's hook sees)
    import torch.nn.functional as F

    eye, zeros = torch.eye(n).view(1, 1, n, n), torch.zeros(1, 1, n, 1)
    (out,) = map(F.scaled_dot_product_attention, [zeros], [zeros], [eye], [None], [0.0], [True])
    return (out == 0).view(n, n)


def renorm_columns(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    return masked / masked.sum(dim=-2, keepdim=True)


def renorm_none(w):
    return w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))


def renorm_dim1(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    return masked / masked.sum(dim=1, keepdim=True)


def renorm_diag(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]), -1)
    return masked / masked.sum(dim=-1, keepdim=True)


def renorm_total(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    return masked / masked.sum()


def renorm_shape0(w):
    t = w.shape[0]
    masked = w * torch.tril(torch.ones(t, t))
    return masked / masked.sum(dim=-1, keepdim=True)


SOLUTIONS = {
    "causal_mask": causal_mask,
    "renormalize": renormalize,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("causal_mask", mask_diag, "diagonal_masked"),
    ("causal_mask", mask_keep, "mask_inverted"),
    ("causal_mask", mask_past, "mask_transposed"),
    ("causal_mask", mask_open, "future_open"),
    ("causal_mask", mask_float, "mask_not_bool"),
    ("causal_mask", mask_by_torch, "uses_torch_mask"),
    ("causal_mask", mask_by_bias, "uses_torch_mask"),
    ("causal_mask", mask_by_bias_method, "uses_torch_mask"),
    ("causal_mask", mask_by_sdpa, "uses_torch_mask"),
    ("causal_mask", mask_by_sdpa_from_c, "uses_torch_mask"),
    ("renormalize", renorm_columns, "column_sums"),
    ("renormalize", renorm_none, "not_renormalized"),
    ("renormalize", renorm_dim1, "batch_dims"),
    ("renormalize", renorm_shape0, "batch_dims"),
    ("renormalize", renorm_diag, "diagonal_masked"),
    ("renormalize", renorm_total, "sum_over_all"),
    ("renormalize", lambda w: w, "future_open"),
]
CORRECT_BUT_DIFFERENT = [("renormalize", renormalize_masked_fill)]
# graded in both languages: the transfer exercise, the rows of the last queries; the lesson's square answers fail
TRANSFER_MISTAKES = [
    ("renormalize", renorm_top_left, "mask_top_left"),
    ("renormalize", renorm_lesson, "mask_square_only"),
]
# graded: a one-line message naming the hint
ROUND_MISTAKES = [("causal_mask", causal_mask(4), "not_callable")]
