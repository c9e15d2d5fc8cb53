"""Notebook 01: the causal mask and the manual renormalization."""

from __future__ import annotations

import torch

from ..masks import causal_mask
from ._core import Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same, shape_str
from ._harness import call, last_observed
from ._observe import called_matching
from ._shared import call_unchanged, gen, sizes, tril, triu, unless_reference


def body_causal_mask(fn) -> list[str]:
    cases = []
    for t in sizes((5, 1, 9, 2), high=16, seed=100):
        case = f"num_tokens={t}"
        try:  # observed: SDPA reached from C (``map``) is not a Python call the watch sees, but it is a torch op
            out = as_tensor(call(fn, t, case=case, observe=True), case)
        finally:
            sdpa = called_matching(last_observed(), "scaled_dot_product")
            if sdpa:
                raise Fail("uses_torch_mask", ref=sdpa, case=case)
        want = causal_mask(t)
        as_bool = out if out.dtype == torch.bool else out != 0
        if out.dtype != torch.bool and same(as_bool, want):
            raise Fail("mask_not_bool", got=str(out.dtype), case=case)
        mistakes = [
            ("diagonal_masked", lambda t=t: triu(t, 0)),
            ("mask_inverted", lambda t=t: tril(t, 0)),
            ("mask_transposed", lambda t=t: tril(t, -1)),
            ("future_open", lambda t=t: torch.zeros(t, t, dtype=torch.bool)),
        ]
        diagnose(as_bool, mistakes, want, case=case)
        compare(out, want, case)
        cases.append(f"T={t}")
    return cases


def _renormalized(w: torch.Tensor, keep: torch.Tensor, dim: int = -1) -> torch.Tensor:
    masked = w * keep
    return masked / masked.sum(dim=dim, keepdim=True)


def _keep(q_len: int, k_len: int, diagonal: int) -> torch.Tensor:
    """Bool ``(q_len, k_len)``, True on and below the given diagonal (``torch.tril``'s numbering)."""
    return torch.tril(torch.ones(q_len, k_len, dtype=torch.bool), diagonal=diagonal)


def _renorm_mistakes(w: torch.Tensor) -> list:
    """Known wrong answers on ``w`` ``(..., Tq, Tk)``, the rows of the last ``Tq`` queries: row ``r`` is the query
    at position ``Tk - Tq + r``, so the right mask keeps keys up to the diagonal ``Tk - Tq``."""
    q_len, k_len = w.shape[-2:]
    shift = k_len - q_len
    keep = _keep(q_len, k_len, shift)
    mistakes = []
    if shift:
        mistakes += [
            ("mask_top_left", lambda: _renormalized(w, _keep(q_len, k_len, 0))),  # the lesson's tril, unshifted
            ("mask_square_only", lambda: _renormalized(w, _keep(k_len, k_len, 0))),  # tril(Tk, Tk): broadcast rows
        ]
    return mistakes + [
        ("column_sums", lambda: _renormalized(w, keep, dim=-2)),
        ("not_renormalized", lambda: w * keep),
        ("sum_over_all", lambda: (w * keep) / (w * keep).sum()),
        ("future_open", lambda: w),
        ("diagonal_masked", lambda: _renormalized(w, _keep(q_len, k_len, shift - 1))),
        ("mask_inverted", lambda: _renormalized(w, ~_keep(q_len, k_len, shift))),
        ("mask_transposed", lambda: _renormalized(w, ~_keep(q_len, k_len, shift - 1))),
    ]


# the square cases first (the lesson's), then the rows of the last queries (q_len < k_len)
RENORMALIZE_SHAPES = ((5, 5), (1, 1), (8, 8), (2, 6, 6), (2, 3, 4, 4), (2, 6), (1, 7), (2, 3, 5), (2, 2, 3, 6))


def body_renormalize(fn) -> list[str]:
    g = gen(101)
    cases = []
    for shape in RENORMALIZE_SHAPES:
        case = f"attn_weights.shape={shape_str(shape)}"
        w = torch.softmax(torch.randn(*shape, generator=g), dim=-1)
        batched, last_rows = len(shape) > 2, shape[-2] < shape[-1]
        try:
            out = call_unchanged(fn, w, names=("attn_weights",), case=case)
        except LearnerError:
            if last_rows:  # every square case passed: the rows of the last queries are the problem
                unless_reference(Fail("mask_square_only", case=case))
                return cases  # llm_lab's square mask_and_renormalize ran: the check reports "reference"
            if batched:  # every single-matrix case passed: the batch dimensions are the problem
                raise Fail("batch_dims", case=case) from None
            raise
        want = _renormalized(w, _keep(shape[-2], shape[-1], shape[-1] - shape[-2]))
        mistakes = _renorm_mistakes(w)
        if batched:
            keep = _keep(shape[-2], shape[-1], shape[-1] - shape[-2])
            mistakes = [
                ("batch_dims", lambda d=d, w=w, keep=keep: _renormalized(w, keep, dim=d)) for d in range(len(shape) - 1)
            ] + mistakes
        compare(out, want, case, mistakes)
        cases.append(shape_str(shape))
    return cases


# This module's own hint texts (used by no other exercise): every record below gets them (_registry).
MODULE_MESSAGES = {
    "mask_not_bool": {
        "en": "{title}: the pattern is right but the dtype is {got}; `masked_fill` needs a bool mask.",
        "zh": "{title}：位置是对的，但数据类型是 {got}；`masked_fill` 需要布尔类型的遮蔽矩阵。",
    },
    "uses_torch_mask": {
        "en": "{title}: calls {ref}, torch's ready-made causal mask, which is not allowed here; the exercise is to build the mask yourself. Compare with it after the check.",  # noqa: E501
        "zh": "{title}：调用了 {ref}，这是 torch 现成的因果遮蔽（causal mask），这里不允许使用；这个练习要你自己构造遮蔽矩阵。检查通过后再拿它来对照。",  # noqa: E501
    },
    "mask_top_left": {
        "en": "{title}: your mask keeps the top-left triangle (input: {case}), as if row 0 were the query at position 0. These are the rows of the last Tq queries: row r is the query at position Tk - Tq + r, so it sees keys 0 ... Tk - Tq + r.",  # noqa: E501
        "zh": "{title}：你的遮蔽保留的是左上角的三角（输入：{case}），好像第 0 行是位置 0 上的查询。这些是最后 Tq 个查询的行：第 r 行是位置 Tk - Tq + r 上的查询，它能看到键 0 … Tk - Tq + r。",  # noqa: E501
    },
    "mask_square_only": {
        "en": "{title}: your function works on square weights but not on the rows of the last queries (input: {case}): the mask must have Tq rows and Tk columns, `attn_weights.shape[-2]` and `attn_weights.shape[-1]`.",  # noqa: E501
        "zh": "{title}：你的函数对方阵形状的权重是对的，但对最后几个查询的行不对（输入：{case}）：遮蔽矩阵要有 Tq 行、Tk 列，即 `attn_weights.shape[-2]` 和 `attn_weights.shape[-1]`。",  # noqa: E501
    },
    "column_sums": {
        "en": "{title}: you renormalized by column sums (input: {case}). Each row (one query) must sum to 1.",
        "zh": "{title}：你用列和做了重新归一化（输入：{case}）。每一行（一个查询）的和应为 1。",
    },
    "sum_over_all": {
        "en": "{title}: you divided by the sum of the whole matrix (input: {case}); each row needs its own sum.",
        "zh": "{title}：你除以的是整个矩阵的和（输入：{case}）；每一行应当除以它自己的和。",
    },
}
MODULE_FIXES = {
    "uses_torch_mask": {
        "en": "Build it from `torch.ones(..., dtype=torch.bool)` with `torch.triu` (or `torch.tril`), as the lesson does.",  # noqa: E501
        "zh": "像课上那样，用 `torch.triu`（或 `torch.tril`）从 `torch.ones(..., dtype=torch.bool)` 构造它。",
    },
    "mask_not_bool": {
        "en": "Build it with `torch.ones(..., dtype=torch.bool)` (or add `.bool()`).",
        "zh": "用 `torch.ones(..., dtype=torch.bool)` 构造（或者加上 `.bool()`）。",
    },
    "mask_top_left": {
        "en": "`torch.tril` takes `diagonal=`: with `diagonal=Tk - Tq` row r keeps keys 0 ... Tk - Tq + r.",
        "zh": "`torch.tril` 有参数 `diagonal=`：取 `diagonal=Tk - Tq` 时，第 r 行保留键 0 … Tk - Tq + r。",
    },
    "mask_square_only": {
        "en": "Build the mask from `q_len, k_len = attn_weights.shape[-2:]`, a `(q_len, k_len)` triangle.",
        "zh": "用 `q_len, k_len = attn_weights.shape[-2:]` 构造一个 `(q_len, k_len)` 的三角遮蔽。",
    },
    "column_sums": {
        "en": "Divide by `masked.sum(dim=-1, keepdim=True)`.",
        "zh": "请除以 `masked.sum(dim=-1, keepdim=True)`。",
    },
    "sum_over_all": {
        "en": "Use `masked.sum(dim=-1, keepdim=True)`.",
        "zh": "请用 `masked.sum(dim=-1, keepdim=True)`。",
    },
}


RECORDS = [
    Exercise(
        name="causal_mask",
        notebook="01",
        body=body_causal_mask,
        points=1,
        takes="function",
        signature="``fn(num_tokens) -> bool (T, T)``, True strictly above the diagonal (the hidden future).",
        hints=(
            "diagonal_masked",
            "mask_inverted",
            "mask_transposed",
            "future_open",
            "mask_not_bool",
            "uses_torch_mask",
        ),
        references=("masks.causal_mask", "exercises._shared.triu", "exercises._shared.tril"),
        # torch's own ready-made causal masks (torch.triu/torch.tril, which the lesson teaches, stay allowed)
        forbidden=(
            ("torch.nn", "Transformer.generate_square_subsequent_mask", "uses_torch_mask"),
            ("torch.nn.modules.transformer", "_generate_square_subsequent_mask", "uses_torch_mask"),
            ("torch.nn.attention.bias", "causal_upper_left", "uses_torch_mask"),
            ("torch.nn.attention.bias", "causal_lower_right", "uses_torch_mask"),
            ("torch.nn.attention.bias", "CausalBias._materialize", "uses_torch_mask"),
            ("torch.nn.attention.bias", "CausalBias._upper_left", "uses_torch_mask"),
            ("torch.nn.attention.bias", "CausalBias._lower_right", "uses_torch_mask"),
            # SDPA with is_causal applies the same mask, which zeros and the identity read off
            ("torch.nn.functional", "scaled_dot_product_attention", "uses_torch_mask"),
            ("torch._C._nn", "scaled_dot_product_attention", "uses_torch_mask"),
        ),
    ),
    Exercise(
        name="renormalize",
        notebook="01",
        body=body_renormalize,
        points=2,
        takes="function",
        signature=(
            "``fn(attn_weights (..., Tq, Tk)) -> (..., Tq, Tk)``, the rows of the last Tq <= Tk queries: zero each "
            "row's future, divide each row by its sum."
        ),
        hints=(
            "mask_top_left",
            "mask_square_only",
            "column_sums",
            "not_renormalized",
            "sum_over_all",
            "future_open",
            "diagonal_masked",
            "mask_inverted",
            "mask_transposed",
            "batch_dims",
            "input_modified",
        ),
        references=("masks.mask_and_renormalize", "exercises._ex01_masks._renormalized"),
    ),
]
