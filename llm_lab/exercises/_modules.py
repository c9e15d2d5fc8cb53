"""Checking attention modules (notebooks 04 and 05): building the learner's class, a functional reference that
uses the learner's own layers (any bias layout), the forward cases, and dropout in eval and train mode.

Train-mode dropout is checked by a probe whose outcome can be read off the output. The checker sets the
learner's layers to: W_query = W_key = 0 (all scores 0: uniform causal weights 1/(t+1)), W_value = identity
per head, out_proj = identity with bias 0.25 (when it has a bias). Two inputs in one batch:
- x_j = ones: every feature of a context vector is the sum of that head's kept weights, so dropout on the
  weights gives rows constant within a head; dropout on the context vectors gives 0 or 1/(1-p) per
  feature; after out_proj it also zeroes the bias; on x (or the values) it gives mixtures.
- x_j = e_j (one-hot): feature i of head h at query t is that head's weight on key i, so the output shows
  every dropped weight: the rate, the 1/(1-p) scale and the independence across (B, nh, T, T) are read off.

When nothing at all is seen dropped, the probe asks once more with W_query = W_key = identity per head
(scores x_i . x_j instead of 0): dropout on the scores, queries or keys drops zeros in the first probe, which
the softmax cannot show, but changes the output here; a module without dropout gives its eval output
exactly (deterministic), so this adds no false failure.

False failures: for a correct dropout the rate test fails with probability <= 1e-6 per p (Hoeffding, see
``rate_tolerance``) and each independence test with < 1e-11 (``shared_dims``); the scale and placement
tests are exact. Over the 2 values of p a correct module fails with probability < 3e-6 per check. The
seeds are fixed, so a given solution gets the same verdict every run.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from ._core import Diagnosis, Fail, LearnerError, as_tensor, compare, same
from ._harness import call
from ._shared import attention, call_unchanged, kept_scale_hint, rate_tolerance, shared_dims

# every mistake a module check (04 causal attention, 05 multi-head) can name about its dropout
DROPOUT_HINTS = (
    "layers_not_followed",
    "dropout_in_eval",
    "dropout_missing",
    "dropout_on_output",
    "dropout_on_input",
    "dropout_default_rate",
    "dropout_rate_fixed",
    "dropout_rate_inverted",
    "dropout_rate_wrong",
    "dropout_not_scaled",
    "dropout_scaled_by_p",
    "dropout_wrong_scale",
    "dropout_renormalized",
    "dropout_also_on_output",
    "dropout_mask_shared",
    "dropout_on_scores",
)


def linear(module, name: str, d_in: int, d_out: int) -> nn.Linear:
    layer = getattr(module, name, None)
    if not isinstance(layer, nn.Linear) or tuple(layer.weight.shape) != (d_out, d_in):
        raise Fail("missing_attribute", name=f"`{name}`", expected=f"nn.Linear({d_in}, {d_out})")
    if layer.weight.is_meta:
        raise Fail("meta_tensor", case=f"{name}.weight")
    return layer


def project(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """The layer applied as a plain linear map (whatever its forward does), bias or not."""
    w = layer.weight.detach().cpu()
    b = None if layer.bias is None else layer.bias.detach().cpu()
    return F.linear(x.to(w.dtype), w, b)


def build(cls, args: tuple, case: str, seed: int):
    module = call(cls, *args, case=case, seed=seed)
    if not isinstance(module, nn.Module):
        raise Fail("not_module", got=type(module).__name__, case=case)
    return module


def class_name(cls) -> str:
    return cls.__name__ if isinstance(getattr(cls, "__name__", None), str) else "cls"


def qkv(x: torch.Tensor, layers: dict) -> tuple:
    return project(layers["W_query"], x), project(layers["W_key"], x), project(layers["W_value"], x)


def forward_case(
    module,
    x,
    case,
    want,
    mistakes,
    *,
    passed_full: bool,
    context_length: int,
    seed: int = 0,
    observe: bool = False,
    diagnosis: Diagnosis | None = None,
):
    """Compare one forward pass; a failure only when num_tokens < context_length means a mis-sliced mask.
    ``want()`` and ``mistakes()`` compute the answer and the known mistakes AFTER the learner's call returns, so
    code that walks up the frames finds no answer to read. ``observe``: record the call's ops
    (``_harness.last_observed()`` afterwards). ``diagnosis``: the case is added to it (judged with the others by
    its ``verdict()``: a mistake named only when it fits every case) instead of compared now."""
    short = x.shape[1] < context_length
    try:
        out = call_unchanged(module, x, names=("x",), case=case, seed=seed, observe=observe)
    except Fail as exc:
        if diagnosis is not None:
            diagnosis.verdict(ended=True)  # an earlier wrong case is said first
        if isinstance(exc, LearnerError) and short and passed_full:
            raise Fail("mask_wrong_size", case=case, context_length=context_length) from None
        raise
    expected = want()
    if short and passed_full and not same(as_tensor(out, case), expected):
        if diagnosis is not None:
            diagnosis.verdict(ended=True)
        raise Fail("mask_wrong_size", case=case, context_length=context_length)
    if diagnosis is not None:
        diagnosis.add(out, expected, case, mistakes())
    else:
        compare(out, expected, case, mistakes())


def expect_eval_without_dropout(module, x, case):
    """In eval mode with dropout p > 0 the output must not depend on the random seed."""
    outs = [as_tensor(call(module, x.clone(), case=case, seed=s), case) for s in (11, 12)]
    if not same(outs[0], outs[1]):
        raise Fail("dropout_in_eval", case=case)


# ---- train-mode dropout -----------------------------------------------------------------------------------

T = 8
BETA = 0.25
PROBE_PS = ((0.2, 31), (0.7, 32))


def _set_probe_weights(module, heads: int, with_out_proj: bool) -> float:
    d_out = heads * T
    for name in ("W_query", "W_key"):
        layer = linear(module, name, T, d_out)
        layer.weight.zero_()
        if layer.bias is not None:
            layer.bias.zero_()
    value = linear(module, "W_value", T, d_out)
    value.weight.copy_(torch.eye(T).repeat(heads, 1))
    if value.bias is not None:
        value.bias.zero_()
    if not with_out_proj:
        return 0.0
    out_proj = linear(module, "out_proj", d_out, d_out)
    out_proj.weight.copy_(torch.eye(d_out))
    if out_proj.bias is None:
        return 0.0
    out_proj.bias.fill_(BETA)
    return BETA


def _probe_input(batch: int) -> torch.Tensor:
    ones = torch.ones(batch, T, T)
    one_hot = torch.eye(T).expand(batch, T, T)
    return torch.cat([ones, one_hot])  # (2 * batch, T, d_in = T)


def _expected_eval(batch: int, heads: int, beta: float) -> torch.Tensor:
    t = torch.arange(T).unsqueeze(-1)
    weights = torch.tril(torch.ones(T, T)) / (t + 1)  # (T queries, T keys)
    ones = torch.ones(batch, T, heads * T)
    one_hot = weights.repeat(1, heads).expand(batch, T, heads * T)
    return torch.cat([ones, one_hot]) + beta


def _placement(r_ones: torch.Tensor, out_ones: torch.Tensor, heads: int, beta: float) -> str | None:
    """Where dropout acts, read off the all-ones half (None: on the weights, or nowhere)."""
    per_head = r_ones.reshape(*r_ones.shape[:2], heads, T)
    if bool(((per_head.amax(-1) - per_head.amin(-1)).abs() < 1e-4).all()):  # real spreads are >= 0.125
        return None
    if beta and bool((out_ones.abs() < 1e-4).any()):
        return "dropout_after_out_proj"
    nonzero = r_ones[r_ones.abs() > 1e-4]
    if nonzero.numel() and bool(torch.allclose(nonzero, nonzero[0].expand_as(nonzero), rtol=1e-4)):
        return "dropout_on_output"
    # dropout on the weights makes each head's features equal (that head's kept weights, summed); dropout on the
    # context vectors as well zeroes some of them and leaves the rest equal
    kept = per_head.abs() > 1e-4
    high = per_head.masked_fill(~kept, float("-inf")).amax(-1)
    low = per_head.masked_fill(~kept, float("inf")).amin(-1)
    equal = ((high - low).abs() <= 1e-4 * high.abs().clamp(min=1)) | ~kept.any(-1)
    if bool(equal.all()):
        return "dropout_also_on_output"
    return "dropout_on_input"


class _Probe(NamedTuple):
    """One train-mode probe at rate ``p``: the share of visible weights dropped, the kept ones (scaled back), the
    dropped and visible masks ``(B, nh, T, T)``, and the case's name."""

    p: float
    frac: float
    kept: torch.Tensor
    dropped: torch.Tensor
    visible: torch.Tensor
    case: str


def _fracs(stats) -> str:
    return ", ".join(f"p={p}: {frac:.0%}" for p, frac, *_ in stats)


def probe_train_dropout(cls, heads: int, with_out_proj: bool, extra_args: tuple = ()) -> str:
    """Build the learner's class at several p and read rate, placement, scale and independence of dropout."""
    batch = 64 // heads  # 64 * 36 = 2304 visible weights per p: rate tolerance 0.056 at a 1e-6 false alarm
    x = _probe_input(batch)
    stats = []
    renormalized = []  # per p: every row that lost some weights and kept some sums to 1 again
    module = case = None
    for p, seed in PROBE_PS:
        args = (T, heads * T, T, p) + extra_args
        case = f"{class_name(cls)}{args}, train()"
        module = build(cls, args, case, seed)
        beta = _set_probe_weights(module, heads, with_out_proj)
        module.eval()
        if not same(as_tensor(call(module, x.clone(), case=case), case), _expected_eval(batch, heads, beta)):
            # right on the forward cases, with the layers it was built with, and wrong once they are set: the
            # output does not follow its layers (weights copied at construction: stale after an optimizer step)
            raise Fail("layers_not_followed", case=case)
        module.train()
        out = as_tensor(call(module, x.clone(), case=case, seed=seed), case).double()
        module.eval()
        if out.isnan().any():  # the eval output was right: dropout multiplied a -inf (a masked score) by 0
            raise Fail("dropout_on_scores", p=p)
        r = out - beta
        hint = _placement(r[:batch], out[:batch], heads, beta)
        if hint:
            raise Fail(hint, p=p)
        t = torch.arange(T, dtype=torch.double).reshape(1, 1, T, 1)
        scaled = r[batch:].reshape(batch, T, heads, T).permute(0, 2, 1, 3) * (t + 1)  # (B, nh, T, T)
        visible = torch.tril(torch.ones(T, T, dtype=torch.bool)).expand_as(scaled)
        dropped = scaled.abs() < 1e-3  # a kept weight reads >= 1/(1-p) >= 1; float noise stays far below
        frac = dropped[visible].double().mean().item()
        weights = r[batch:].reshape(batch, T, heads, T).permute(0, 2, 1, 3)  # what the weights became
        mixed = (dropped & visible).any(-1) & (~dropped & visible).any(-1)
        renormalized.append(bool(mixed.any()) and bool(((weights.sum(-1) - 1).abs() < 1e-4)[mixed].all()))
        stats.append(_Probe(p, frac, scaled[visible & ~dropped], dropped, visible, case))
    if all(frac == 0 for _, frac, *_ in stats):
        if _dropped_before_softmax(module, x, heads, case):
            raise Fail("dropout_on_scores", p=stats[-1].p)
        raise Fail("dropout_missing", p=stats[0].p, case=stats[0].case)
    for p, frac, _, dropped, visible, _ in stats:  # first: a reused mask also makes the rate unreliable
        shared = shared_dims(dropped, frac, visible)
        if shared:
            names = ("B", "nh", "T (queries)", "T (keys)")
            raise Fail("dropout_mask_shared", p=p, dims=", ".join(f"dim={d} {names[d]}" for d in shared))
    _judge_rates(stats, int(stats[0].visible.sum()))
    if all(renormalized):  # nn.Dropout's scale undone: not a hand-written dropout's wrong factor
        raise Fail("dropout_renormalized", p=stats[0].p)
    for p, _, ratio, *_ in stats:
        found = kept_scale_hint(ratio, p)
        if found:
            raise Fail(found[0], p=p, **found[1])
    return "train()"


def _dropped_before_softmax(module, x, heads: int, case: str) -> bool:
    """Does train mode change the output once the scores are not all 0? (``module``: the last probe's)"""
    eye = torch.eye(T).repeat(heads, 1)
    for name in ("W_query", "W_key"):
        linear(module, name, T, heads * T).weight.copy_(eye)
    module.eval()
    eval_out = as_tensor(call(module, x.clone(), case=case), case)
    module.train()
    outs = [as_tensor(call(module, x.clone(), case=case, seed=s), case) for s in (41, 42)]
    module.eval()
    return not all(same(out, eval_out) for out in outs)


def _judge_rates(stats, n: int) -> None:
    tol = rate_tolerance(n)
    wrong = [(p, frac) for p, frac, *_ in stats if abs(frac - p) > tol]
    if not wrong:
        return
    if all(abs(frac - 0.5) <= tol for _, frac, *_ in stats):
        raise Fail("dropout_default_rate", fracs=_fracs(stats))
    p, frac = wrong[0]
    if all(abs(f - (1 - q)) <= tol for q, f, *_ in stats):
        raise Fail("dropout_rate_inverted", p=p, frac=f"{frac:.0%}")
    if abs(stats[0].frac - stats[1].frac) <= 2 * tol:
        raise Fail("dropout_rate_fixed", fracs=_fracs(stats))
    raise Fail("dropout_rate_wrong", p=p, frac=f"{frac:.0%}", expected=f"{p:.0%}")


def reference_context(x: torch.Tensor, layers: dict) -> torch.Tensor:
    """One causal head with the learner's layers, no dropout."""
    return attention(*qkv(x, layers))
