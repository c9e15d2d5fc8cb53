"""Notebook 02: the -inf trick on packed documents (a causal mask with document boundaries), key padding and
fully masked rows."""

from __future__ import annotations

import torch

from ..masks import causal_mask, causal_softmax
from ._core import Diagnosis, Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same, shape_str
from ._shared import CAUSAL_WEIGHT_HINTS, HELPERS, call_unchanged, gen, softmax_masked, tril, triu

# Each case: the queries' (and keys') shape, and doc_ids, the document of every token (shape: the queries' without
# the last dimension). The ids need not increase or start at 0: equal ids make one document.
PACKED = (
    ((6, 4), [0, 0, 0, 1, 1, 1]),
    ((1, 3), [3]),
    ((5, 2), [0, 1, 2, 3, 4]),  # every token a document of its own: each sees only itself
    ((4, 16), [7, 7, 7, 7]),  # one document: plain causal weights
    ((7, 4), [5, 5, 2, 2, 2, 9, 9]),
    ((6, 4), [0, 0, 1, 1, 0, 0]),  # a document's id comes back after another: equal ids, one document, even apart
    ((2, 6, 8), [[0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 2, 2]]),  # each sequence packed its own way
    ((2, 2, 5, 4), [[[0, 0, 1, 1, 1], [0, 1, 1, 1, 1]], [[0, 0, 0, 0, 0], [3, 3, 3, 4, 4]]]),
)


def packed_hidden(doc_ids: torch.Tensor) -> torch.Tensor:
    """(..., T, T) True where query i may not see key j: the future, or another document."""
    other_doc = doc_ids.unsqueeze(-1) != doc_ids.unsqueeze(-2)
    return causal_mask(doc_ids.shape[-1]) | other_doc


def _packed_mistakes(q: torch.Tensor, k: torch.Tensor, doc_ids: torch.Tensor) -> list:
    """Wrong ways to compute the packed weights: each of the lesson's mistakes, and the documents ignored."""
    d, t = k.shape[-1], k.shape[-2]
    s = q @ k.transpose(-2, -1)
    ok = s / d**0.5
    hide = packed_hidden(doc_ids)
    other_doc = doc_ids.unsqueeze(-1) != doc_ids.unsqueeze(-2)  # (..., T, T)
    return [
        ("documents_ignored", lambda: causal_softmax(ok)),
        ("future_open", lambda: softmax_masked(ok, other_doc)),
        ("softmax_dim", lambda: softmax_masked(ok, hide, dim=-2)),
        ("scale_missing", lambda: softmax_masked(s, hide)),
        ("scale_twice", lambda: softmax_masked(s / d, hide)),
        ("scale_inverted", lambda: softmax_masked(s * d**0.5, hide)),
        ("scale_uses_T", lambda: softmax_masked(s / t**0.5, hide)),
        ("diagonal_masked", lambda: softmax_masked(ok, triu(t, 0) | other_doc)),
        ("mask_transposed", lambda: softmax_masked(ok, tril(t, -1) | other_doc)),
        ("mask_inverted", lambda: softmax_masked(ok, ~hide)),
        ("masked_with_zero", lambda: softmax_masked(ok, hide, fill=0.0)),
        ("not_renormalized", lambda: torch.softmax(ok, dim=-1).masked_fill(hide, 0.0)),
    ]


def body_packed_weights(fn) -> list[str]:
    g = gen(202)
    cases = []
    diagnosis = Diagnosis()  # a mistake is named only when it gives the learner's weights on every case
    for shape, ids in PACKED:
        doc_ids = torch.tensor(ids)
        case = f"queries.shape={shape_str(shape)}, doc_ids={ids}"
        q, k = torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)
        batched = len(shape) > 2
        try:
            out = call_unchanged(fn, q, k, doc_ids, names=("queries", "keys", "doc_ids"), case=case)
        except LearnerError:
            diagnosis.verdict(ended=True)  # an earlier wrong case is said first
            if batched:
                raise Fail("batch_dims", case=case) from None
            raise
        except Fail:
            diagnosis.verdict(ended=True)
            raise
        want = softmax_masked(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, packed_hidden(doc_ids))
        mistakes = _packed_mistakes(q, k, doc_ids)
        if batched:  # keys.T / transpose(0, 1) on a batch, or the first sequence's doc_ids for all
            hide, first = packed_hidden(doc_ids), packed_hidden(doc_ids.reshape(-1, shape[-2])[0])
            mistakes[:0] = [
                ("batch_dims", lambda q=q, k=k, h=hide: softmax_masked(q @ k.transpose(0, 1) / k.shape[-1] ** 0.5, h)),
                (
                    "batch_dims",
                    lambda q=q, k=k, h=first: softmax_masked(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, h),
                ),
            ]
        diagnosis.add(out, want, case, mistakes)
        cases.append(shape_str(shape))
    diagnosis.verdict()
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


def _softmax_mistakes(scores: torch.Tensor, kpm: torch.Tensor) -> list:
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
        (
            "padded_queries_zeroed",
            lambda: _zero_rows(softmax_masked(scores, hidden), hidden).masked_fill(kpm.unsqueeze(-1), 0.0),
        ),
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
        out = as_tensor(call_unchanged(fn, scores, kpm, names=("attn_scores", "key_padding_mask"), case=case), case)
        want = causal_softmax(scores, kpm)  # the reference broadcasts kpm as (B, 1, T): one row per sequence
        rows_hidden = (causal_mask(t) | kpm.unsqueeze(-2)).all(dim=-1)  # (B, T)
        if not same(out, want):
            diagnose(out, _softmax_mistakes(scores, kpm), want, case=case)
            if out.shape == want.shape and rows_hidden.any() and same(out[~rows_hidden], want[~rows_hidden]):
                raise Fail("nan_rows" if out[rows_hidden].isnan().any() else "fully_masked_not_zero", case=case)
        compare(out, want, case)
        cases.append(shape_str((b, t, t)))
    return cases


_PACKED_HIDDEN = "hidden = future | (doc_ids.unsqueeze(-1) != doc_ids.unsqueeze(-2))"
_PACKED_MESSAGES = {
    "documents_ignored": {
        "en": "{title}: a query still attends to the earlier documents packed into its window (input: {case}): only the future is hidden. A key whose doc_ids differs from the query's must get weight 0 too.",  # noqa: E501
        "zh": "{title}：查询仍然关注打包进同一窗口的前面的文档（输入：{case}）：只有未来被隐藏了。doc_ids 与查询不同的键，权重也必须为 0。",  # noqa: E501
    },
}
_PACKED_FIXES = {
    "documents_ignored": {
        "en": f"Hide the other documents' keys as well: `{_PACKED_HIDDEN}`, then `masked_fill(hidden, float('-inf'))`.",
        "zh": f"把其他文档的键也隐藏：`{_PACKED_HIDDEN}`，再 `masked_fill(hidden, float('-inf'))`。",
    },
    "batch_dims": {
        "en": "Count dimensions from the end: `transpose(-2, -1)`, `doc_ids.unsqueeze(-1)` and `doc_ids.unsqueeze(-2)`, so each sequence uses its own doc_ids.",  # noqa: E501
        "zh": "从末尾数维度：`transpose(-2, -1)`、`doc_ids.unsqueeze(-1)` 和 `doc_ids.unsqueeze(-2)`，这样每个序列用的是它自己的 doc_ids。",  # noqa: E501
    },
}

RECORDS = [
    Exercise(
        name="packed_weights",
        notebook="02",
        body=body_packed_weights,
        points=2,
        takes="function",
        signature="``fn(queries (..., T, d_k), keys (..., T, d_k), doc_ids int (..., T)) -> (..., T, T)``: scaled, "
        "the future and the other documents' keys -inf, softmaxed.",
        hints=(
            "documents_ignored",
            *CAUSAL_WEIGHT_HINTS,
            "batch_dims",
            "input_modified",
        ),
        references=("masks.causal_softmax",) + HELPERS,
        messages=_PACKED_MESSAGES,
        fixes=_PACKED_FIXES,
    ),
    Exercise(
        name="causal_softmax",
        notebook="02",
        body=body_causal_softmax,
        points=3,
        takes="function",
        signature="``fn(attn_scores (B, T, T), key_padding_mask bool (B, T)) -> (B, T, T)``; fully masked rows "
        "are zeros.",
        hints=(
            "nan_rows",
            "padding_ignored",
            "padded_queries_zeroed",
            "padding_wrong_axis",
            "future_open",
            "diagonal_masked",
            "fully_masked_not_zero",
            "input_modified",
        ),
        references=("masks.causal_softmax",) + HELPERS,
    ),
]
