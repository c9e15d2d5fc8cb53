"""Notebook 02: the -inf trick, scaled scores, key padding and fully masked rows."""

from __future__ import annotations

import torch

from ..masks import causal_mask, causal_softmax
from ._core import Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same, shape_str
from ._shared import HELPERS, call_unchanged, gen, softmax_masked, triu, weights_variants


def body_attention_weights(fn) -> list[str]:
    g = gen(202)
    cases = []
    for q_shape, k_shape in (((5, 4), (5, 4)), ((1, 3), (1, 3)), ((7, 2), (7, 2)), ((3, 16), (3, 16)),
                             ((2, 6, 8), (2, 6, 8))):
        case = f"queries.shape={shape_str(q_shape)}, keys.shape={shape_str(k_shape)}"
        q, k = torch.randn(*q_shape, generator=g), torch.randn(*k_shape, generator=g)
        want = causal_softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5)
        batched = len(q_shape) > 2
        try:
            out = call_unchanged(fn, q, k, names=("queries", "keys"), case=case)
        except LearnerError:
            if batched:
                raise Fail("batch_dims", case=case) from None
            raise
        variants = weights_variants(q, k)
        if batched:  # keys.T / transpose(0, 1) on a batch
            variants.insert(0, ("batch_dims", lambda q=q, k=k: causal_softmax(q @ k.transpose(0, 1)
                                                                              / k.shape[-1] ** 0.5)))
        compare(out, want, case, variants)
        cases.append(shape_str(q_shape))
    return cases


# Left padding (the first keys are padding) and right padding (the last ones): zeroing the rows of padded
# queries coincides with the reference under left padding only, so both layouts are needed.
PADDINGS = (
    [[False] * 5, [True, True, False, False, False]],
    [[False]],
    [[True]],
    [[False, False, True, True]],
    [[True, False, False, False, False, False], [False] * 6, [True, True, True, False, False, False]],
    [[False, False, False, True, True, True], [False] * 5 + [True], [True, True, False, False, True, True]],
)


def _zero_rows(w, hid):
    return w.masked_fill(hid.all(dim=-1, keepdim=True), 0.0)


def _softmax_variants(scores: torch.Tensor, kpm: torch.Tensor) -> list:
    b, t = kpm.shape
    causal = causal_mask(t)
    hidden = causal | kpm.unsqueeze(-2)
    wrong_axis = causal | kpm.unsqueeze(-1)
    pad_only = kpm.unsqueeze(-2).expand(b, t, t)
    with_diag = triu(t, 0) | kpm.unsqueeze(-2)
    ref = causal_softmax(scores, kpm)
    return [
        ("nan_rows", lambda: softmax_masked(scores, hidden)),
        ("padding_ignored", lambda: causal_softmax(scores)),
        ("padded_queries_zeroed", lambda: ref.masked_fill(kpm.unsqueeze(-1), 0.0)),
        ("padded_queries_zeroed", lambda: _zero_rows(softmax_masked(scores, hidden), hidden)
         .masked_fill(kpm.unsqueeze(-1), 0.0)),
        ("padding_wrong_axis", lambda: _zero_rows(softmax_masked(scores, wrong_axis), wrong_axis)),
        ("padding_wrong_axis", lambda: softmax_masked(scores, wrong_axis)),
        ("future_open", lambda: _zero_rows(softmax_masked(scores, pad_only), pad_only)),
        ("diagonal_masked", lambda: _zero_rows(softmax_masked(scores, with_diag), with_diag)),
    ]


def body_causal_softmax(fn) -> list[str]:
    g = gen(303)
    cases = []
    for pad in PADDINGS:
        kpm = torch.tensor(pad)
        b, t = kpm.shape
        case = f"attn_scores.shape={shape_str((b, t, t))}, key_padding_mask={pad}"
        scores = torch.randn(b, t, t, generator=g)
        want = causal_softmax(scores, kpm)  # the reference broadcasts kpm as (B, 1, T): one row per sequence
        out = as_tensor(call_unchanged(fn, scores, kpm, names=("attn_scores", "key_padding_mask"), case=case), case)
        rows_hidden = (causal_mask(t) | kpm.unsqueeze(-2)).all(dim=-1)  # (B, T)
        if not same(out, want):
            diagnose(out, _softmax_variants(scores, kpm), want, case=case)
            if out.shape == want.shape and rows_hidden.any() and same(out[~rows_hidden], want[~rows_hidden]):
                raise Fail("nan_rows" if out[rows_hidden].isnan().any() else "fully_masked_not_zero", case=case)
        compare(out, want, case)
        cases.append(shape_str((b, t, t)))
    return cases


RECORDS = [
    Exercise(
        name="attention_weights", notebook="02", body=body_attention_weights, points=2, takes="function",
        signature="``fn(queries (..., T, d_k), keys (..., T, d_k)) -> (..., T, T)``: scaled, -inf masked, "
        "softmaxed.",
        hints=("softmax_dim", "scale_missing", "scale_twice", "scale_inverted", "scale_uses_T", "diagonal_masked",
               "future_open", "mask_inverted", "mask_transposed", "masked_with_zero", "not_renormalized",
               "batch_dims", "input_modified"),
        references=("masks.causal_softmax",) + HELPERS,
    ),
    Exercise(
        name="causal_softmax", notebook="02", body=body_causal_softmax, points=3, takes="function",
        signature="``fn(attn_scores (B, T, T), key_padding_mask bool (B, T)) -> (B, T, T)``; fully masked rows "
        "are zeros.",
        hints=("nan_rows", "padding_ignored", "padded_queries_zeroed", "padding_wrong_axis", "future_open",
               "diagonal_masked", "fully_masked_not_zero", "input_modified"),
        references=("masks.causal_softmax",) + HELPERS,
    ),
]
