"""Notebook 00: sliding-window causal weights, the lesson's causal softmax with a window of the recent past."""

from __future__ import annotations

import torch

from ._core import Exercise, Fail, as_tensor, compare, same, shape_str
from ._shared import HELPERS, call_unchanged, gen

NEG_INF = float("-inf")


def band(num_tokens: int, lo: int, hi: int) -> torch.Tensor:
    """Bool (T, T), True where key j is visible to query i: i - lo <= j <= i + hi."""
    i = torch.arange(num_tokens).unsqueeze(-1)
    j = torch.arange(num_tokens)
    return (j >= i - lo) & (j <= i + hi)


def softmax_where(attn_scores: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    return torch.softmax(attn_scores.double().masked_fill(~visible, NEG_INF), dim=-1).float()


def window_weights_reference(attn_scores: torch.Tensor, window: int) -> torch.Tensor:
    """Row i: a softmax over keys i - window + 1 .. i (the token and the window - 1 before it), 0 elsewhere."""
    return softmax_where(attn_scores, band(attn_scores.shape[-1], window - 1, 0))


def _mistakes(s: torch.Tensor, window: int) -> list:
    t = s.shape[-1]
    causal = band(t, t, 0)
    return [
        ("window_ignored", lambda: softmax_where(s, causal)),
        ("window_too_wide", lambda: softmax_where(s, band(t, window, 0))),
        ("window_too_narrow", lambda: softmax_where(s, band(t, window - 2, 0))),
        ("window_sees_future", lambda: softmax_where(s, band(t, window - 1, window - 1))),
        ("window_not_renormalized", lambda: softmax_where(s, causal) * band(t, window - 1, 0)),
        ("future_open", lambda: torch.softmax(s, dim=-1)),
        ("window_inverted", lambda: softmax_where(s, ~band(t, window - 1, 0)).nan_to_num(0.0)),
        ("window_inverted", lambda: softmax_where(s, ~band(t, window - 1, 0))),
    ]


def _excludes_self(out: torch.Tensor, s: torch.Tensor, window: int) -> bool:
    """Only the diagonal is wrong: each row (after the first, which has no other key) spreads over its window
    without the token itself (the window - 1 keys before it, or the window keys before it)."""
    t = s.shape[-1]
    if out.shape != s.shape or t < 2 or window < 2 or not bool((out.diagonal()[1:].abs() < 1e-6).all()):
        return False
    no_self = ~torch.eye(t, dtype=torch.bool)
    return any(same(out[1:], softmax_where(s, band(t, lo, 0) & no_self)[1:]) for lo in (window - 1, window))


def body_window_weights(fn) -> list[str]:
    g = gen(7)
    cases = []
    for num_tokens, window in ((6, 2), (8, 3), (5, 1), (4, 10), (7, 7)):
        case = f"attn_scores.shape=({num_tokens}, {num_tokens}), window={window}"
        s = torch.randn(num_tokens, num_tokens, generator=g) * 2
        out = as_tensor(call_unchanged(fn, s, window, names=("attn_scores", "window"), case=case), case)
        want = window_weights_reference(s, window)
        if _excludes_self(out, s, window):
            raise Fail("window_excludes_self", case=case)
        compare(out, want, case, _mistakes(s, window))
        cases.append(f"{shape_str(s.shape)} w={window}")
    return cases


_MESSAGES = {
    "window_ignored": {
        "en": "{title}: every row spreads over all its past, the window is not applied (input: {case}).",
        "zh": "{title}：每一行都分给了它的全部过去，窗口没有起作用（输入：{case}）。",
    },
    "window_too_wide": {
        "en": "{title}: each row sees window + 1 keys, one too many (input: {case}).",
        "zh": "{title}：每一行看到了 window + 1 个键，多了一个（输入：{case}）。",
    },
    "window_too_narrow": {
        "en": "{title}: each row sees window - 1 keys, one too few: the token itself counts (input: {case}).",
        "zh": "{title}：每一行只看到 window - 1 个键，少了一个：词元自己也算在窗口里（输入：{case}）。",
    },
    "window_excludes_self": {
        "en": "{title}: the diagonal is 0: a token must see itself, the last key of its window (input: {case}).",
        "zh": "{title}：对角线是 0：词元必须看得到它自己，它是窗口里的最后一个键（输入：{case}）。",
    },
    "window_inverted": {
        "en": "{title}: the mask is inverted (input: {case}): the weight falls on the keys outside the window, and the window itself (the token and the window - 1 before it) gets 0.",  # noqa: E501
        "zh": "{title}：遮蔽反了（输入：{case}）：权重落在了窗口之外的键上，窗口本身（词元自己和它之前的 window - 1 个）却是 0。",  # noqa: E501
    },
    "window_sees_future": {
        "en": "{title}: the window reaches into the future: keys after the query get weight (input: {case}).",
        "zh": "{title}：窗口伸进了未来：查询之后的键也得到了权重（输入：{case}）。",
    },
    "window_not_renormalized": {
        "en": "{title}: the rows do not sum to 1: the softmax ran over the whole past, then the keys outside the "
        "window were zeroed (input: {case}).",
        "zh": "{title}：各行之和不是 1：softmax 作用在整个过去上，之后才把窗口外的键置零（输入：{case}）。",
    },
}
_FIXES = {
    "window_ignored": {
        "en": "Row i uses only keys `max(0, i - window + 1)` to `i`.",
        "zh": "第 i 行只用从 `max(0, i - window + 1)` 到 `i` 的键。",
    },
    "window_too_wide": {
        "en": "Start row i at `max(0, i - window + 1)`, not `i - window`.",
        "zh": "第 i 行从 `max(0, i - window + 1)` 开始，而不是 `i - window`。",
    },
    "window_too_narrow": {
        "en": "Row i ends at key `i` itself: `scores[i, start : i + 1]`.",
        "zh": "第 i 行以键 `i` 自己结尾：`scores[i, start : i + 1]`。",
    },
    "window_sees_future": {
        "en": "Keep the window on one side: keys j with `i - window < j <= i`.",
        "zh": "窗口只在一侧：只保留满足 `i - window < j <= i` 的键 j。",
    },
    "window_inverted": {
        "en": "Hide what is outside the window: `scores.masked_fill(~visible, float('-inf'))` with `visible` True for keys `i - window < j <= i`.",  # noqa: E501
        "zh": "遮住窗口之外的位置：`scores.masked_fill(~visible, float('-inf'))`，其中 `visible` 在 `i - window < j <= i` 的键上为 True。",  # noqa: E501
    },
    "window_excludes_self": {
        "en": "Slice up to and including i: `scores[i, start : i + 1]`.",
        "zh": "切片要包含 i 本身：`scores[i, start : i + 1]`。",
    },
    "window_not_renormalized": {
        "en": "Take the softmax of the window's scores only: `torch.softmax(scores[i, start : i + 1], dim=0)`.",
        "zh": "只对窗口内的分数做 softmax：`torch.softmax(scores[i, start : i + 1], dim=0)`。",
    },
}

RECORDS = [
    Exercise(
        name="window_weights",
        notebook="00",
        body=body_window_weights,
        points=2,
        takes="function",
        signature="``fn(attn_scores (T, T), window) -> (T, T)``: row i a softmax over keys i - window + 1 .. i, "
        "0 elsewhere.",
        hints=(*_MESSAGES, "future_open", "input_modified"),
        # the checker's own helpers compute the answer: handing one in (or calling it) is the reference
        references=("exercises._ex00_window.window_weights_reference", "exercises._ex00_window.softmax_where")
        + HELPERS,
        messages=_MESSAGES,
        fixes=_FIXES,
    ),
]
