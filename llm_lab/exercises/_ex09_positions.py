"""Notebook 09 (transfer): RoPE for tokens that start at any position, and causal attention of a chunk of new
queries on cached keys and values with RoPE (the decoding step of a RoPE model).

Both checkers hand the learner's function only tensors, ints and floats and read back a tensor, through
``_harness.call``. The layout is rotate-half (pair ``k`` = features ``k`` and ``k + hs/2``), the one notebook 09 uses.
"""

from __future__ import annotations

import torch

from ._core import Diagnosis, Exercise
from ._shared import call_unchanged, gen, sizes

BASE = 10000.0


def rope_rotate(
    x: torch.Tensor,
    start: int,
    base: float = BASE,
    *,
    layout: str = "half",
    sign: float = 1.0,
    shift: int = 0,
    reverse: bool = False,
) -> torch.Tensor:
    """``x`` ``(..., T, hs)`` at positions ``start .. start + T - 1`` rotated by RoPE (rotate-half); the keyword
    arguments compute the named mistakes: the interleaved layout, the other sense of rotation (``sign=-1``), every
    position moved by ``shift``, the frequencies in reverse order."""
    t, hs = x.shape[-2], x.shape[-1]
    theta = float(base) ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs)  # (hs / 2,)
    if reverse:
        theta = theta.flip(0)
    angles = sign * (torch.arange(t, dtype=torch.float64) + start + shift)[:, None] * theta  # (T, hs / 2)
    cos, sin = angles.cos(), angles.sin()
    xd = x.double()
    if layout == "half":
        x1, x2 = xd[..., : hs // 2], xd[..., hs // 2 :]
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    else:
        x1, x2 = xd[..., 0::2], xd[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    return out.to(x.dtype)


def _rope_mistakes(x, start, base) -> list:
    return [
        ("rope_interleaved", lambda: rope_rotate(x, start, base, layout="interleaved")),
        ("rope_wrong_sign", lambda: rope_rotate(x, start, base, sign=-1.0)),
        ("rope_positions_from_1", lambda: rope_rotate(x, start, base, shift=1)),
        ("rope_start_ignored", lambda: rope_rotate(x, 0, base)),
        ("rope_frequencies_reversed", lambda: rope_rotate(x, start, base, reverse=True)),
        ("rope_base_ignored", lambda: rope_rotate(x, start, BASE)),
    ]


def body_rope_at(fn) -> list[str]:
    g = gen(909)
    hs_a, hs_b = sizes((8, 16), 24, 910)
    cases, diag = [], Diagnosis()
    # (shape, start, base): starts of 0 and later, two bases; the first case pins each mistake on its own
    for shape, start, base in (
        ((2, 5, 2 * hs_a), 3, 500.0),
        ((1, 3, 7, 2 * hs_b), 0, 10000.0),
        ((4, 2 * hs_a), 40, 10000.0),
        ((2, 2, 6, 4), 11, 50.0),
    ):
        x = torch.randn(*shape, generator=g)
        case = f"x.shape={tuple(shape)}, start={start}, base={base}"
        out = call_unchanged(fn, x, start, base, names=("x", "start", "base"), case=case)
        diag.add(out, rope_rotate(x, start, base), case, _rope_mistakes(x, start, base), atol=1e-4)
        cases.append(f"{tuple(shape)} from {start}")
    diag.verdict()
    return cases


# ---- a chunk of new queries on a cache, with RoPE ------------------------------------------------------------


def chunk_attention(
    q, k, v, *, rotate_v=False, queries_from_0=False, top_left=False, rotate=True, keys=True, scale=True, layout="half"
) -> torch.Tensor:
    """The reference: ``q`` ``(..., Tq, hs)`` the last ``Tq`` tokens of a sequence whose keys and values ``k``, ``v``
    ``(..., Tk, hs)`` are at positions ``0 .. Tk - 1``; RoPE on queries (positions ``Tk - Tq ..``) and keys, a causal
    mask aligned at the bottom right, softmax of the scaled scores, times the values. The keywords compute the
    named mistakes."""
    tq, tk, hs = q.shape[-2], k.shape[-2], q.shape[-1]
    start = 0 if queries_from_0 else tk - tq
    if rotate:
        q = rope_rotate(q, start, layout=layout)
        if keys:
            k = rope_rotate(k, 0, layout=layout)
        if rotate_v:
            v = rope_rotate(v, 0, layout=layout)
    scores = (q.double() @ k.double().transpose(-2, -1)) / (hs**0.5 if scale else 1.0)  # (..., Tq, Tk)
    i = torch.arange(tq)[:, None] + (0 if top_left else tk - tq)
    hidden = torch.arange(tk)[None, :] > i
    return (torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1) @ v.double()).to(q.dtype)


def _chunk_mistakes(q, k, v) -> list:
    return [
        ("rope_on_values", lambda: chunk_attention(q, k, v, rotate_v=True)),
        ("rope_queries_from_0", lambda: chunk_attention(q, k, v, queries_from_0=True)),
        ("rope_mask_top_left", lambda: chunk_attention(q, k, v, top_left=True)),
        ("rope_not_applied", lambda: chunk_attention(q, k, v, rotate=False)),
        ("rope_keys_not_rotated", lambda: chunk_attention(q, k, v, keys=False)),
        ("rope_interleaved", lambda: chunk_attention(q, k, v, layout="interleaved")),
        ("scale_missing", lambda: chunk_attention(q, k, v, scale=False)),
    ]


def body_rope_chunk_attention(fn) -> list[str]:
    g = gen(919)
    tk_a, tk_b = sizes((9, 12), 20, 920)
    cases, diag = [], Diagnosis()
    # (batch dims, Tq, Tk, hs): a chunk of new queries, one new query, and a whole sequence (Tq = Tk)
    for batch, tq, tk, hs in (((2, 3), 3, tk_a, 8), ((1,), 1, tk_b, 16), ((2,), 5, 5, 4), ((1, 2), 4, tk_b, 8)):
        q = torch.randn(*batch, tq, hs, generator=g)
        k = torch.randn(*batch, tk, hs, generator=g)
        v = torch.randn(*batch, tk, hs, generator=g)
        case = f"q.shape={tuple(q.shape)}, k.shape=v.shape={tuple(k.shape)}"
        out = call_unchanged(fn, q, k, v, names=("q", "k", "v"), case=case)
        diag.add(out, chunk_attention(q, k, v), case, _chunk_mistakes(q, k, v), atol=1e-4)
        cases.append(f"Tq={tq}, Tk={tk}")
    diag.verdict()
    return cases


MODULE_MESSAGES = {
    "rope_interleaved": {
        "en": "{title}: the rotation pairs neighbouring features (2k, 2k + 1), the interleaved layout (input: {case}); this exercise uses rotate-half: pair k is features k and k + hs/2.",  # noqa: E501
        "zh": "{title}：旋转把相邻的特征 (2k, 2k + 1) 配成了一对，这是 interleaved 排布（输入：{case}）；本练习用 rotate-half：第 k 对是特征 k 和 k + hs/2。",  # noqa: E501
    },
    "rope_wrong_sign": {
        "en": "{title}: the features turn the other way, by -p·θ_k (input: {case}); RoPE's first half is x1·cos - x2·sin and its second half x2·cos + x1·sin: rotate_half(x) = [-x2, x1] times sin is added.",  # noqa: E501
        "zh": "{title}：特征转向了另一边，转的是 -p·θ_k（输入：{case}）；RoPE 的前一半是 x1·cos - x2·sin，后一半是 x2·cos + x1·sin：加上的是 rotate_half(x) = [-x2, x1] 乘以 sin。",  # noqa: E501
    },
    "rope_positions_from_1": {
        "en": "{title}: every token is rotated one position too far, as if positions counted from 1 (input: {case}); the first token of x sits at position start, rotated by start·θ_k.",  # noqa: E501
        "zh": "{title}：每个词元都多转了一个位置，就像位置从 1 开始数（输入：{case}）；x 的第一个词元在位置 start，转 start·θ_k。",  # noqa: E501
    },
    "rope_start_ignored": {
        "en": "{title}: the tokens are rotated as if they started at position 0 (input: {case}); they start at position start: token t of x is at start + t.",  # noqa: E501
        "zh": "{title}：词元被当作从位置 0 开始来旋转（输入：{case}）；它们从位置 start 开始：x 的第 t 个词元在 start + t。",  # noqa: E501
    },
    "rope_frequencies_reversed": {
        "en": "{title}: the frequencies are in reverse order, the slowest pair first (input: {case}); pair k turns by base ** (-2k / hs): pair 0 fastest, one radian per position.",  # noqa: E501
        "zh": "{title}：频率的顺序反了，最慢的一对排在最前（输入：{case}）；第 k 对转 base ** (-2k / hs)：第 0 对最快，每个位置一弧度。",  # noqa: E501
    },
    "rope_base_ignored": {
        "en": "{title}: the frequencies use base 10000 whatever base is given (input: {case}); use the base argument: θ_k = base ** (-2k / hs).",  # noqa: E501
        "zh": "{title}：不管给的 base 是多少，频率都用了 10000（输入：{case}）；请用参数 base：θ_k = base ** (-2k / hs)。",  # noqa: E501
    },
    "rope_on_values": {
        "en": "{title}: the values are rotated too (input: {case}); RoPE rotates queries and keys only, so that the scores depend on the offset; the values are mixed as they are.",  # noqa: E501
        "zh": "{title}：值也被旋转了（输入：{case}）；RoPE 只旋转查询和键，好让分数取决于偏移量；值原样参与加权。",
    },
    "rope_queries_from_0": {
        "en": "{title}: the new queries are rotated as positions 0, 1, ... (input: {case}); they are the last Tq tokens of a sequence of Tk: positions Tk - Tq .. Tk - 1, the keys' own positions.",  # noqa: E501
        "zh": "{title}：新查询被当作位置 0, 1, … 来旋转（输入：{case}）；它们是 Tk 个词元的序列里最后 Tq 个：位置 Tk - Tq … Tk - 1，和它们自己的键在同一位置。",  # noqa: E501
    },
    "rope_mask_top_left": {
        "en": "{title}: the causal mask is aligned at the top left, so new query a sees keys 0 .. a only (input: {case}); query a sits at position Tk - Tq + a and sees every key up to there.",  # noqa: E501
        "zh": "{title}：因果遮蔽对齐在左上角，于是新查询 a 只看到键 0 … a（输入：{case}）；查询 a 在位置 Tk - Tq + a，能看到到那里为止的每一个键。",  # noqa: E501
    },
    "rope_not_applied": {
        "en": "{title}: this is causal attention with no rotation at all (input: {case}); rotate the queries and the keys by RoPE before the scores.",  # noqa: E501
        "zh": "{title}：这是完全没有旋转的因果注意力（输入：{case}）；算分数之前，先用 RoPE 旋转查询和键。",
    },
    "rope_keys_not_rotated": {
        "en": "{title}: the queries are rotated but the keys are not (input: {case}); rotate both, each by its own position: only then does a score depend on the offset alone.",  # noqa: E501
        "zh": "{title}：查询旋转了，键却没有（输入：{case}）；两者都要旋转，各按自己的位置：只有这样，分数才只取决于偏移量。",  # noqa: E501
    },
}
MODULE_FIXES = {
    "rope_interleaved": {
        "en": "`x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]`, then `torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`.",  # noqa: E501
        "zh": "`x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]`，然后 `torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`。",  # noqa: E501
    },
    "rope_wrong_sign": {
        "en": "`torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`.",
        "zh": "`torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`。",
    },
    "rope_positions_from_1": {
        "en": "`positions = start + torch.arange(T)`.",
        "zh": "`positions = start + torch.arange(T)`。",
    },
    "rope_start_ignored": {
        "en": "`positions = start + torch.arange(T)`.",
        "zh": "`positions = start + torch.arange(T)`。",
    },
    "rope_frequencies_reversed": {
        "en": "`theta = base ** (-torch.arange(0, hs, 2) / hs)`: pair 0 first.",
        "zh": "`theta = base ** (-torch.arange(0, hs, 2) / hs)`：第 0 对在最前。",
    },
    "rope_base_ignored": {
        "en": "`theta = base ** (-torch.arange(0, hs, 2) / hs)` with the `base` argument.",
        "zh": "`theta = base ** (-torch.arange(0, hs, 2) / hs)`，用参数 `base`。",
    },
    "rope_on_values": {
        "en": "Rotate `q` and `k` only; multiply the weights by `v` as it is.",
        "zh": "只旋转 `q` 和 `k`；权重直接乘以原来的 `v`。",
    },
    "rope_queries_from_0": {
        "en": "Rotate `q` from position `Tk - Tq`, `k` from position 0.",
        "zh": "从位置 `Tk - Tq` 开始旋转 `q`，从位置 0 开始旋转 `k`。",
    },
    "rope_mask_top_left": {
        "en": "Hide key j from new query a when `j > Tk - Tq + a`.",
        "zh": "当 `j > Tk - Tq + a` 时，对新查询 a 遮住键 j。",
    },
    "rope_not_applied": {
        "en": "Rotate `q` (from position `Tk - Tq`) and `k` (from 0) before `q @ k.transpose(-2, -1)`.",
        "zh": "在 `q @ k.transpose(-2, -1)` 之前，旋转 `q`（从位置 `Tk - Tq` 开始）和 `k`（从 0 开始）。",
    },
    "rope_keys_not_rotated": {
        "en": "Rotate `k` too, from position 0.",
        "zh": "`k` 也要旋转，从位置 0 开始。",
    },
}

RECORDS = [
    Exercise(
        name="rope_at",
        notebook="09",
        body=body_rope_at,
        points=2,
        takes="function",
        signature="``fn(x (..., T, hs), start, base) -> (..., T, hs)``: x's tokens at positions start .. start + T - 1, "  # noqa: E501
        "rotated by RoPE in the rotate-half layout (pair k = features k and k + hs/2, angle position * base ** (-2k / hs)).",  # noqa: E501
        hints=(
            "rope_interleaved",
            "rope_wrong_sign",
            "rope_positions_from_1",
            "rope_start_ignored",
            "rope_frequencies_reversed",
            "rope_base_ignored",
            "input_modified",
        ),
        references=("explore.position_codes.apply_rope",),
    ),
    Exercise(
        name="rope_chunk_attention",
        notebook="09",
        body=body_rope_chunk_attention,
        points=3,
        takes="function",
        signature="``fn(q (..., Tq, hs), k (..., Tk, hs), v (..., Tk, hs)) -> (..., Tq, hs)``: the last Tq tokens' "
        "queries against the keys and values of positions 0 .. Tk - 1, RoPE (rotate-half, base 10000) on queries and "
        "keys, a causal mask, the softmax of the scores over sqrt(hs), times the values.",
        hints=(
            "rope_on_values",
            "rope_queries_from_0",
            "rope_mask_top_left",
            "rope_not_applied",
            "rope_keys_not_rotated",
            "rope_interleaved",
            "scale_missing",
            "input_modified",
        ),
        references=("explore.position_codes.apply_rope", "explore.positions.PositionalAttention"),
    ),
]
