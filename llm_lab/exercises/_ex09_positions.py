"""Notebook 09 (transfer): ALiBi's bias built by hand (position as an additive bias on the scores, notebooks 02
and 04's additive mask with finite values below the diagonal), and causal attention of a chunk of new queries on
cached keys and values with RoPE (the decoding step of a RoPE model).

Both checkers hand the learner's function only tensors and ints and read back a tensor, through ``_harness.call``.
The RoPE layout is rotate-half (pair ``k`` = features ``k`` and ``k + hs/2``), the one notebook 09 uses.
"""

from __future__ import annotations

import torch

from ._core import Diagnosis, Exercise, Fail, as_tensor, same
from ._shared import call_unchanged, gen, sizes

BASE = 10000.0


def rope_rotate(x: torch.Tensor, start: int, base: float = BASE, *, layout: str = "half") -> torch.Tensor:
    """``x`` ``(..., T, hs)`` at positions ``start .. start + T - 1`` rotated by RoPE (rotate-half); ``layout=
    "interleaved"`` computes the named mistake of pairing neighbouring features."""
    t, hs = x.shape[-2], x.shape[-1]
    theta = float(base) ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs)  # (hs / 2,)
    angles = (torch.arange(t, dtype=torch.float64) + start)[:, None] * theta  # (T, hs / 2)
    cos, sin = angles.cos(), angles.sin()
    xd = x.double()
    if layout == "half":
        x1, x2 = xd[..., : hs // 2], xd[..., hs // 2 :]
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    else:
        x1, x2 = xd[..., 0::2], xd[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    return out.to(x.dtype)


# ---- ALiBi's bias ----------------------------------------------------------------------------------------------


def alibi_reference(
    num_heads: int,
    t: int,
    *,
    sign: float = 1.0,
    slopes_from: int = 1,
    reverse: bool = False,
    future: str = "-inf",
    transposed: bool = False,
) -> torch.Tensor:
    """``(nh, T, T)`` float32: ``-m_h (i - j)`` for keys ``j <= i``, ``-inf`` above the diagonal, slopes
    ``m_h = 2 ** (-8 h / nh)`` for ``h = 1 .. nh``. The keywords compute the named mistakes: the other sign (``+m_h
    (i - j)``, which offsets ``j - i`` also give), ``h`` counted from 0, the slopes in reverse order, the future left
    as ``"zero"`` or ``"formula"`` (the same expression continued above the diagonal), the query and key axes
    swapped."""
    h = torch.arange(slopes_from, slopes_from + num_heads, dtype=torch.float64)
    slopes = 2.0 ** (-8.0 * h / num_heads)  # (nh,)
    if reverse:
        slopes = slopes.flip(0)
    i = torch.arange(t)
    back = (i[:, None] - i[None, :]).double()  # (T, T): i - j
    bias = -sign * slopes[:, None, None] * back  # (nh, T, T)
    if future == "zero":
        bias = bias.masked_fill(back < 0, 0.0)
    elif future == "-inf":
        bias = bias.masked_fill(back < 0, float("-inf"))
    if transposed:
        bias = bias.transpose(-2, -1)
    return bias.float()


def _alibi_mistakes(num_heads, t) -> list:
    return [
        ("alibi_sign", lambda: alibi_reference(num_heads, t, sign=-1.0)),
        ("alibi_transposed", lambda: alibi_reference(num_heads, t, transposed=True)),
        ("alibi_slopes_reversed", lambda: alibi_reference(num_heads, t, reverse=True)),
        ("alibi_slopes_from_0", lambda: alibi_reference(num_heads, t, slopes_from=0)),
        ("alibi_future_not_hidden", lambda: alibi_reference(num_heads, t, future="zero")),
        ("alibi_future_not_hidden", lambda: alibi_reference(num_heads, t, future="formula")),
    ]


def _alibi_shape_and_future(out, want: torch.Tensor, num_heads: int, t: int, case: str) -> None:
    """The two mistakes that no single computation gives: the head dimension missing (a ``(T, T)`` answer, or
    ``(1, T, T)`` with several heads), and any values other than ``-inf`` on the future keys of an answer right on
    and below the diagonal (0, a large negative number, the formula continued)."""
    out = as_tensor(out, case)
    if num_heads > 1 and tuple(out.shape) in ((t, t), (1, t, t)):
        raise Fail("alibi_no_head_dim", case=case, nh=num_heads, T=t)
    if out.shape != want.shape or not out.is_floating_point():
        return
    future = torch.ones(t, t, dtype=torch.bool).triu(1).expand_as(want)
    past = ~future
    if same(out[past], want[past]) and not bool((out[future] == float("-inf")).all()):
        raise Fail("alibi_future_not_hidden", case=case)


def body_alibi_bias(fn) -> list[str]:
    t_a, t_b, t_c = sizes((6, 9, 5), 16, 930)
    cases, diag = [], Diagnosis()
    # (nh, T): eight heads (the usual power of two), four, six (slopes 2 ** (-8h/6)) and two
    for num_heads, t in ((8, t_a), (4, t_b), (6, t_c), (2, 7)):
        case = f"num_heads={num_heads}, T={t}"
        out = call_unchanged(fn, num_heads, t, names=("num_heads", "T"), case=case)
        want = alibi_reference(num_heads, t)
        if not (isinstance(out, torch.Tensor) and same(out, want)):
            _alibi_shape_and_future(out, want, num_heads, t, case)
        diag.add(out, want, case, _alibi_mistakes(num_heads, t))
        cases.append(f"nh={num_heads}, T={t}")
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
    "alibi_sign": {
        "en": "{title}: the bias grows with the distance back, +m_h·(i - j), which is also what offsets j - i give (input: {case}); ALiBi penalizes far keys: the offset is i - j (query minus key, 0 or more for every key the query sees) and the bias -m_h·(i - j), 0 on the diagonal and more negative further back.",  # noqa: E501
        "zh": "{title}：偏置随往回的距离变大，成了 +m_h·(i - j)，用偏移量 j - i 也会得到这个结果（输入：{case}）；ALiBi 惩罚远处的键：偏移量是 i - j（查询减键，查询能看到的每个键上都不小于 0），偏置是 -m_h·(i - j)，对角线上为 0，越往回越负。",  # noqa: E501
    },
    "alibi_transposed": {
        "en": "{title}: the query and key axes are swapped: row i keeps keys i and after and hides the keys before it (input: {case}); bias[h, i, j] is for query i (the rows) and key j (the columns): -m_h·(i - j) for j <= i, -inf for j > i.",  # noqa: E501
        "zh": "{title}：查询和键的两个轴对调了：第 i 行保留了键 i 及其之后的键，反而遮住了它前面的键（输入：{case}）；bias[h, i, j] 对应查询 i（行）和键 j（列）：j <= i 时是 -m_h·(i - j)，j > i 时是 -inf。",  # noqa: E501
    },
    "alibi_slopes_reversed": {
        "en": "{title}: the slopes are in reverse order, the flattest head first (input: {case}); head h = 1 .. nh has m_h = 2 ** (-8h / nh): head 1 the steepest, 2 ** (-8/nh), the last head the flattest, 2 ** -8.",  # noqa: E501
        "zh": "{title}：斜率的顺序反了，最平的头排在了最前（输入：{case}）；h 号头（h = 1 … nh）的斜率是 m_h = 2 ** (-8h / nh)：1 号头最陡（2 ** (-8/nh)），最后一个头最平（2 ** -8）。",  # noqa: E501
    },
    "alibi_slopes_from_0": {
        "en": "{title}: the slopes count the heads from 0, so the first head's slope is 1 (input: {case}); h runs 1 .. nh: m_h = 2 ** (-8h / nh), the first 2 ** (-8/nh), the last 2 ** -8.",  # noqa: E501
        "zh": "{title}：斜率里的头从 0 开始数，于是最前面那个头的斜率是 1（输入：{case}）；h 取 1 … nh：m_h = 2 ** (-8h / nh)，第一个是 2 ** (-8/nh)，最后一个是 2 ** -8。",  # noqa: E501
    },
    "alibi_future_not_hidden": {
        "en": "{title}: on and below the diagonal the bias is right, but the keys after the query are not -inf (input: {case}); the bias is added to the scores and must hide the future as notebook 02's mask does: -inf wherever j > i.",  # noqa: E501
        "zh": "{title}：对角线及其下方的偏置是对的，但查询之后的键不是 -inf（输入：{case}）；这个偏置要加到分数上，必须像第 02 课的遮蔽那样把未来遮住：凡是 j > i 的位置都是 -inf。",  # noqa: E501
    },
    "alibi_no_head_dim": {
        "en": "{title}: the answer has no head dimension, one (T, T) bias for every head (input: {case}); return (num_heads, T, T), a slope of its own for each head: shape ({nh}, {T}, {T}) here.",  # noqa: E501
        "zh": "{title}：答案没有头这一维，所有头共用一个 (T, T) 偏置（输入：{case}）；请返回 (num_heads, T, T)，每个头用自己的斜率：这里的形状是 ({nh}, {T}, {T})。",  # noqa: E501
    },
    "rope_interleaved": {
        "en": "{title}: the rotation pairs neighbouring features (2k, 2k + 1), the interleaved layout (input: {case}); this exercise uses rotate-half: pair k is features k and k + hs/2.",  # noqa: E501
        "zh": "{title}：旋转把相邻的特征 (2k, 2k + 1) 配成了一对，这是 interleaved 排布（输入：{case}）；本练习用 rotate-half：第 k 对是特征 k 和 k + hs/2。",  # noqa: E501
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
    "alibi_sign": {
        "en": "`back = i[:, None] - i[None, :]`, then `-slopes[:, None, None] * back`.",
        "zh": "`back = i[:, None] - i[None, :]`，然后 `-slopes[:, None, None] * back`。",
    },
    "alibi_transposed": {
        "en": "Rows are queries, columns keys: `back = i[:, None] - i[None, :]`, and `-inf` where `back < 0`.",
        "zh": "行是查询，列是键：`back = i[:, None] - i[None, :]`，在 `back < 0` 的位置填 `-inf`。",
    },
    "alibi_slopes_reversed": {
        "en": "`slopes = 2 ** (-8 * torch.arange(1, num_heads + 1) / num_heads)`: head 1 first.",
        "zh": "`slopes = 2 ** (-8 * torch.arange(1, num_heads + 1) / num_heads)`：1 号头在最前。",
    },
    "alibi_slopes_from_0": {
        "en": "`slopes = 2 ** (-8 * torch.arange(1, num_heads + 1) / num_heads)`.",
        "zh": "`slopes = 2 ** (-8 * torch.arange(1, num_heads + 1) / num_heads)`。",
    },
    "alibi_future_not_hidden": {
        "en": '`bias.masked_fill(back < 0, float("-inf"))`.',
        "zh": '`bias.masked_fill(back < 0, float("-inf"))`。',
    },
    "alibi_no_head_dim": {
        "en": "`-slopes[:, None, None] * back`: slopes `(nh,)` against offsets `(T, T)` gives `(nh, T, T)`.",
        "zh": "`-slopes[:, None, None] * back`：斜率 `(nh,)` 乘偏移量 `(T, T)` 得到 `(nh, T, T)`。",
    },
    "rope_interleaved": {
        "en": "`x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]`, then `torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`.",  # noqa: E501
        "zh": "`x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]`，然后 `torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`。",  # noqa: E501
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
        name="alibi_bias",
        notebook="09",
        body=body_alibi_bias,
        points=2,
        takes="function",
        signature="``fn(num_heads, T) -> (num_heads, T, T)``: ALiBi's bias for the scores, -m_h * (i - j) for keys "
        "j <= i and -inf for j > i, with slopes m_h = 2 ** (-8 h / num_heads), h = 1 .. num_heads.",
        hints=(
            "alibi_sign",
            "alibi_transposed",
            "alibi_slopes_reversed",
            "alibi_slopes_from_0",
            "alibi_future_not_hidden",
            "alibi_no_head_dim",
        ),
        references=("explore.position_codes.alibi_bias", "explore.position_codes.alibi_slopes"),
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
        references=(
            "explore.position_codes.apply_rope",
            "explore.position_codes.rope_angles",
            "explore.position_codes.rotate_half",
            "explore.position_codes.rope_frequencies",
            "explore.positions.PositionalAttention",
        ),
    ),
]
