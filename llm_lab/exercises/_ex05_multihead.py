# ruff: noqa: E501  (the bilingual messages read better unbroken)
"""Notebook 05 (transfer): the heads of one fused qkv projection of a grouped-query layer (fewer key/value heads
than query heads) and multi-head attention with bugs no lesson shows: the head split and merge, and their known
wrong layouts. The key padding mask over heads is ``_ex05_padding``."""

from __future__ import annotations

import torch
from torch import nn

from ._core import Diagnosis, Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same, shape_str
from ._harness import call
from ._modules import (
    DROPOUT_HINTS,
    build,
    class_name,
    expect_eval_without_dropout,
    forward_case,
    linear,
    probe_train_dropout,
    project,
    qkv,
)
from ._shared import (
    HELPERS,
    WEIGHT_HINTS,
    attention,
    call_unchanged,
    causal_mask,
    gen,
    softmax_masked,
    weights_mistakes,
)


def split(t, nh, how="ok"):
    """(B, T, nh * hs) -> (B, nh, T, hs), or a known wrong split of it (``t`` may be a slice: reshape, not view)."""
    b, n, d = t.shape
    hd = d // nh
    if how == "no_transpose":
        return t.reshape(b, nh, n, hd)
    if how == "interleaved":
        return t.reshape(b, n, hd, nh).permute(0, 3, 1, 2)
    return t.reshape(b, n, nh, hd).transpose(1, 2)


def merge(c, how="ok"):
    b, nh, n, hd = c.shape
    if how == "no_transpose":
        return c.reshape(b, n, nh * hd)
    if how == "interleaved":
        return c.permute(0, 2, 3, 1).reshape(b, n, nh * hd)
    if how == "features_first":  # (B, nh, T, hs) read as (B, nh * hs, T) rows, then transposed
        return c.reshape(b, nh * hd, n).transpose(1, 2)
    return c.transpose(1, 2).reshape(b, n, nh * hd)


def _call_unchanged(fn, args: tuple, names: tuple, case: str):
    """Call ``fn`` on copies of ``args`` (observed); Fail if it changed one of them in place."""
    return call_unchanged(fn, *args, names=names, case=case, observe=True)


# ---- transfer: the heads of one fused projection for a grouped-query layer (fewer key/value heads) -------------


def split_qkv_ref(qkv, nh, n_kv, how="ok"):
    """One fused projection's output (B, T, (nh + 2 n_kv) hs), columns [queries | keys | values], as queries
    (B, nh, T, hs) and keys, values (B, n_kv, T, hs); ``how``: a known wrong split."""
    b, n, w = qkv.shape
    hs = w // (nh + 2 * n_kv)
    if how == "per_group":  # each kv head's group stored together: [its query heads, its key, its value]
        g = nh // n_kv
        x = qkv.reshape(b, n, n_kv, g + 2, hs)
        return (
            x[:, :, :, :g].reshape(b, n, nh, hs).transpose(1, 2),
            x[:, :, :, g].transpose(1, 2),
            x[:, :, :, g + 1].transpose(1, 2),
        )
    if how == "thirds":  # three equal blocks, as for a layer with as many key/value heads as query heads
        return tuple(split(t, h) for t, h in zip(qkv.chunk(3, dim=-1), (nh, n_kv, n_kv), strict=True))
    if how == "kv_num_heads":  # the key and value blocks cut into num_heads heads
        q, k, v = qkv.split([nh * hs, n_kv * hs, n_kv * hs], dim=-1)
        return split(q, nh), split(k, nh), split(v, nh)
    q, k, v = qkv.split([nh * hs, n_kv * hs, n_kv * hs], dim=-1)
    if how == "kv_swapped":  # keys and values swapped
        return split(q, nh), split(v, n_kv), split(k, n_kv)
    if how in ("kv_repeated", "kv_tiled"):  # each kv head repeated for its query heads (grouped-query attention's
        g = nh // n_kv  # step before the scores), one after the other (repeat_interleave) or the whole set (repeat)
        rep = (lambda t: t.repeat_interleave(g, dim=1)) if how == "kv_repeated" else (lambda t: t.repeat(1, g, 1, 1))
        return split(q, nh), rep(split(k, n_kv)), rep(split(v, n_kv))
    return split(q, nh, how), split(k, n_kv, how), split(v, n_kv, how)


# (B, T, num_heads, num_kv_heads, head_dim): as many kv heads as query heads first (GPT-2's fused layer, three equal
# blocks), then groups of 2, one kv head for all (multi-query) on one token, groups of 3, one head
QKV_CASES = ((2, 5, 3, 3, 2), (3, 4, 4, 2, 2), (1, 1, 2, 1, 2), (2, 4, 6, 2, 3), (2, 3, 1, 1, 4))
QKV_MISTAKES = (
    ("qkv_equal_thirds", "thirds"),
    ("kv_split_into_num_heads", "kv_num_heads"),
    ("qkv_per_group", "per_group"),
    ("view_without_transpose", "no_transpose"),
    ("heads_interleaved", "interleaved"),
)
# named only when the learner's triple is theirs on every case (run in full): (hint, its ways of computing it)
QKV_WHOLE_MISTAKES = (
    ("kv_heads_repeated", ("kv_repeated", "kv_tiled")),
    ("keys_values_swapped", ("kv_swapped",)),
)


def _triple(out, case) -> tuple:
    if out is None:
        raise Fail("returned_none", case=case)
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise Fail(
            "not_triple",
            got=type(out).__name__ if not isinstance(out, (tuple, list)) else f"{len(out)} values",
            case=case,
        )
    return tuple(as_tensor(t, case) for t in out)


def _diagnose_triple(out, qkv, nh, n_kv, want, case) -> None:
    for hint, how in QKV_MISTAKES:
        try:
            wrong = split_qkv_ref(qkv, nh, n_kv, how)
        except RuntimeError:  # a split that cannot be computed on this input cannot match
            continue
        if all(same(a, b) for a, b in zip(wrong, want, strict=True)):
            continue
        if all(same(a, b) for a, b in zip(out, wrong, strict=True)):
            raise Fail(hint, case=case)


# a grouped input whose width (4 + 2) * 2 = 12 also cuts into three equal blocks of 4 = 4 query heads * 1 = 1
# key/value head * 4: code that cuts three equal blocks runs here without a size error and shows it did
THIRDS_PROBE = (1, 2, 4, 1, 2)


def _cuts_thirds(fn) -> bool:
    """Re-run ``fn`` on ``THIRDS_PROBE``: are its queries the first of three equal blocks cut into ``num_heads``
    heads, and its keys and values the numbers of the second and the third block? (a size error otherwise named
    by torch's own message: key/value blocks viewed as ``num_heads`` heads, ``head_dim`` hard-coded, ...)"""
    b, n, nh, n_kv, hs = THIRDS_PROBE
    qkv_out = torch.randn(b, n, (nh + 2 * n_kv) * hs, generator=gen(708))
    try:
        out = _triple(call_unchanged(fn, qkv_out, nh, n_kv, names=("qkv", "num_heads", "num_kv_heads"), case="-"), "-")
    except Fail:
        return False
    thirds = qkv_out.chunk(3, dim=-1)

    def holds(got, third):
        return got.numel() == third.numel() and same(got.reshape(-1).sort().values, third.reshape(-1).sort().values)

    return same(out[0], split(thirds[0], nh)) and holds(out[1], thirds[1]) and holds(out[2], thirds[2])


def _triple_wrong(out, qkv, nh, n_kv, want, case) -> None:
    """Fail for the first wrong case: a mistake read on this case alone, else shape or the first wrong value."""
    _diagnose_triple(out, qkv, nh, n_kv, want, case)
    for got, right in zip(out, want, strict=True):
        compare(got, right, case)


def _same_triple(out, wrong) -> bool:
    return all(same(a, b) for a, b in zip(out, wrong, strict=True))


def body_split_qkv(fn) -> list[str]:
    g = gen(707)
    cases, passed_equal, runs, wrong = [], False, [], None
    for b, n, nh, n_kv, hs in QKV_CASES:
        qkv_out = torch.randn(b, n, (nh + 2 * n_kv) * hs, generator=g)
        case = f"qkv.shape={shape_str(qkv_out.shape)}, num_heads={nh}, num_kv_heads={n_kv}"
        try:
            out = _call_unchanged(fn, (qkv_out, nh, n_kv), ("qkv", "num_heads", "num_kv_heads"), case)
        except LearnerError as err:  # right with three equal blocks, a size error with fewer kv heads?
            if wrong is not None:  # an earlier case was wrong: that is said first
                _triple_wrong(*wrong)
            if passed_equal and n_kv < nh and isinstance(err.exc, RuntimeError) and _cuts_thirds(fn):
                raise Fail("qkv_equal_thirds", case=case) from None
            raise
        except Fail:
            if wrong is not None:
                _triple_wrong(*wrong)
            raise
        try:
            out = _triple(out, case)
        except Fail:
            if wrong is not None:
                _triple_wrong(*wrong)
            raise
        want = split_qkv_ref(qkv_out, nh, n_kv)
        runs.append((out, qkv_out, nh, n_kv))
        if wrong is None and not _same_triple(out, want):
            wrong = (out, qkv_out, nh, n_kv, want, case)
        passed_equal = passed_equal or (wrong is None and n_kv == nh)
        cases.append(f"num_heads={nh} num_kv_heads={n_kv}")
    if wrong is not None:
        for hint, ways in QKV_WHOLE_MISTAKES:
            if all(
                any(_same_triple(out, split_qkv_ref(q, nh, n_kv, how)) for how in ways) for out, q, nh, n_kv in runs
            ):
                raise Fail(hint, case=wrong[-1])
        _triple_wrong(*wrong)
    return cases


def _mha(x, layers, out_proj, nh, split_how="ok", merge_how="ok", weights=None):
    q, k, v = (split(t, nh, split_how) for t in qkv(x, layers))
    if weights is None:
        c = attention(q, k, v)
    else:
        c = weights(q, k) @ v
    c = merge(c, merge_how)  # (B, T, d_out)
    return project(out_proj, c) if out_proj is not None else c


def _mha_mistakes(x, layers, out_proj, nh) -> list:
    d_out = layers["W_query"].out_features
    mistakes = [("out_proj_missing", lambda: _mha(x, layers, None, nh))]
    layouts = (
        ("view_without_transpose", "no_transpose", "no_transpose"),
        ("view_without_transpose", "no_transpose", "ok"),
        ("merge_without_transpose", "ok", "no_transpose"),
        ("merge_features_first", "ok", "features_first"),
        ("heads_interleaved", "interleaved", "interleaved"),
    )
    # the head-layout mistakes, then the same with the projection forgotten as well (named by the layout)
    for proj in (out_proj, None):
        mistakes += [(hint, lambda s=s, m=m, proj=proj: _mha(x, layers, proj, nh, s, m)) for hint, s, m in layouts]
    if out_proj is None:
        return mistakes

    def weights_of(hint):
        return lambda q, k: dict(weights_mistakes(q, k, head_scale=d_out))[hint]()

    # exercise 4's class as given, both bugs left in: named by its merge
    mistakes.append(
        (
            "merge_features_first",
            lambda: _mha(x, layers, out_proj, nh, merge_how="features_first", weights=weights_of("scale_uses_d_out")),
        )
    )
    # the scale taken from the input's width d_in (x.shape[-1]) instead of the heads' head_dim: first, so that
    # where d_in = head_dim ** 2 it is not called "scaled twice" (named only when it fits every case)
    mistakes.append(
        (
            "scale_uses_d_in",
            lambda: _mha(x, layers, out_proj, nh, weights=lambda q, k: _scaled_by(q, k, x.shape[-1])),
        )
    )
    mistakes += [
        (hint, lambda hint=hint: _mha(x, layers, out_proj, nh, weights=weights_of(hint))) for hint in WEIGHT_HINTS
    ]
    return mistakes


def _scaled_by(q, k, width: int):
    return softmax_masked(q @ k.transpose(-2, -1) / width**0.5, causal_mask(k.shape[-2]))


def body_multihead(cls) -> list[str]:
    g = gen(606)
    cases = []
    diagnosis = Diagnosis()  # a mistake is named only when it gives the learner's output on every case
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
            if out_proj is None:  # no usable out_proj: only "not applied at all" can be recognised
                out = as_tensor(call(module, x.clone(), case=case), case)
                diagnose(
                    out, _mha_mistakes(x, layers, out_proj, nh), torch.tensor([float("nan")]), case=case
                )  # skip no mistake
                raise Fail("missing_attribute", name="`out_proj`", expected=f"nn.Linear({d_out}, {d_out})")
            if dropout > 0:
                expect_eval_without_dropout(module, x, case)
            forward_case(
                module,
                x,
                case,
                lambda x=x, a=(layers, out_proj, nh): _mha(x, *a),
                lambda x=x, a=(layers, out_proj, nh): _mha_mistakes(x, *a),
                passed_full=passed_full,
                context_length=context_length,
                diagnosis=diagnosis,
            )
            passed_full = passed_full or shape[1] == context_length
            cases.append(shape_str(shape))
    diagnosis.verdict()
    cases.append(probe_train_dropout(cls, heads=2, with_out_proj=True, extra_args=(2,)))
    return cases


_QKV_MESSAGES = {
    "not_triple": {
        "en": "{title}: expected three tensors (queries, keys, values), got {got} (input: {case}).",
        "zh": "{title}：应当返回三个张量 (queries, keys, values)，实际得到 {got}（输入：{case}）。",
    },
    "qkv_per_group": {
        "en": "{title}: the fused columns were read group by group, each key/value head's query heads, key and value side by side (input: {case}); this projection's columns are [all queries | all keys | all values]: cut them into blocks of num_heads * head_dim, num_kv_heads * head_dim and num_kv_heads * head_dim first, then split each block into heads.",
        "zh": "{title}：把融合投影的列当成了按组存放：每个键/值头的那组查询头、它的键和值并排放在一起（输入：{case}）；这个投影的列是 [全部查询 | 全部键 | 全部值]：先切成宽 num_heads * head_dim、num_kv_heads * head_dim、num_kv_heads * head_dim 的三块，再把每一块拆分成多个头。",
    },
    "qkv_equal_thirds": {
        "en": "{title}: right with as many key/value heads as query heads, but not with fewer (input: {case}): the fused output was cut as if into three equal blocks, which holds only when num_kv_heads == num_heads. Here the query block is num_heads * head_dim wide and the key and value blocks num_kv_heads * head_dim each.",
        "zh": "{title}：键/值头和查询头一样多时是对的，键/值头更少时就不对了（输入：{case}）：融合输出被当成三等份来切，这只在 num_kv_heads == num_heads 时成立。这里查询那一块宽 num_heads * head_dim，键和值那两块各宽 num_kv_heads * head_dim。",
    },
    "kv_split_into_num_heads": {
        "en": "{title}: the key and value blocks were cut into num_heads heads (input: {case}); they hold num_kv_heads heads of head_dim features each.",
        "zh": "{title}：把键和值那两块切成了 num_heads 个头（输入：{case}）；它们各有 num_kv_heads 个头，每个头 head_dim 个特征。",
    },
    "kv_heads_repeated": {
        "en": "{title}: the keys and values come back with num_heads heads, each key/value head repeated for the query heads that share it (input: {case}); the split returns the num_kv_heads heads the projection made, (B, num_kv_heads, T, head_dim) each: repeating them for the query heads is a step of the attention, after the split.",
        "zh": "{title}：返回的键和值有 num_heads 个头，每个键/值头都为共用它的查询头重复了一遍（输入：{case}）；拆分只返回投影算出的 num_kv_heads 个头，键和值各为 (B, num_kv_heads, T, head_dim)：为查询头重复它们是注意力计算里的一步，在拆分之后。",
    },
    "keys_values_swapped": {
        "en": "{title}: the keys and values are swapped (input: {case}): the fused columns are [queries | keys | values], so the keys are the middle block and the values the last.",
        "zh": "{title}：键和值弄反了（输入：{case}）：融合投影的列是 [查询 | 键 | 值]，所以键是中间那一块，值是最后一块。",
    },
    "view_without_transpose": {
        "en": "{title}: a block was cut into heads without moving the heads in front of the tokens (input: {case}): a reshape straight to (B, heads, T, head_dim) mixes tokens and heads.",
        "zh": "{title}：把一块拆分成多个头时，没有把“头”的维度移到词元前面（输入：{case}）：直接 reshape 成 (B, heads, T, head_dim) 会把词元和头混在一起。",
    },
}
_QKV_SPLIT = "t.reshape(b, num_tokens, heads, head_dim).transpose(1, 2)"
_QKV_BLOCKS = "qkv.split([num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim], dim=-1)"
_QKV_FIXES = {
    "qkv_per_group": {
        "en": f"`queries, keys, values = {_QKV_BLOCKS}`, then `{_QKV_SPLIT}` for each block `t` and its number of heads.",
        "zh": f"`queries, keys, values = {_QKV_BLOCKS}`，再对每一块 `t` 按它的头数做 `{_QKV_SPLIT}`。",
    },
    "qkv_equal_thirds": {
        "en": f"`head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)`, then `queries, keys, values = {_QKV_BLOCKS}`.",
        "zh": f"`head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)`，然后 `queries, keys, values = {_QKV_BLOCKS}`。",
    },
    "kv_split_into_num_heads": {
        "en": f"`{_QKV_SPLIT}` with `heads = num_kv_heads` for the keys and the values, `heads = num_heads` for the queries.",
        "zh": f"`{_QKV_SPLIT}`：键和值用 `heads = num_kv_heads`，查询用 `heads = num_heads`。",
    },
    "kv_heads_repeated": {
        "en": f"`{_QKV_SPLIT}` with `heads = num_kv_heads` for the keys and the values, returned as they are: no `repeat_interleave` in the split.",
        "zh": f"键和值用 `heads = num_kv_heads` 做 `{_QKV_SPLIT}`，原样返回：拆分里不要 `repeat_interleave`。",
    },
    "keys_values_swapped": {
        "en": f"`queries, keys, values = {_QKV_BLOCKS}`: queries, then keys, then values.",
        "zh": f"`queries, keys, values = {_QKV_BLOCKS}`：先查询，再键，最后是值。",
    },
    "view_without_transpose": {
        "en": f"Tokens first, then move the heads in front: `{_QKV_SPLIT}` for each block `t`.",
        "zh": f"先按词元排列，再把“头”的维度移到前面：对每一块 `t` 做 `{_QKV_SPLIT}`。",
    },
    "heads_interleaved": {
        "en": f"The number of heads before head_dim: `{_QKV_SPLIT}`.",
        "zh": f"头数在 head_dim 之前：`{_QKV_SPLIT}`。",
    },
    "not_triple": {
        "en": "`queries, keys, values = ...`, then `return queries, keys, values`: three tensors, not one stacked tensor.",
        "zh": "`queries, keys, values = ...`，然后 `return queries, keys, values`：三个张量，而不是叠成一个张量。",
    },
    "input_modified": {
        "en": f"`{_QKV_BLOCKS}` gives views of `qkv` to read: write into none of them (no `qkv /= ...`, `qkv.zero_()`, `queries[...] = ...`).",
        "zh": f"`{_QKV_BLOCKS}` 得到的是 `qkv` 的视图，只供读取：不要往里写（不要 `qkv /= ...`、`qkv.zero_()`、`queries[...] = ...`）。",
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
    "merge_features_first": {
        "en": "{title}: the heads were merged by viewing (B, num_heads, T, head_dim) as (B, d_out, T) and then transposing (input: {case}): the view reads the memory in the order heads, tokens, features and cuts it into rows of T numbers, so each row mixes tokens and features. Move the heads back behind the tokens first, then merge.",
        "zh": "{title}：合并各头时先把 (B, num_heads, T, head_dim) view 成 (B, d_out, T)，再转置（输入：{case}）：这个 view 按“头、词元、特征”的内存顺序读，再切成每行 T 个数，于是每一行都把词元和特征混在了一起。应当先把“头”的维度移回词元后面，再合并。",
    },
    "out_proj_missing": {
        "en": "{title}: the output projection is missing (input: {case}): the merged heads never go through `self.out_proj`.",
        "zh": "{title}：缺少输出投影（output projection）（输入：{case}）：合并后的各头输出没有经过 `self.out_proj`。",
    },
}
MODULE_FIXES = {
    "not_contiguous": {
        "en": "Call `.contiguous()` before `.view(...)` (or use `.reshape`).",
        "zh": "先调用 `.contiguous()` 再 `.view(...)`（或者改用 `.reshape`）。",
    },
    "view_without_transpose": {
        "en": "View as (b, num_tokens, num_heads, head_dim), then `.transpose(1, 2)`.",
        "zh": "先 view 成 (b, num_tokens, num_heads, head_dim)，再 `.transpose(1, 2)`。",
    },
    "merge_without_transpose": {
        "en": "`.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`.",
        "zh": "`.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`。",
    },
    "transpose_not_merged": {
        "en": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)`.",
        "zh": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)`。",
    },
    "heads_interleaved": {
        "en": "The view must be (..., num_heads, head_dim), in that order.",
        "zh": "view 的最后两维必须按 (..., num_heads, head_dim) 的顺序。",
    },
    "merge_features_first": {
        "en": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`: tokens first, then each token's features.",
        "zh": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`：先按词元，再排每个词元的特征。",
    },
    "out_proj_missing": {
        "en": "`return self.out_proj(context_vec)` after merging the heads.",
        "zh": "合并各头之后写 `return self.out_proj(context_vec)`。",
    },
}


RECORDS = [
    Exercise(
        name="split_qkv",
        notebook="05",
        body=body_split_qkv,
        points=2,
        takes="function",
        signature="``fn(qkv (B, T, (num_heads + 2 * num_kv_heads) * head_dim), num_heads, num_kv_heads) -> (queries, "
        "keys, values)``: one fused projection's columns [queries | keys | values] split into heads, queries "
        "``(B, num_heads, T, head_dim)``, keys and values ``(B, num_kv_heads, T, head_dim)``.",
        hints=(
            "qkv_equal_thirds",
            "kv_split_into_num_heads",
            "qkv_per_group",
            "view_without_transpose",
            "heads_interleaved",
            "kv_heads_repeated",
            "keys_values_swapped",
            "not_triple",
            "input_modified",
        ),
        references=_HEAD_REFERENCES + ("exercises._ex05_multihead.split", "exercises._ex05_multihead.split_qkv_ref"),
        messages=_QKV_MESSAGES,
        fixes=_QKV_FIXES,
    ),
    Exercise(
        name="multihead",
        notebook="05",
        body=body_multihead,
        points=3,
        takes="class",
        signature="``cls(d_in, d_out, context_length, dropout, num_heads)`` with ``W_query/W_key/W_value/out_proj``; "
        "``forward(x (B, T, d_in)) -> (B, T, d_out)``.",
        hints=(
            "out_proj_missing",
            "view_without_transpose",
            "merge_without_transpose",
            "merge_features_first",
            "heads_interleaved",
            "mask_wrong_size",
            "missing_attribute",
            "not_module",
            "instance_not_class",
            "dropout_after_out_proj",
            "scale_uses_d_in",
        )
        + WEIGHT_HINTS
        + DROPOUT_HINTS,
        references=(
            "multihead.MultiHeadAttention",
            "multihead.FusedMultiHeadAttention",
            "multihead.MultiHeadAttentionWrapper",
            "attention.CausalAttention",
            "exercises._ex05_multihead._mha",
        )
        + HELPERS,
    ),
]
