"""Notebook 03: inverted dropout by hand."""

from __future__ import annotations

import torch

from ._core import Exercise, Fail, as_tensor, compare, same, shape_str
from ._harness import call
from ._shared import gen, kept_scale_hint, rate_hint, shared_dims


def _training_case(fn, shape, p, seed, g) -> str:
    x = torch.rand(*shape, generator=g) + 0.5  # strictly positive: a zero in the output means dropped
    case = f"x.shape={shape_str(shape)}, p={p}, training=True"
    out = as_tensor(call(fn, x.clone(), p, training=True, case=case, seed=seed), case)
    if out.shape != x.shape:
        raise Fail("wrong_shape", expected=shape_str(x.shape), got=shape_str(out.shape), case=case)
    out, xd = out.double(), x.double()
    if out.isnan().any():
        raise Fail("nan_output", n_nan=int(out.isnan().sum()), n_all=out.numel(), case=case)
    dropped = out == 0
    if not dropped.any() and same(out, xd):
        raise Fail("dropout_not_applied", p=p)
    frac = dropped.double().mean().item()
    shared = shared_dims(dropped, frac)  # first: a reused mask also makes the rate unreliable
    if shared:
        raise Fail("dropout_mask_shared", p=p, dims=", ".join(f"dim={d}" for d in shared))
    hint = rate_hint(frac, p, x.numel())
    if hint:
        raise Fail(hint, p=p, frac=f"{frac:.0%}", expected=f"{p:.0%}")
    found = kept_scale_hint(out[~dropped] / xd[~dropped], p)
    if found:
        raise Fail(found[0], p=p, **found[1])
    return f"p={p}"


def body_dropout(fn) -> list[str]:
    g = gen(404)
    # training: every value is 0 or x/(1-p), the dropped fraction is p (n = 20000, 8192, 10000 draws: the
    # Hoeffding tolerance at a 1e-6 false alarm is 0.019, 0.029, 0.027), each entry drawn on its own
    cases = [_training_case(fn, shape, p, seed, g)
             for shape, p, seed in (((200, 100), 0.2, 1), ((16, 8, 8, 8), 0.5, 2), ((100, 100), 0.7, 3))]
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


# This module's own hint texts (used by no other exercise): every record below gets them (_registry).
MODULE_MESSAGES = {
    "dropout_not_applied": {
        "en": "{title}: in training mode with p={p} nothing was dropped: the output equals the input.",
        "zh": "{title}：训练模式下 p={p}，却没有任何值被丢弃，输出与输入完全相同。",
    },
}


RECORDS = [
    Exercise(
        name="dropout", notebook="03", body=body_dropout, points=2, takes="function",
        signature="``fn(x, p, training=True) -> tensor``: inverted dropout by hand; identity when not training.",
        hints=("dropout_scaled_by_p", "dropout_not_scaled", "dropout_wrong_scale", "dropout_in_eval",
               "dropout_rate_inverted", "dropout_rate_wrong", "dropout_not_applied", "dropout_mask_shared",
               "nan_output"),
    ),
]
