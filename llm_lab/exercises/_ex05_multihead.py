# ruff: noqa: E501  (the bilingual messages read better unbroken)
"""Notebook 05: splitting and merging heads, multi-head attention, and (transfer) a key padding mask."""

from __future__ import annotations

import torch
from torch import nn

from ..masks import causal_mask, causal_softmax
from ._core import Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same, shape_str
from ._harness import call, last_observed
from ._modules import (
    DROPOUT_HINTS,
    build,
    check_eval_dropout,
    class_name,
    forward_case,
    linear,
    probe_train_dropout,
    project,
    qkv,
)
from ._observe import called
from ._shared import (
    HELPERS,
    WEIGHT_HINTS,
    attention,
    call_unchanged,
    gen,
    softmax_masked,
    triu,
    unless_reference,
    weights_variants,
)


def split(t, nh, how="ok"):
    b, n, d = t.shape
    hd = d // nh
    if how == "no_transpose":
        return t.reshape(b, nh, n, hd)
    if how == "interleaved":
        return t.reshape(b, n, hd, nh).permute(0, 3, 1, 2)
    return t.view(b, n, nh, hd).transpose(1, 2)


def merge(c, how="ok"):
    b, nh, n, hd = c.shape
    if how == "no_transpose":
        return c.reshape(b, n, nh * hd)
    if how == "interleaved":
        return c.permute(0, 2, 3, 1).reshape(b, n, nh * hd)
    return c.transpose(1, 2).reshape(b, n, nh * hd)


# The lesson's lines: the split/merge exercise asks for reshape/permute/flatten instead.
LESSON_OPS = ("view", "view_as", "transpose", "swapaxes", "swapdims")


def _call_unchanged(fn, args: tuple, names: tuple, case: str):
    """Call ``fn`` on copies of ``args`` (observed); Fail if it changed one of them in place."""
    return call_unchanged(fn, *args, names=names, case=case, observe=True)


def _no_lesson_ops(observed: list) -> None:
    """``observed``: (case, record) of every call, judged once all values are right (a wrong split is named first)."""
    for case, record in observed:
        op = called(record, *LESSON_OPS)
        if op:
            unless_reference(Fail("uses_lesson_ops", ref=op, case=case))
            return


def body_split_heads(fn) -> list[str]:
    g = gen(707)
    cases, observed = [], []
    for shape, nh in (((2, 5, 6), 3), ((1, 1, 4), 2), ((3, 7, 8), 4), ((2, 3, 4), 1)):
        x = torch.randn(*shape, generator=g)
        case = f"x.shape={shape_str(shape)}, num_heads={nh}"
        out = _call_unchanged(fn, (x, nh), ("x", "num_heads"), case)
        observed.append((case, last_observed()))
        b, n, d = shape
        variants = [
            ("view_without_transpose", lambda x=x, nh=nh: split(x, nh, "no_transpose")),
            ("view_without_transpose", lambda x=x, nh=nh, b=b, n=n, d=d: x.view(b, n, nh, d // nh)),
            ("heads_interleaved", lambda x=x, nh=nh: split(x, nh, "interleaved")),
        ]
        compare(out, split(x, nh), case, variants)
        cases.append(f"{shape_str(shape)} num_heads={nh}")
    _no_lesson_ops(observed)
    return cases


def body_merge_heads(fn) -> list[str]:
    g = gen(808)
    cases, observed = [], []
    for shape in ((2, 3, 5, 2), (1, 2, 1, 2), (3, 4, 7, 2), (2, 1, 3, 4)):
        c = torch.randn(*shape, generator=g)
        case = f"context_vec.shape={shape_str(shape)}"
        try:
            out = _call_unchanged(fn, (c,), ("context_vec",), case)
            observed.append((case, last_observed()))
        except LearnerError as err:
            if isinstance(err.exc, RuntimeError) and "view" in str(err.exc) and "contiguous" in str(err.exc):
                raise Fail("not_contiguous", case=case) from None
            raise
        variants = [
            ("merge_without_transpose", lambda c=c: merge(c, "no_transpose")),
            ("transpose_not_merged", lambda c=c: c.transpose(1, 2)),
            ("heads_interleaved", lambda c=c: merge(c, "interleaved")),
        ]
        compare(out, merge(c), case, variants)
        cases.append(shape_str(shape))
    _no_lesson_ops(observed)
    return cases


def _mha(x, layers, out_proj, nh, split_how="ok", merge_how="ok", weights=None):
    q, k, v = (split(t, nh, split_how) for t in qkv(x, layers))
    if weights is None:
        c = attention(q, k, v)
    else:
        c = weights(q, k) @ v
    c = merge(c, merge_how)  # (B, T, d_out)
    return project(out_proj, c) if out_proj is not None else c


def _mha_variants(x, layers, out_proj, nh) -> list:
    d_out = layers["W_query"].out_features
    variants = [("out_proj_missing", lambda: _mha(x, layers, None, nh))]
    layouts = (("view_without_transpose", "no_transpose", "no_transpose"),
               ("view_without_transpose", "no_transpose", "ok"),
               ("merge_without_transpose", "ok", "no_transpose"),
               ("heads_interleaved", "interleaved", "interleaved"))
    # the head-layout mistakes, then the same with the projection forgotten as well (named by the layout)
    for proj in (out_proj, None):
        variants += [(hint, lambda s=s, m=m, proj=proj: _mha(x, layers, proj, nh, s, m)) for hint, s, m in layouts]
    if out_proj is None:
        return variants
    for hint in WEIGHT_HINTS:
        def weights(q, k, hint=hint):
            return dict(weights_variants(q, k, head_scale=d_out))[hint]()

        variants.append((hint, lambda weights=weights: _mha(x, layers, out_proj, nh, weights=weights)))
    return variants


def body_multihead(cls) -> list[str]:
    g = gen(606)
    cases = []
    configs = (
        ((3, 6, 5, 0.0, 2), ((2, 5, 3), (2, 3, 3), (1, 1, 3))),
        ((4, 8, 8, 0.5, 4), ((3, 6, 4), (1, 8, 4))),
        ((4, 4, 4, 0.0, 1), ((2, 4, 4),)),
    )
    for n, (args, shapes) in enumerate(configs):
        d_in, d_out, context_length, dropout, nh = args
        build_case = f"{class_name(cls)}{args}"
        module = build(cls, args, build_case, seed=200 + n)
        layers = {name: linear(module, name, d_in, d_out) for name in ("W_query", "W_key", "W_value")}
        out_proj = getattr(module, "out_proj", None)
        if not (isinstance(out_proj, nn.Linear) and tuple(out_proj.weight.shape) == (d_out, d_out)):
            out_proj = None
        module.eval()
        passed_full = False
        for shape in shapes:
            x = torch.randn(*shape, generator=g)
            case = f"{build_case}, x.shape={shape_str(shape)}"
            variants = _mha_variants(x, layers, out_proj, nh)
            if out_proj is None:  # no usable out_proj: only "not applied at all" can be recognised
                out = as_tensor(call(module, x.clone(), case=case), case)
                diagnose(out, variants, torch.tensor([float("nan")]), case=case)  # skip no variant
                raise Fail("missing_attribute", name="`out_proj`", expected=f"nn.Linear({d_out}, {d_out})")
            if dropout > 0:
                check_eval_dropout(module, x, case)
            forward_case(module, x, case, _mha(x, layers, out_proj, nh), variants, passed_full=passed_full,
                         context_length=context_length)
            passed_full = passed_full or shape[1] == context_length
            cases.append(shape_str(shape))
    cases.append(probe_train_dropout(cls, heads=2, with_out_proj=True, extra_args=(2,)))
    return cases


# ---- transfer: multi-head attention with a key padding mask ---------------------------------------------------

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


def _padded_variants(q, k, v, kpm) -> list:
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
            out = _call_unchanged(fn, (q, k, v, kpm), ("queries", "keys", "values", "key_padding_mask"), case)
        except LearnerError as err:
            size_error = isinstance(err.exc, RuntimeError) and "must match the size" in str(err.exc)
            if size_error and b != nh and _heads_axis_probe(fn):
                raise Fail("padding_heads_axis", case=case) from None
            raise
        want = causal_softmax(q @ k.transpose(-2, -1) / hs**0.5, kpm[:, None, :]) @ v
        compare(out, want, case, _padded_variants(q, k, v, kpm))
        cases.append(f"B={b} nh={nh} T={t}")
    return cases


_SPLIT_MESSAGES = {
    "uses_lesson_ops": {
        "en": "{title}: right values, but with `{ref}`, the lesson's own line (input: {case}); this exercise asks for `reshape` and `permute` (and `flatten` to merge), so that you rebuild the idea instead of copying it.",
        "zh": "{title}：数值是对的，但用了 `{ref}`，那是正文里的原句（输入：{case}）；这道练习要求用 `reshape` 和 `permute`（合并时用 `flatten`），自己重建这个思路，而不是照抄。",
    },
    "view_without_transpose": {
        "en": "{title}: the features were cut into heads without moving the heads in front of the tokens (input: {case}): a reshape straight to (B, num_heads, T, head_dim) mixes tokens and heads.",
        "zh": "{title}：特征切分成了多个头，却没有把“头”的维度移到词元前面（输入：{case}）：直接 reshape 成 (B, num_heads, T, head_dim) 会把词元和头混在一起。",
    },
}
_MERGE_MESSAGES = {
    "uses_lesson_ops": _SPLIT_MESSAGES["uses_lesson_ops"],
    "merge_without_transpose": {
        "en": "{title}: the heads were flattened without permuting them back behind the tokens first (input: {case}), which mixes tokens and heads.",
        "zh": "{title}：合并注意力头时没有先用 permute 把“头”的维度放回词元后面就直接展平了（输入：{case}），词元和头被混在了一起。",
    },
    "transpose_not_merged": {
        "en": "{title}: you permuted back but never merged the heads (input: {case}): the result still has 4 dimensions (B, T, num_heads, head_dim).",
        "zh": "{title}：已经用 permute 换回来了，但没有把各个头合并（输入：{case}）：结果仍是 4 维的 (B, T, num_heads, head_dim)。",
    },
    "not_contiguous": {
        "en": "{title}: `.view` failed after `.permute` (input: {case}): permute only reorders strides, so the memory is no longer in row order; this exercise merges with `flatten`.",
        "zh": "{title}：在 `.permute` 之后调用 `.view` 失败了（输入：{case}）：permute 只重排步长（stride），内存不再按行排列；这道练习用 `flatten` 合并。",
    },
}
_SPLIT_FIXES = {
    "uses_lesson_ops": {"en": "`x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`.", "zh": "`x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`。"},
    "view_without_transpose": {"en": "Reshape to (b, num_tokens, num_heads, head_dim), then move the heads in front: `x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`.", "zh": "先 reshape 成 (b, num_tokens, num_heads, head_dim)，再把“头”的维度移到前面：`x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`。"},
    "input_modified": {"en": "`return x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`: a new view, with `x` left as it came (no `x /= ...`, `x.zero_()`, `x[...] = ...`).", "zh": "`return x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`：得到一个新的视图，`x` 保持原样（不要 `x /= ...`、`x.zero_()`、`x[...] = ...`）。"},
    "heads_interleaved": {"en": "num_heads before head_dim in the reshape: `x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`.", "zh": "reshape 时 num_heads 在 head_dim 之前：`x.reshape(b, num_tokens, num_heads, d_out // num_heads).permute(0, 2, 1, 3)`。"},
}
_MERGE_FIXES = {
    "uses_lesson_ops": {"en": "`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`.", "zh": "`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`。"},
    "merge_without_transpose": {"en": "Permute back first, then flatten: `context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`.", "zh": "先用 permute 换回来，再展平：`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`。"},
    "transpose_not_merged": {"en": "Flatten the last two dimensions too: `context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`.", "zh": "把最后两维也展平：`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`。"},
    "heads_interleaved": {"en": "Tokens first, then each head's features in turn: `context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`.", "zh": "先按词元，再依次排列每个头的特征：`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`。"},
    "input_modified": {"en": "`return context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`: a new tensor, with `context_vec` left as it came (no `context_vec /= ...`, `.mul_(...)`, `[...] = ...`).", "zh": "`return context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`：得到一个新张量，`context_vec` 保持原样（不要 `context_vec /= ...`、`.mul_(...)`、`[...] = ...`）。"},
    "not_contiguous": {"en": "`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`: flatten copies when permute left gaps.", "zh": "`context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)`：permute 留下间隔时 flatten 会复制。"},
}

_PADDED_MESSAGES = {
    "padding_heads_axis": {
        "en": "{title}: the padding mask lines up with the heads instead of the batch (input: {case}): a (B, T) mask needs two new axes to broadcast over (B, nh, T, T) scores.",
        "zh": "{title}：填充遮蔽对齐到了“头”的维度而不是批次维度（输入：{case}）：(B, T) 的遮蔽需要增加两个新轴，才能在 (B, nh, T, T) 的分数上正确广播。",
    },
}
_PADDED_FIXES = {
    "padding_heads_axis": {
        "en": "`hidden = causal | key_padding_mask[:, None, None, :]` (shape (B, 1, 1, T)).",
        "zh": "`hidden = causal | key_padding_mask[:, None, None, :]`（形状为 (B, 1, 1, T)）。",
    },
    # 02's `key_padding_mask.unsqueeze(-2)` is (B, 1, T): against (B, nh, T, T) scores it lines up with the heads
    "padding_ignored": {
        "en": "`hidden = causal | key_padding_mask[:, None, None, :]`: shape (B, 1, 1, T), the padded key columns of every head and every query.",
        "zh": "`hidden = causal | key_padding_mask[:, None, None, :]`：形状为 (B, 1, 1, T)，在每个头、每个查询里遮蔽填充的键（列）。",
    },
    "padding_wrong_axis": {
        "en": "Put the new axes before the keys: `key_padding_mask[:, None, None, :]` (B, 1, 1, T) hides columns, `[:, None, :, None]` hides rows.",
        "zh": "新轴要加在键的维度之前：`key_padding_mask[:, None, None, :]`（形状 (B, 1, 1, T)）遮蔽的是列，`[:, None, :, None]` 遮蔽的是行。",
    },
}

_HEAD_REFERENCES = ("multihead.MultiHeadAttention", "multihead.FusedMultiHeadAttention")  # _split_heads, _merge_heads

# This module's own hint texts (used by no other exercise): every record below gets them (_registry).
MODULE_MESSAGES = {
    "not_contiguous": {
        "en": "{title}: `.view` failed after `.transpose` (input: {case}): transpose only swaps strides, so the memory is no longer in row order.",
        "zh": "{title}：在 `.transpose` 之后调用 `.view` 失败了（输入：{case}）：transpose 只交换步长（stride），内存不再按行排列。",
    },
    "view_without_transpose": {
        "en": "{title}: the heads were split by `.view` without the transpose (input: {case}), which mixes tokens and heads.",
        "zh": "{title}：只用 `.view` 拆分了注意力头，没有转置（输入：{case}），词元和头被混在了一起。",
    },
    "merge_without_transpose": {
        "en": "{title}: the heads were merged by `.view`/`.reshape` without transposing back first (input: {case}), which mixes tokens and heads.",
        "zh": "{title}：合并注意力头时直接 `.view`/`.reshape`，没有先转置回来（输入：{case}），词元和头被混在了一起。",
    },
    "transpose_not_merged": {
        "en": "{title}: you transposed back but never merged the heads (input: {case}): the result still has 4 dimensions (B, T, num_heads, head_dim).",
        "zh": "{title}：转置回来了，但没有把各个头合并（输入：{case}）：结果仍是 4 维的 (B, T, num_heads, head_dim)。",
    },
    "heads_interleaved": {
        "en": "{title}: the features of the heads are interleaved (input: {case}). Head h owns the consecutive columns h*head_dim ... (h+1)*head_dim - 1.",
        "zh": "{title}：各个头的特征交错在了一起（输入：{case}）。第 h 个头应当拥有连续的列 h*head_dim 到 (h+1)*head_dim - 1。",
    },
    "out_proj_missing": {
        "en": "{title}: the output projection is missing (input: {case}): the merged heads never go through `self.out_proj`.",
        "zh": "{title}：缺少输出投影（output projection）（输入：{case}）：合并后的各头输出没有经过 `self.out_proj`。",
    },
}
MODULE_FIXES = {
    "not_contiguous": {"en": "Call `.contiguous()` before `.view(...)` (or use `.reshape`).", "zh": "先调用 `.contiguous()` 再 `.view(...)`（或者改用 `.reshape`）。"},
    "view_without_transpose": {"en": "View as (b, num_tokens, num_heads, head_dim), then `.transpose(1, 2)`.", "zh": "先 view 成 (b, num_tokens, num_heads, head_dim)，再 `.transpose(1, 2)`。"},
    "merge_without_transpose": {"en": "`.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`.", "zh": "`.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`。"},
    "transpose_not_merged": {"en": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)`.", "zh": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)`。"},
    "heads_interleaved": {"en": "The view must be (..., num_heads, head_dim), in that order.", "zh": "view 的最后两维必须按 (..., num_heads, head_dim) 的顺序。"},
    "out_proj_missing": {"en": "`return self.out_proj(context_vec)` after merging the heads.", "zh": "合并各头之后写 `return self.out_proj(context_vec)`。"},
}


RECORDS = [
    Exercise(
        name="split_heads", notebook="05", body=body_split_heads, points=1, takes="function",
        signature="``fn(x (B, T, d_out), num_heads) -> (B, num_heads, T, head_dim)``, with reshape and permute.",
        hints=("view_without_transpose", "heads_interleaved", "uses_lesson_ops", "input_modified"),
        references=_HEAD_REFERENCES + ("exercises._ex05_multihead.split",),
        messages=_SPLIT_MESSAGES, fixes=_SPLIT_FIXES,
    ),
    Exercise(
        name="merge_heads", notebook="05", body=body_merge_heads, points=1, takes="function",
        signature="``fn(context_vec (B, num_heads, T, head_dim)) -> (B, T, num_heads * head_dim)``, with permute "
        "and flatten.",
        hints=("merge_without_transpose", "transpose_not_merged", "heads_interleaved", "not_contiguous",
               "uses_lesson_ops", "input_modified"),
        references=_HEAD_REFERENCES + ("exercises._ex05_multihead.merge",),
        messages=_MERGE_MESSAGES, fixes=_MERGE_FIXES,
    ),
    Exercise(
        name="multihead", notebook="05", body=body_multihead, points=3, takes="class",
        signature="``cls(d_in, d_out, context_length, dropout, num_heads)`` with ``W_query/W_key/W_value/out_proj``; "
        "``forward(x (B, T, d_in)) -> (B, T, d_out)``.",
        hints=("out_proj_missing", "view_without_transpose", "merge_without_transpose", "heads_interleaved",
               "mask_wrong_size", "missing_attribute", "not_module", "instance_not_class", "dropout_after_out_proj")
        + WEIGHT_HINTS + DROPOUT_HINTS,
        references=("multihead.MultiHeadAttention", "multihead.FusedMultiHeadAttention",
                    "multihead.MultiHeadAttentionWrapper", "attention.CausalAttention",
                    "exercises._ex05_multihead._mha") + HELPERS,
    ),
    Exercise(
        name="padded_attention", notebook="05", body=body_padded_attention, points=3, takes="function",
        signature="``fn(queries, keys, values (B, nh, T, hs), key_padding_mask bool (B, T)) -> (B, nh, T, hs)``: "
        "causal attention per head that also hides padded keys; a query with no visible key gets zeros.",
        hints=("nan_rows", "padding_ignored", "padding_heads_axis", "padding_wrong_axis", "padded_queries_zeroed",
               "future_open", "diagonal_masked", "scale_missing", "scale_twice", "scale_uses_d_out", "scale_uses_T",
               "fully_masked_not_zero", "input_modified"),
        references=("masks.causal_softmax", "multihead.MultiHeadAttention", "multihead.FusedMultiHeadAttention",
                    "exercises._ex05_multihead._padded_ref") + HELPERS,
        messages=_PADDED_MESSAGES, fixes=_PADDED_FIXES,
    ),
]
