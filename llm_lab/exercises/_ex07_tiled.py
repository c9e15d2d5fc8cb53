# ruff: noqa: E501  (the messages read better unbroken)
"""Notebook 07 (transfer): blocked causal attention over all queries with an online softmax."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._core import Exercise, Fail, as_tensor, compare, same, shape_str
from ._harness import call
from ._shared import gen

NEG_INF = float("-inf")


def tiled(q, k, v, block, *, causal=True, scale=True, rescale_acc=True, rescale_sum=True):
    """Blocked attention with an online softmax, optionally with one planted mistake (the wrong variants)."""
    b, nh, t, hs = q.shape
    q = q / hs**0.5 if scale else q
    out = torch.empty_like(v)
    for qs in range(0, t, block):
        qb = q[:, :, qs : qs + block]
        m = torch.full(qb.shape[:-1], NEG_INF, dtype=q.dtype)
        s_run = torch.zeros(qb.shape[:-1], dtype=q.dtype)
        acc = torch.zeros(*qb.shape[:-1], hs, dtype=q.dtype)
        rows = torch.arange(qs, qs + qb.shape[2]).unsqueeze(-1)
        for ks in range(0, t, block):
            scores = qb @ k[:, :, ks : ks + block].transpose(-2, -1)
            if causal:
                cols = torch.arange(ks, min(ks + block, t))
                scores = scores.masked_fill(cols > rows, NEG_INF)
            m_new = torch.maximum(m, scores.amax(-1))
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # an all-hidden block so far
            p = torch.exp(scores - safe.unsqueeze(-1))
            factor = torch.exp(m - safe)
            s_run = (s_run * factor if rescale_sum else s_run) + p.sum(-1)
            acc = (acc * factor.unsqueeze(-1) if rescale_acc else acc) + p @ v[:, :, ks : ks + block]
            m = m_new
        out[:, :, qs : qs + block] = acc / s_run.unsqueeze(-1)
    return out


# (B, nh, T, hs, block_size, score scale): blocks that divide T, that do not, one block, one-token blocks, and
# scores around +-100 (exp overflows float32 past 88.7 unless the running maximum is subtracted)
CASES = (
    (1, 1, 8, 4, 4, 1.0),
    (2, 3, 10, 8, 4, 1.0),
    (1, 2, 7, 4, 3, 1.0),
    (2, 1, 5, 4, 8, 1.0),
    (1, 1, 6, 2, 1, 1.0),
    (1, 2, 8, 4, 4, 10.0),
)


def body_tiled_attention(fn) -> list[str]:
    g = gen(1212)
    cases = []
    for b, nh, t, hs, block, amp in CASES:
        q, k, v = (torch.randn(b, nh, t, hs, generator=g) for _ in range(3))
        q, k = q * amp, k * amp
        case = f"queries.shape={shape_str(q.shape)}, block_size={block}" + (f", scores x{amp**2:g}" if amp != 1 else "")
        out = as_tensor(call(fn, q.clone(), k.clone(), v.clone(), block, case=case), case)
        want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()
        if amp != 1 and out.shape == want.shape and not torch.isfinite(out).all():
            raise Fail("max_not_subtracted", case=case)
        full = t // block * block
        if 0 < full < t and out.shape == want.shape and not same(out, want) and same(out[:, :, :full], want[:, :, :full]):
            raise Fail("partial_block", case=case)
        variants = [
            ("future_open", lambda q=q, k=k, v=v, bl=block: tiled(q, k, v, bl, causal=False)),
            ("scale_missing", lambda q=q, k=k, v=v, bl=block: tiled(q, k, v, bl, scale=False)),
            ("rescale_missing", lambda q=q, k=k, v=v, bl=block: tiled(q, k, v, bl, rescale_acc=False, rescale_sum=False)),
            ("rescale_missing", lambda q=q, k=k, v=v, bl=block: tiled(q, k, v, bl, rescale_acc=False)),
            ("rescale_missing", lambda q=q, k=k, v=v, bl=block: tiled(q, k, v, bl, rescale_sum=False)),
        ]
        compare(out, want, case, variants, atol=1e-5 if amp == 1 else 1e-4)
        cases.append(f"T={t} block={block}" + (" large scores" if amp != 1 else ""))
    return cases


_MESSAGES = {
    "uses_sdpa": {
        "en": "{title}: calls {ref}, which does the whole job; compute the blocks and the online softmax yourself.",
        "zh": "{title}：调用了 {ref}，它替你完成了全部工作；请自己按块计算并实现在线 softmax。",
    },
    "rescale_missing": {
        "en": "{title}: when a block raises the running maximum, what was accumulated so far is not put on the new scale (input: {case}).",
        "zh": "{title}：当新的一块抬高了累计最大值时，之前累积的结果没有换算到新的尺度上（输入：{case}）。",
    },
    "max_not_subtracted": {
        "en": "{title}: with large scores the output is inf/NaN (input: {case}): exp overflows unless the running maximum is subtracted first.",
        "zh": "{title}：分数很大时输出变成了 inf/NaN（输入：{case}）：不先减去累计最大值，exp 就会溢出。",
    },
    "partial_block": {
        "en": "{title}: right for whole blocks, wrong for the last, shorter one (input: {case}): T need not be a multiple of block_size.",
        "zh": "{title}：完整的块都对，最后那个较短的块却错了（输入：{case}）：T 不一定是 block_size 的整数倍。",
    },
}
_FIXES = {
    "uses_sdpa": {"en": "Loop over query blocks and key blocks with `range(0, T, block_size)`.", "zh": "用 `range(0, T, block_size)` 遍历查询块和键块。"},
    "rescale_missing": {"en": "`factor = torch.exp(running_max - new_max)`; `running_sum = running_sum * factor + p.sum(-1)`; `acc = acc * factor[..., None] + p @ v_block`.", "zh": "`factor = torch.exp(running_max - new_max)`；`running_sum = running_sum * factor + p.sum(-1)`；`acc = acc * factor[..., None] + p @ v_block`。"},
    "max_not_subtracted": {"en": "`p = torch.exp(scores - new_max[..., None])`.", "zh": "`p = torch.exp(scores - new_max[..., None])`。"},
    "partial_block": {"en": "Slice `q[:, :, start : start + block_size]` (slicing stops at T by itself) with `range(0, T, block_size)`.", "zh": "用 `range(0, T, block_size)` 并切片 `q[:, :, start : start + block_size]`（切片自动止于 T）。"},
}

RECORDS = [
    Exercise(
        name="tiled_attention", notebook="07", body=body_tiled_attention, points=3, takes="function",
        signature="``fn(queries, keys, values (B, nh, T, hs), block_size) -> (B, nh, T, hs)``: causal attention "
        "computed block by block with an online softmax, equal to ``F.scaled_dot_product_attention(..., "
        "is_causal=True)``.",
        hints=("uses_sdpa", "future_open", "scale_missing", "rescale_missing", "max_not_subtracted", "partial_block"),
        references=("multihead.FusedMultiHeadAttention",),
        forbidden=(("torch.nn.functional", "scaled_dot_product_attention", "uses_sdpa"),
                   ("torch._C._nn", "scaled_dot_product_attention", "uses_sdpa")),
        messages=_MESSAGES, fixes=_FIXES,
    ),
]
