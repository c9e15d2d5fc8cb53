"""One checker per code exercise. Each ``_body_*`` runs the learner's code on fresh random inputs against the
llm_lab reference and raises ``Fail(hint)`` at the first problem, naming the likely mistake by recognising the
signature of the wrong output (it equals what a known wrong variant computes on the same input)."""

from __future__ import annotations

import torch
from torch import nn

from ..attention import CausalAttention
from ..masks import causal_mask, causal_softmax, mask_and_renormalize
from ..multihead import MultiHeadAttention
from ._core import Fail, LearnerError, as_tensor, call, compare, diagnose, same, shape_str

NEG_INF = float("-inf")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _triu(t: int, diagonal: int) -> torch.Tensor:
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=diagonal)


def _tril(t: int, diagonal: int) -> torch.Tensor:
    return torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=diagonal)


# ---- 01: the causal mask and the manual renormalization ----------------------------------------------------


def body_causal_mask(fn) -> list[str]:
    cases = []
    for t in (5, 1, 9, 2):
        case = f"num_tokens={t}"
        out = as_tensor(call(fn, t, case=case), case)
        want = causal_mask(t)
        as_bool = out if out.dtype == torch.bool else out != 0
        if out.dtype != torch.bool and same(as_bool, want):
            raise Fail("mask_not_bool", got=str(out.dtype), case=case)
        variants = [
            ("diagonal_masked", lambda t=t: _triu(t, 0)),
            ("mask_inverted", lambda t=t: _tril(t, 0)),
            ("mask_transposed", lambda t=t: _tril(t, -1)),
            ("future_open", lambda t=t: torch.zeros(t, t, dtype=torch.bool)),
        ]
        diagnose(as_bool, variants, want, case=case)
        compare(out, want, case)
        cases.append(f"T={t}")
    return cases


def _renormalized(w: torch.Tensor, keep: torch.Tensor, dim: int = -1) -> torch.Tensor:
    masked = w * keep
    return masked / masked.sum(dim=dim, keepdim=True)


def _renorm_variants(w: torch.Tensor) -> list:
    t = w.shape[-1]
    keep = ~causal_mask(t)
    return [
        ("column_sums", lambda: _renormalized(w, keep, dim=-2)),
        ("not_renormalized", lambda: w * keep),
        ("sum_over_all", lambda: (w * keep) / (w * keep).sum()),
        ("future_open", lambda: w),
        ("diagonal_masked", lambda: _renormalized(w, _tril(t, -1))),
        ("mask_inverted", lambda: _renormalized(w, _triu(t, 1))),
        ("mask_transposed", lambda: _renormalized(w, _triu(t, 0))),
    ]


def body_renormalize(fn) -> list[str]:
    g = _gen(101)
    cases = []
    for shape in ((5, 5), (1, 1), (8, 8), (2, 6, 6), (2, 3, 4, 4)):
        case = f"attn_weights.shape={shape_str(shape)}"
        w = torch.softmax(torch.randn(*shape, generator=g), dim=-1)
        want = mask_and_renormalize(w)
        batched = len(shape) > 2
        try:
            out = call(fn, w.clone(), case=case)
        except LearnerError:
            if batched:  # every single-matrix case passed: the batch dimensions are the problem
                raise Fail("batch_dims", case=case) from None
            raise
        variants = _renorm_variants(w)
        if batched:
            keep = ~causal_mask(shape[-1])
            variants = [("batch_dims", lambda d=d, w=w, keep=keep: _renormalized(w, keep, dim=d))
                        for d in range(len(shape) - 1)]
            variants += _renorm_variants(w)
        compare(out, want, case, variants)
        cases.append(shape_str(shape))
    return cases


# ---- 02: the -inf trick, scaled scores, fully masked rows --------------------------------------------------


def _softmax_masked(scores, hidden, dim=-1, fill=NEG_INF):
    return torch.softmax(scores.masked_fill(hidden, fill), dim=dim)


def _weights_variants(q: torch.Tensor, k: torch.Tensor, head_scale: float | None = None) -> list:
    """Wrong ways to compute causal attention weights from queries and keys ``(..., T, d_k)``."""
    d, t = k.shape[-1], k.shape[-2]
    s = q @ k.transpose(-2, -1)
    hide = causal_mask(t)
    ok = s / d**0.5
    variants = [
        ("softmax_dim", lambda: _softmax_masked(ok, hide, dim=-2)),
        ("scale_missing", lambda: _softmax_masked(s, hide)),
        ("scale_twice", lambda: _softmax_masked(s / d, hide)),
        ("scale_inverted", lambda: _softmax_masked(s * d**0.5, hide)),
        ("scale_uses_T", lambda: _softmax_masked(s / t**0.5, hide)),
        ("diagonal_masked", lambda: _softmax_masked(ok, _triu(t, 0))),
        ("future_open", lambda: torch.softmax(ok, dim=-1)),
        ("mask_inverted", lambda: _softmax_masked(ok, _tril(t, 0))),
        ("mask_transposed", lambda: _softmax_masked(ok, _tril(t, -1))),
        ("masked_with_zero", lambda: _softmax_masked(ok, hide, fill=0.0)),
        ("not_renormalized", lambda: torch.softmax(ok, dim=-1).masked_fill(hide, 0.0)),
    ]
    if head_scale is not None:
        variants.insert(0, ("scale_uses_d_out", lambda: _softmax_masked(s / head_scale**0.5, hide)))
    return variants


def body_attention_weights(fn) -> list[str]:
    g = _gen(202)
    cases = []
    for q_shape, k_shape in (((5, 4), (5, 4)), ((1, 3), (1, 3)), ((7, 2), (7, 2)), ((3, 16), (3, 16)),
                             ((2, 6, 8), (2, 6, 8))):
        case = f"queries.shape={shape_str(q_shape)}, keys.shape={shape_str(k_shape)}"
        q, k = torch.randn(*q_shape, generator=g), torch.randn(*k_shape, generator=g)
        want = causal_softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5)
        batched = len(q_shape) > 2
        try:
            out = call(fn, q.clone(), k.clone(), case=case)
        except LearnerError:
            if batched:
                raise Fail("batch_dims", case=case) from None
            raise
        variants = _weights_variants(q, k)
        if batched:  # keys.T / transpose(0, 1) on a batch
            variants.insert(0, ("batch_dims", lambda q=q, k=k: causal_softmax(q @ k.transpose(0, 1)
                                                                              / k.shape[-1] ** 0.5)))
        compare(out, want, case, variants)
        cases.append(shape_str(q_shape))
    return cases


def body_causal_softmax(fn) -> list[str]:
    g = _gen(303)
    cases = []
    paddings = (
        [[False] * 5, [True, True, False, False, False]],
        [[False]],
        [[True]],
        [[True, False, False, False, False, False], [False] * 6, [True, True, True, False, False, False]],
    )
    for pad in paddings:
        kpm = torch.tensor(pad)
        b, t = kpm.shape
        case = f"attn_scores.shape={shape_str((b, t, t))}, key_padding_mask={pad}"
        scores = torch.randn(b, t, t, generator=g)
        want = causal_softmax(scores, kpm)  # the reference broadcasts kpm as (B, 1, T): one row per sequence
        out = as_tensor(call(fn, scores.clone(), kpm.clone(), case=case), case)
        causal = causal_mask(t)
        hidden = causal | kpm.unsqueeze(-2)  # (B, T, T)
        rows_hidden = hidden.all(dim=-1)  # (B, T)

        def zero_rows(w, hid):
            return w.masked_fill(hid.all(dim=-1, keepdim=True), 0.0)

        wrong_axis = causal | kpm.unsqueeze(-1)
        pad_only = kpm.unsqueeze(-2).expand(b, t, t)
        with_diag = _triu(t, 0) | kpm.unsqueeze(-2)
        variants = [
            ("nan_rows", lambda s=scores, h=hidden: _softmax_masked(s, h)),
            ("padding_ignored", lambda s=scores: causal_softmax(s)),
            ("padding_wrong_axis", lambda s=scores, h=wrong_axis: zero_rows(_softmax_masked(s, h), h)),
            ("padding_wrong_axis", lambda s=scores, h=wrong_axis: _softmax_masked(s, h)),
            ("future_open", lambda s=scores, h=pad_only: zero_rows(_softmax_masked(s, h), h)),
            ("diagonal_masked", lambda s=scores, h=with_diag: zero_rows(_softmax_masked(s, h), h)),
        ]
        if not same(out, want):
            diagnose(out, variants, want, case=case)
            if out.shape == want.shape and rows_hidden.any() and same(out[~rows_hidden], want[~rows_hidden]):
                raise Fail("nan_rows" if out[rows_hidden].isnan().any() else "fully_masked_not_zero", case=case)
        compare(out, want, case)
        cases.append(shape_str((b, t, t)))
    return cases


# ---- 03: dropout ---------------------------------------------------------------------------------------------


def body_dropout(fn) -> list[str]:
    g = _gen(404)
    cases = []
    # training: the structure of the output (every value is 0 or x / (1 - p)) and the fraction dropped
    for shape, p, seed in (((200, 100), 0.2, 1), ((2, 3, 6, 6), 0.5, 2), ((100, 100), 0.7, 3)):
        x = torch.rand(*shape, generator=g) + 0.5  # strictly positive: a zero in the output means dropped
        case = f"x.shape={shape_str(shape)}, p={p}, training=True"
        out = as_tensor(call(fn, x.clone(), p, training=True, case=case, seed=seed), case)
        if out.shape != x.shape:
            raise Fail("wrong_shape", expected=shape_str(x.shape), got=shape_str(out.shape), case=case)
        out = out.double()
        xd = x.double()
        dropped = out == 0
        if not dropped.any() and same(out, xd):
            raise Fail("dropout_not_applied", p=p)
        frac = dropped.double().mean().item()
        if x.numel() >= 1000 and abs(frac - p) > 0.03:
            hint = "dropout_rate_inverted" if abs(frac - (1 - p)) <= 0.03 else "dropout_rate_wrong"
            raise Fail(hint, p=p, frac=f"{frac:.0%}", expected=f"{p:.0%}")
        kept = ~dropped
        ratio = out[kept] / xd[kept]

        def scaled_by(factor, ratio=ratio):
            return bool(torch.allclose(ratio, torch.full_like(ratio, factor), rtol=1e-4))

        if not scaled_by(1 / (1 - p)):
            for hint, factor in (("dropout_scaled_by_p", 1 / p), ("dropout_not_scaled", 1.0)):
                if scaled_by(factor):
                    raise Fail(hint, p=p)
            raise Fail("dropout_wrong_scale", p=p, ratio=f"{ratio.mean().item():.3f}")
        cases.append(f"p={p}")
    # p = 0 keeps everything; evaluation mode is the identity
    for shape, p, training in (((6, 6), 0.0, True), ((6, 6), 0.5, False), ((1, 1), 0.3, False),
                               ((2, 4, 4), 0.2, False)):
        x = torch.rand(*shape, generator=g) + 0.5
        case = f"x.shape={shape_str(shape)}, p={p}, training={training}"
        out = as_tensor(call(fn, x.clone(), p, training=training, case=case, seed=5), case)
        if not same(out, x) and out.shape == x.shape:
            if p == 0.0:
                ratio = out.double() / x.double()
                if not torch.isfinite(ratio).all():
                    raise Fail("dropout_scaled_by_p", p=p)
            else:
                raise Fail("dropout_in_eval", case=case)
        compare(out, x, case)
        cases.append(f"p={p}" if training else "eval")
    return cases


# ---- 04 and 05: attention modules ----------------------------------------------------------------------------


def _linear(module, name: str, d_in: int, d_out: int) -> nn.Linear:
    layer = getattr(module, name, None)
    expected = f"nn.Linear({d_in}, {d_out})"
    if not isinstance(layer, nn.Linear) or tuple(layer.weight.shape) != (d_out, d_in):
        raise Fail("missing_attribute", name=f"`{name}`", expected=expected)
    return layer


def _build(cls, args: tuple, case: str, seed: int):
    module = call(cls, *args, case=case, seed=seed)
    if not isinstance(module, nn.Module):
        raise Fail("not_module", got=type(module).__name__, case=case)
    return module


def _copy_linears(ref: nn.Module, layers: dict[str, nn.Linear]) -> None:
    for name, layer in layers.items():
        getattr(ref, name).load_state_dict(layer.state_dict())


def _qkv(x: torch.Tensor, layers: dict[str, nn.Linear]):
    return layers["W_query"](x), layers["W_key"](x), layers["W_value"](x)


def _context_variants(x: torch.Tensor, layers: dict[str, nn.Linear]) -> list:
    q, k, v = _qkv(x, layers)
    return [(hint, lambda make=make: make() @ v) for hint, make in _weights_variants(q, k)]


def _forward_case(module, x, case, ref, variants, *, passed_full: bool, context_length: int, seed: int = 0):
    """Compare one forward pass; a failure only when num_tokens < context_length means a mis-sliced mask."""
    short = x.shape[1] < context_length
    try:
        out = call(module, x.clone(), case=case, seed=seed)
        want = ref(x)
        if short and passed_full and not same(as_tensor(out, case), want):
            raise Fail("mask_wrong_size", case=case, context_length=context_length)
    except LearnerError:
        if short and passed_full:
            raise Fail("mask_wrong_size", case=case, context_length=context_length) from None
        raise
    compare(out, want, case, variants)


def _check_eval_dropout(module, ref, x, case, p):
    """The module is in eval mode with dropout p > 0: its output must not depend on the random seed."""
    outs = [as_tensor(call(module, x.clone(), case=case, seed=s), case) for s in (11, 12)]
    ref.train()
    torch.manual_seed(11)
    with_dropout = ref(x)
    ref.eval()
    if not same(outs[0], outs[1]) or same(outs[0], with_dropout):
        raise Fail("dropout_in_eval", case=case)


def _check_train_dropout(module, x, case, p):
    module.train()
    outs = [as_tensor(call(module, x.clone(), case=case, seed=s), case) for s in (21, 22)]
    module.eval()
    eval_out = as_tensor(call(module, x.clone(), case=case), case)
    if same(outs[0], eval_out) and same(outs[1], eval_out):
        raise Fail("dropout_missing", p=p, case=case)
    if outs[0].shape != eval_out.shape:
        raise Fail("wrong_shape", expected=shape_str(eval_out.shape), got=shape_str(outs[0].shape), case=case)


_WEIGHT_HINTS = ("scale_uses_d_out", "softmax_dim", "scale_missing", "scale_twice", "scale_inverted", "scale_uses_T",
                 "diagonal_masked", "future_open", "mask_inverted", "mask_transposed", "masked_with_zero",
                 "not_renormalized")


def body_causal_attention(cls) -> list[str]:
    g = _gen(505)
    cases = []
    configs = (
        ((3, 4, 6, 0.0), ((2, 6, 3), (2, 4, 3), (1, 1, 3))),
        ((5, 3, 10, 0.5), ((3, 7, 5), (1, 10, 5))),
    )
    for n, (args, shapes) in enumerate(configs):
        d_in, d_out, context_length, dropout = args
        build_case = f"{cls.__name__ if hasattr(cls, '__name__') else 'cls'}{args}"
        module = _build(cls, args, build_case, seed=100 + n)
        layers = {name: _linear(module, name, d_in, d_out) for name in ("W_query", "W_key", "W_value")}
        ref = CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=layers["W_query"].bias is not None)
        _copy_linears(ref, layers)
        module.eval()
        ref.eval()
        passed_full = False
        for shape in shapes:
            x = torch.randn(*shape, generator=g)
            case = f"{build_case}, x.shape={shape_str(shape)}"
            if dropout > 0:
                _check_eval_dropout(module, ref, x, case, dropout)
            _forward_case(module, x, case, ref, _context_variants(x, layers), passed_full=passed_full,
                          context_length=context_length)
            passed_full = passed_full or shape[1] == context_length
            cases.append(shape_str(shape))
        if dropout > 0:
            cases.append(_train_dropout_case(module, d_in, g, build_case, dropout))
    return cases


def _train_dropout_case(module, d_in, g, build_case, dropout) -> str:
    """In train() mode the learner's dropout must zero weights and scale the rest by 1/(1-p)."""
    x = torch.randn(2, 5, d_in, generator=g)
    _check_train_dropout(module, x, f"{build_case}, x.shape={shape_str(x.shape)}, train()", dropout)
    return "train()"


def _split(t, nh, how):
    b, n, d = t.shape
    hd = d // nh
    if how == "no_transpose":
        return t.reshape(b, nh, n, hd)
    if how == "interleaved":
        return t.reshape(b, n, hd, nh).permute(0, 3, 1, 2)
    return t.view(b, n, nh, hd).transpose(1, 2)


def _merge(c, how):
    b, nh, n, hd = c.shape
    if how == "no_transpose":
        return c.reshape(b, n, nh * hd)
    if how == "interleaved":
        return c.permute(0, 2, 3, 1).reshape(b, n, nh * hd)
    return c.transpose(1, 2).reshape(b, n, nh * hd)


def _mha(x, layers, out_proj, nh, split="ok", merge="ok", weights=None):
    q, k, v = (_split(t, nh, split) for t in _qkv(x, layers))
    w = weights(q, k) if weights else causal_softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5)
    c = _merge(w @ v, merge)  # (B, T, d_out)
    return out_proj(c) if out_proj is not None else c


def _mha_variants(x, layers, out_proj, nh) -> list:
    d_out = layers["W_query"].out_features
    proj = out_proj
    variants = [
        ("out_proj_missing", lambda: _mha(x, layers, None, nh)),
        ("view_without_transpose", lambda: _mha(x, layers, proj, nh, "no_transpose", "no_transpose")),
        ("view_without_transpose", lambda: _mha(x, layers, proj, nh, "no_transpose", "ok")),
        ("merge_without_transpose", lambda: _mha(x, layers, proj, nh, "ok", "no_transpose")),
        ("heads_interleaved", lambda: _mha(x, layers, proj, nh, "interleaved", "interleaved")),
    ]
    # the same head-layout mistakes with the projection forgotten as well (name the layout first)
    variants += [(hint, lambda s=s, m=m: _mha(x, layers, None, nh, s, m)) for hint, s, m in (
        ("view_without_transpose", "no_transpose", "no_transpose"),
        ("view_without_transpose", "no_transpose", "ok"),
        ("merge_without_transpose", "ok", "no_transpose"),
        ("heads_interleaved", "interleaved", "interleaved"),
    )]
    if proj is None:
        return variants
    for hint in _WEIGHT_HINTS:
        def weights(q, k, hint=hint):
            return dict(_weights_variants(q, k, head_scale=d_out))[hint]()

        variants.append((hint, lambda weights=weights: _mha(x, layers, proj, nh, weights=weights)))
    return variants


def body_multihead(cls) -> list[str]:
    g = _gen(606)
    cases = []
    configs = (
        ((3, 6, 5, 0.0, 2), ((2, 5, 3), (2, 3, 3), (1, 1, 3))),
        ((4, 8, 8, 0.5, 4), ((3, 6, 4), (1, 8, 4))),
        ((4, 4, 4, 0.0, 1), ((2, 4, 4),)),
    )
    for n, (args, shapes) in enumerate(configs):
        d_in, d_out, context_length, dropout, nh = args
        build_case = f"{cls.__name__ if hasattr(cls, '__name__') else 'cls'}{args}"
        module = _build(cls, args, build_case, seed=200 + n)
        layers = {name: _linear(module, name, d_in, d_out) for name in ("W_query", "W_key", "W_value")}
        out_proj = getattr(module, "out_proj", None)
        if not (isinstance(out_proj, nn.Linear) and tuple(out_proj.weight.shape) == (d_out, d_out)):
            out_proj = None
        ref = MultiHeadAttention(d_in, d_out, context_length, dropout, nh,
                                 qkv_bias=layers["W_query"].bias is not None)
        _copy_linears(ref, layers)
        if out_proj is not None:
            ref.out_proj.load_state_dict(out_proj.state_dict())
        module.eval()
        ref.eval()
        passed_full = False
        for shape in shapes:
            x = torch.randn(*shape, generator=g)
            case = f"{build_case}, x.shape={shape_str(shape)}"
            variants = _mha_variants(x, layers, out_proj, nh)
            if out_proj is None:  # no usable out_proj: only "not applied at all" can be recognised
                out = as_tensor(call(module, x.clone(), case=case), case)
                diagnose(out, variants, ref(x), case=case)
                raise Fail("missing_attribute", name="`out_proj`", expected=f"nn.Linear({d_out}, {d_out})")
            if dropout > 0:
                _check_eval_dropout(module, ref, x, case, dropout)
            _forward_case(module, x, case, ref, variants, passed_full=passed_full, context_length=context_length)
            passed_full = passed_full or shape[1] == context_length
            cases.append(shape_str(shape))
        if dropout > 0:
            cases.append(_train_dropout_case(module, d_in, g, build_case, dropout))
    return cases


def body_split_heads(fn) -> list[str]:
    g = _gen(707)
    cases = []
    for shape, nh in (((2, 5, 6), 3), ((1, 1, 4), 2), ((3, 7, 8), 4), ((2, 3, 4), 1)):
        x = torch.randn(*shape, generator=g)
        case = f"x.shape={shape_str(shape)}, num_heads={nh}"
        out = call(fn, x.clone(), nh, case=case)
        b, n, d = shape
        variants = [
            ("view_without_transpose", lambda x=x, nh=nh: _split(x, nh, "no_transpose")),
            ("view_without_transpose", lambda x=x, nh=nh, b=b, n=n, d=d: x.view(b, n, nh, d // nh)),
            ("heads_interleaved", lambda x=x, nh=nh: _split(x, nh, "interleaved")),
        ]
        compare(out, _split(x, nh, "ok"), case, variants)
        cases.append(f"{shape_str(shape)} num_heads={nh}")
    return cases


def body_merge_heads(fn) -> list[str]:
    g = _gen(808)
    cases = []
    for shape in ((2, 3, 5, 2), (1, 2, 1, 2), (3, 4, 7, 2), (2, 1, 3, 4)):
        c = torch.randn(*shape, generator=g)
        case = f"context_vec.shape={shape_str(shape)}"
        try:
            out = call(fn, c.clone(), case=case)
        except LearnerError as err:
            if isinstance(err.exc, RuntimeError) and "view" in str(err.exc) and "contiguous" in str(err.exc):
                raise Fail("not_contiguous", case=case) from None
            raise
        variants = [
            ("merge_without_transpose", lambda c=c: _merge(c, "no_transpose")),
            ("merge_without_transpose", lambda c=c: c.transpose(1, 2)),  # transposed but never merged
            ("heads_interleaved", lambda c=c: _merge(c, "interleaved")),
        ]
        compare(out, _merge(c, "ok"), case, variants)
        cases.append(shape_str(shape))
    return cases


# ---- 06: data ------------------------------------------------------------------------------------------------


def _windows(ids: torch.Tensor, max_length: int, stride: int, starts=None) -> torch.Tensor:
    """(2, n_windows, max_length): inputs and targets stacked."""
    if starts is None:
        w = ids.unfold(0, max_length + 1, stride)
    else:
        w = torch.stack([ids[s : s + max_length + 1] for s in starts])
    return torch.stack([w[:, :-1], w[:, 1:]])


def body_windows(fn) -> list[str]:
    g = _gen(909)
    cases = []
    for n_tokens, max_length, stride in ((20, 4, 4), (20, 4, 1), (20, 3, 2), (20, 4, 5), (7, 6, 3), (20, 1, 1)):
        ids = torch.randint(0, 50257, (n_tokens,), generator=g)
        case = f"len(token_ids)={n_tokens}, max_length={max_length}, stride={stride}"
        out = call(fn, ids.tolist(), max_length, stride, case=case)
        if out is None:
            raise Fail("returned_none", case=case)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Fail("not_pair", got=type(out).__name__, case=case)
        inputs, targets = (as_tensor(t, case) for t in out)
        want = _windows(ids, max_length, stride)
        w = ids.unfold(0, max_length + 1, stride)
        variants = [
            ("targets_not_shifted", lambda w=w: torch.stack([w[:, :-1], w[:, :-1]])),
            ("targets_swapped", lambda w=w: torch.stack([w[:, 1:], w[:, :-1]])),
            ("stride_ignored", lambda ids=ids, m=max_length: _windows(ids, m, 1)),
            ("missing_last_window", lambda ids=ids, m=max_length, s=stride: _windows(
                ids, m, s, range(0, len(ids) - m - 1, s))),
        ]
        if inputs.shape == targets.shape:
            got = torch.stack([inputs, targets])
            expected, n_got = want.shape[1], got.shape[1] if got.dim() == 3 else -1
            diagnose(got, variants, want, case=case, got=n_got, expected=expected)
            if got.dim() == 3 and n_got != expected and got.shape[2] == max_length:
                common = min(n_got, expected)
                if same(got[:, :common], want[:, :common]):
                    hint = "missing_last_window" if n_got < expected else "extra_window"
                    raise Fail(hint, case=case, got=n_got, expected=expected)
        for t, wt in ((inputs, want[0]), (targets, want[1])):
            if t.is_floating_point():
                raise Fail("wrong_dtype", expected="torch.int64", got=str(t.dtype), case=case)
            compare(t, wt, case)
        cases.append(f"len={n_tokens} max_length={max_length} stride={stride}")
    return cases


def body_input_embeddings(fn) -> list[str]:
    g = _gen(1010)
    vocab, context_length, d = 50, 8, 4
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1010)
        tok_emb, pos_emb = nn.Embedding(vocab, d), nn.Embedding(context_length, d)
    cases = []
    passed_full = False
    for shape, high in (((2, 8), context_length), ((2, 5), vocab), ((1, 1), vocab), ((3, 8), vocab)):
        ids = torch.randint(0, high, shape, generator=g)
        case = f"token_ids.shape={shape_str(shape)}, context_length={context_length}"
        short = shape[1] < context_length
        try:
            out = call(fn, ids.clone(), tok_emb, pos_emb, case=case)
        except LearnerError as err:
            if short and passed_full:
                raise Fail("positions_wrong_length", case=case) from None
            if isinstance(err.exc, IndexError):
                raise Fail("positions_from_ids", case=case) from None
            raise
        want = tok_emb(ids) + pos_emb(torch.arange(shape[1]))
        variants = [
            ("positions_missing", lambda ids=ids: tok_emb(ids)),
            ("positions_from_ids", lambda ids=ids: tok_emb(ids) + pos_emb(ids)),
        ]
        compare(out, want, case, variants)
        passed_full = passed_full or not short
        cases.append(shape_str(shape))
    return cases
