"""Notebook 05 (transfer): causal attention per head that also hides padded keys, a (B, T) key padding mask
broadcast over (B, nh, T, T) scores; a query with no visible key gets zeros."""

from __future__ import annotations

import torch

from ..masks import causal_mask, causal_softmax
from ._core import Exercise, Fail, LearnerError, as_tensor, compare, same, shape_str
from ._harness import call
from ._shared import HELPERS, attention, call_unchanged, gen, softmax_masked, triu

# (B, nh, T, hs, padding): left and right padding, a fully padded sequence, and B == nh, where a (B, 1, T) mask
# broadcasts silently against (B, nh, T, T) by lining the batch up with the heads.
PADDED_CASES = (
    (2, 3, 5, 4, [[False] * 5, [True, True, False, False, False]]),
    (1, 2, 4, 2, [[False, False, True, True]]),
    (3, 2, 6, 3, [[False] * 6, [True] * 6, [False, False, False, True, True, True]]),
    (2, 2, 4, 4, [[False, False, False, True], [True, False, False, False]]),
)


def _padded_ref(q, k, v, hidden, scale=None):
    scale = k.shape[-1] if scale is None else scale
    w = softmax_masked(q @ k.transpose(-2, -1) / scale**0.5, hidden)
    return w.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0) @ v


def _padded_mistakes(q, k, v, kpm) -> list:
    b, nh, t, hs = q.shape
    causal = causal_mask(t)
    keys = kpm[:, None, None, :]
    keys_hidden = causal | keys
    scores = q @ k.transpose(-2, -1) / hs**0.5
    return [
        ("nan_rows", lambda: softmax_masked(scores, keys_hidden) @ v),
        ("padding_ignored", lambda: attention(q, k, v)),
        ("padding_heads_axis", lambda: _padded_ref(q, k, v, causal | kpm[:, None, :])),
        # before padding_wrong_axis: with right padding the two give the same output, and only this one is
        # right wherever the keys are hidden correctly
        ("padded_queries_zeroed", lambda: _padded_ref(q, k, v, keys_hidden).masked_fill(kpm[:, None, :, None], 0.0)),
        ("padding_wrong_axis", lambda: _padded_ref(q, k, v, causal | kpm[:, None, :, None])),
        ("future_open", lambda: _padded_ref(q, k, v, keys.expand(-1, -1, t, -1))),
        ("diagonal_masked", lambda: _padded_ref(q, k, v, triu(t, 0) | keys)),
        ("scale_missing", lambda: _padded_ref(q, k, v, keys_hidden, scale=1)),
        ("scale_twice", lambda: _padded_ref(q, k, v, keys_hidden, scale=hs**2)),
        ("scale_uses_d_out", lambda: _padded_ref(q, k, v, keys_hidden, scale=nh * hs)),
        ("scale_uses_T", lambda: _padded_ref(q, k, v, keys_hidden, scale=t)),
        ("fully_masked_not_zero", lambda: torch.softmax(scores.masked_fill(keys_hidden, -1e9), dim=-1) @ v),
    ]


def _heads_axis_probe(fn) -> bool:
    """After a size error: is the learner's mask lined up with the heads? Asked on the case B == nh, where
    such a mask broadcasts instead of raising; any other cause of the error gives another output there."""
    b, nh, t, hs, pad = PADDED_CASES[-1]
    g = gen(1112)
    q, k, v = (torch.randn(b, nh, t, hs, generator=g) for _ in range(3))
    kpm = torch.tensor(pad)
    try:
        out = as_tensor(call(fn, q.clone(), k.clone(), v.clone(), kpm.clone(), case="probe"), "probe")
    except Fail:
        return False
    return same(out, _padded_ref(q, k, v, causal_mask(t) | kpm[:, None, :]))


def body_padded_attention(fn) -> list[str]:
    g = gen(1111)
    cases = []
    for b, nh, t, hs, pad in PADDED_CASES:
        kpm = torch.tensor(pad)
        q, k, v = (torch.randn(b, nh, t, hs, generator=g) for _ in range(3))
        case = f"queries.shape={shape_str(q.shape)}, key_padding_mask={pad}"
        try:
            out = call_unchanged(
                fn, q, k, v, kpm, names=("queries", "keys", "values", "key_padding_mask"), case=case, observe=True
            )
        except LearnerError as err:
            size_error = isinstance(err.exc, RuntimeError) and "must match the size" in str(err.exc)
            if size_error and b != nh and _heads_axis_probe(fn):
                raise Fail("padding_heads_axis", case=case) from None
            raise
        want = causal_softmax(q @ k.transpose(-2, -1) / hs**0.5, kpm[:, None, :]) @ v
        compare(out, want, case, _padded_mistakes(q, k, v, kpm))
        cases.append(f"B={b} nh={nh} T={t}")
    return cases


_PADDED_MESSAGES = {
    "padding_heads_axis": {
        "en": "{title}: the padding mask lines up with the heads instead of the batch (input: {case}): a (B, T) mask needs two new axes to broadcast over (B, nh, T, T) scores.",  # noqa: E501
        "zh": "{title}：填充遮蔽对齐到了“头”的维度而不是批次维度（输入：{case}）：(B, T) 的遮蔽需要增加两个新轴，才能在 (B, nh, T, T) 的分数上正确广播。",  # noqa: E501
    },
}
_PADDED_FIXES = {
    "padding_heads_axis": {
        "en": "`hidden = causal | key_padding_mask[:, None, None, :]` (shape (B, 1, 1, T)).",
        "zh": "`hidden = causal | key_padding_mask[:, None, None, :]`（形状为 (B, 1, 1, T)）。",
    },
    # 02's `key_padding_mask.unsqueeze(-2)` is (B, 1, T): against (B, nh, T, T) scores it lines up with the heads
    "padding_ignored": {
        "en": "`hidden = causal | key_padding_mask[:, None, None, :]`: shape (B, 1, 1, T), the padded key columns of every head and every query.",  # noqa: E501
        "zh": "`hidden = causal | key_padding_mask[:, None, None, :]`：形状为 (B, 1, 1, T)，在每个头、每个查询里遮蔽填充的键（列）。",  # noqa: E501
    },
    "padding_wrong_axis": {
        "en": "Put the new axes before the keys: `key_padding_mask[:, None, None, :]` (B, 1, 1, T) hides columns, `[:, None, :, None]` hides rows.",  # noqa: E501
        "zh": "新轴要加在键的维度之前：`key_padding_mask[:, None, None, :]`（形状 (B, 1, 1, T)）遮蔽的是列，`[:, None, :, None]` 遮蔽的是行。",  # noqa: E501
    },
}


RECORDS = [
    Exercise(
        name="padded_attention",
        notebook="05",
        body=body_padded_attention,
        points=3,
        takes="function",
        signature="``fn(queries, keys, values (B, nh, T, hs), key_padding_mask bool (B, T)) -> (B, nh, T, hs)``: "
        "causal attention per head that also hides padded keys; a query with no visible key gets zeros.",
        hints=(
            "nan_rows",
            "padding_ignored",
            "padding_heads_axis",
            "padding_wrong_axis",
            "padded_queries_zeroed",
            "future_open",
            "diagonal_masked",
            "scale_missing",
            "scale_twice",
            "scale_uses_d_out",
            "scale_uses_T",
            "fully_masked_not_zero",
            "input_modified",
        ),
        references=(
            "masks.causal_softmax",
            "multihead.MultiHeadAttention",
            "multihead.FusedMultiHeadAttention",
            "exercises._ex05_padding._padded_ref",
        )
        + HELPERS,
        messages=_PADDED_MESSAGES,
        fixes=_PADDED_FIXES,
    ),
]
