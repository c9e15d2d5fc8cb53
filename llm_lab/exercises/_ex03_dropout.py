"""Notebook 03: inverted dropout by hand."""

from __future__ import annotations

import torch

from ._core import Exercise, Fail, as_tensor, compare, same, shape_str
from ._harness import last_observed
from ._observe import called_matching
from ._shared import call_unchanged, gen, kept_scale_hint, rate_hint, shared_dims


def _call(fn, x, p, training, case, seed, observed: list | None = None):
    """The learner's call on a copy of ``x``; ``observed``: record its torch calls there (the "by hand" check)."""
    out = call_unchanged(
        fn, x, p, names=("x", "p"), training=training, case=case, seed=seed, observe=observed is not None
    )
    if observed is not None:
        observed.append(last_observed())
    return as_tensor(out, case)


def _builtin_used(observed: list) -> str | None:
    """Did any of the checked calls reach torch's own dropout (any route: nn.Dropout, F.dropout, torch.dropout,
    an aten overload)? Every call of the check is observed: code that takes torch's dropout only for some
    inputs (large ones, some p) is seen on those."""
    return next((op for op in (called_matching(r, "dropout") for r in observed) if op), None)


def _training_case(fn, shape, p, seed, g, observed: list) -> str:
    x = torch.rand(*shape, generator=g) + 0.5  # strictly positive: a zero in the output means dropped
    case = f"x.shape={shape_str(shape)}, p={p}, training=True"
    out = _call(fn, x, p, True, case, seed, observed)
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
    g, observed = gen(404), []
    # training: every value is 0 or x/(1-p), the dropped fraction is p (n = 20000, 8192, 10000 draws: the
    # Hoeffding tolerance at a 1e-6 false alarm is 0.019, 0.029, 0.027), each entry drawn on its own
    cases = [
        _training_case(fn, shape, p, seed, g, observed)
        for shape, p, seed in (((200, 100), 0.2, 1), ((16, 8, 8, 8), 0.5, 2), ((100, 100), 0.7, 3))
    ]
    # p = 0 keeps everything; evaluation mode is the identity
    for shape, p, training in (
        ((6, 6), 0.0, True),
        ((6, 6), 0.5, False),
        ((1, 1), 0.3, False),
        ((2, 4, 4), 0.2, False),
    ):
        x = torch.rand(*shape, generator=g) + 0.5
        case = f"x.shape={shape_str(shape)}, p={p}, training={training}"
        out = _call(fn, x, p, training, case, 5, observed)
        if not same(out, x) and out.shape == x.shape:
            if p == 0.0:
                ratio = out.double() / x.double()
                if not torch.isfinite(ratio).all():
                    raise Fail("dropout_scaled_by_p", p=p)
            else:
                raise Fail("dropout_in_eval", case=case)
        compare(out, x, case)
        cases.append(f"p={p}" if training else "eval")
    builtin = _builtin_used(observed)  # "by hand": judged once every value is right (a wrong dropout first)
    if builtin:
        raise Fail("dropout_builtin", ref=builtin)
    return cases


# This module's own hint texts (used by no other exercise): every record below gets them (_registry).
MODULE_MESSAGES = {
    "dropout_not_applied": {
        "en": "{title}: in training mode with p={p} nothing was dropped: the output equals the input.",
        "zh": "{title}：训练模式下 p={p}，却没有任何值被丢弃，输出与输入完全相同。",
    },
    "dropout_builtin": {
        "en": "{title}: right values, but with `{ref}`, torch's own dropout: this exercise writes dropout by hand (no nn.Dropout, F.dropout or torch.dropout), from a random mask and the 1/(1-p) scale.",  # noqa: E501
        "zh": "{title}：数值是对的，但用了 torch 自带的丢弃 `{ref}`：这道练习要求手写丢弃（不用 nn.Dropout、F.dropout 或 torch.dropout），用随机的丢弃掩码和 1/(1-p) 缩放来实现。",  # noqa: E501
    },
}
MODULE_FIXES = {
    "dropout_builtin": {
        "en": "`keep = torch.rand_like(x) >= p`, then `return x * keep / (1 - p)`.",
        "zh": "`keep = torch.rand_like(x) >= p`，然后 `return x * keep / (1 - p)`。",
    },
}


RECORDS = [
    Exercise(
        name="dropout",
        notebook="03",
        body=body_dropout,
        points=2,
        takes="function",
        signature="``fn(x, p, training=True) -> tensor``: inverted dropout by hand; identity when not training.",
        hints=(
            "dropout_scaled_by_p",
            "dropout_not_scaled",
            "dropout_wrong_scale",
            "dropout_in_eval",
            "dropout_rate_inverted",
            "dropout_rate_wrong",
            "dropout_not_applied",
            "dropout_mask_shared",
            "nan_output",
            "dropout_builtin",
            "input_modified",
        ),
    ),
]
