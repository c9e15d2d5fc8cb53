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
from ._texts_ex05_multihead import _QKV_FIXES, _QKV_MESSAGES
from ._texts_ex05_multihead import MODULE_FIXES as MODULE_FIXES  # read off this module by _registry
from ._texts_ex05_multihead import MODULE_MESSAGES as MODULE_MESSAGES


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


_HEAD_REFERENCES = ("multihead.MultiHeadAttention", "multihead.FusedMultiHeadAttention")  # _split_heads, _merge_heads


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
