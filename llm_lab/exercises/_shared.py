"""Helpers several notebooks' checkers use: seeded generators, masks, and the known wrong ways to compute
causal attention weights (a wrong output is named by matching what a known mistake computes on the same input)."""

from __future__ import annotations

import contextlib
import contextvars
import copy
import hashlib
import math
import numbers

import torch

from ..masks import causal_mask, causal_softmax
from . import _harness
from ._core import Fail, same

NEG_INF = float("-inf")


def unless_reference(fail) -> None:
    """Raise ``fail`` (a statement requirement the result alone cannot show: an op used, a tensor built) unless
    the learner's code ran llm_lab's reference in this check: then the body goes on (the reference computes
    the right values) and the check reports ``"reference"``, which says more. Reads the run's ``hit``, which
    the harness sets on either path (local or remote)."""
    run = _harness.current()
    if not (run and run.hit and run.hit[1] == "reference"):
        raise fail


_SECRET: contextvars.ContextVar[int | None] = contextvars.ContextVar("llm_lab_checker_secret", default=None)


@contextlib.contextmanager
def secret_inputs(secret: int | None):
    """Grading (``grade(..., secret=...)``): inside the block every ``gen`` and ``sizes`` draws from ``secret``
    mixed with its own public seed, so the inputs are ones the learner has not seen; ``None``: the public seeds
    (``check_*`` in a notebook, whose inputs are fixed and explainable). Per thread: graders run several checks
    at once."""
    token = _SECRET.set(None if secret is None else int(secret))
    try:
        yield
    finally:
        _SECRET.reset(token)


def _seed(seed: int) -> int:
    secret = _SECRET.get()
    if secret is None:
        return seed
    return int.from_bytes(hashlib.sha256(f"{secret}:{seed}".encode()).digest()[:8], "little") >> 1


def gen(seed: int) -> torch.Generator:
    """The generator a checker draws its inputs from: ``seed``, or under ``secret_inputs`` a secret one."""
    return torch.Generator().manual_seed(_seed(seed))


def sizes(public: tuple[int, ...], high: int, seed: int) -> tuple[int, ...]:
    """A checker's free sizes: ``public``, or under ``secret_inputs`` the smallest public one (the edge case it is
    there for) and the others drawn from the sizes 1..``high`` that the public checker does not use."""
    if _SECRET.get() is None:
        return public
    unseen = [n for n in range(1, high + 1) if n not in public]
    if len(unseen) < len(public) - 1:
        raise ValueError(f"sizes: high={high} leaves {len(unseen)} unseen sizes, fewer than {len(public) - 1}")
    order = torch.randperm(len(unseen), generator=gen(seed)).tolist()
    return (min(public), *(unseen[i] for i in order[: len(public) - 1]))


def triu(t: int, diagonal: int) -> torch.Tensor:
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=diagonal)


def tril(t: int, diagonal: int) -> torch.Tensor:
    return torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=diagonal)


def softmax_masked(scores, hidden, dim=-1, fill=NEG_INF):
    return torch.softmax(scores.masked_fill(hidden, fill), dim=dim)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The reference causal attention ``(..., T, hs)``, computed in float64 then cast back."""
    w = causal_softmax(q.double() @ k.double().transpose(-2, -1) / k.shape[-1] ** 0.5)
    return (w @ v.double()).to(q.dtype)


def weights_mistakes(q: torch.Tensor, k: torch.Tensor, head_scale: float | None = None) -> list:
    """Wrong ways to compute causal attention weights from queries and keys ``(..., T, d_k)``."""
    d, t = k.shape[-1], k.shape[-2]
    s = q @ k.transpose(-2, -1)
    hide = causal_mask(t)
    ok = s / d**0.5
    mistakes = [
        ("softmax_dim", lambda: softmax_masked(ok, hide, dim=-2)),
        ("scale_missing", lambda: softmax_masked(s, hide)),
        ("scale_twice", lambda: softmax_masked(s / d, hide)),
        ("scale_inverted", lambda: softmax_masked(s * d**0.5, hide)),
        ("scale_uses_T", lambda: softmax_masked(s / t**0.5, hide)),
        ("diagonal_masked", lambda: softmax_masked(ok, triu(t, 0))),
        ("future_open", lambda: torch.softmax(ok, dim=-1)),
        ("mask_inverted", lambda: softmax_masked(ok, tril(t, 0))),
        ("mask_transposed", lambda: softmax_masked(ok, tril(t, -1))),
        ("masked_with_zero", lambda: softmax_masked(ok, hide, fill=0.0)),
        ("not_renormalized", lambda: torch.softmax(ok, dim=-1).masked_fill(hide, 0.0)),
    ]
    if head_scale is not None:
        mistakes.insert(0, ("scale_uses_d_out", lambda: softmax_masked(s / head_scale**0.5, hide)))
    return mistakes


# The checkers' own helpers that compute (part of) an answer: calling one is handing in llm_lab's reference.
HELPERS = ("exercises._shared.attention", "exercises._shared.softmax_masked", "exercises._modules.reference_context")

# the mistakes a causal attention-weights computation can make, in the order the checkers try them
CAUSAL_WEIGHT_HINTS = (
    "softmax_dim",
    "scale_missing",
    "scale_twice",
    "scale_inverted",
    "scale_uses_T",
    "diagonal_masked",
    "future_open",
    "mask_inverted",
    "mask_transposed",
    "masked_with_zero",
    "not_renormalized",
)
WEIGHT_HINTS = ("scale_uses_d_out", *CAUSAL_WEIGHT_HINTS)  # one head of several: + the scale by the total width


def rate_tolerance(n: int, false_alarm: float = 1e-6) -> float:
    """How far a dropped fraction over ``n`` independent draws may stray from p: Hoeffding's bound
    P(|frac - p| >= t) <= 2 exp(-2 n t^2) set equal to ``false_alarm`` (for any p, any correct dropout)."""
    return math.sqrt(math.log(2 / false_alarm) / (2 * n))


def shared_dims(dropped: torch.Tensor, p: float, valid: torch.Tensor | None = None, dims=None) -> list[int]:
    """The dimensions along which a dropout mask is reused instead of drawn independently.

    Along each dimension, entries 0/1, 2/3, ... are paired (disjoint pairs, so the pairs are independent):
    independent draws agree with probability q = p^2 + (1-p)^2, a reused mask always. A dimension counts as
    shared when the agreement exceeds (1 + q) / 2. With n pairs a correct dropout crosses that line with
    probability <= exp(-2 n ((1 - q) / 2)^2) (Hoeffding): for the smallest case checked (p=0.2, q=0.68,
    n >= 500) that is < 1e-11. Dimensions with fewer than 500 valid pairs are not judged.
    """
    valid = torch.ones_like(dropped) if valid is None else valid.expand_as(dropped)
    q = p * p + (1 - p) * (1 - p)
    found = []
    for d in range(dropped.dim()) if dims is None else dims:
        n = dropped.shape[d] // 2 * 2
        if n < 2:
            continue
        even, odd = (torch.arange(start, n, 2) for start in (0, 1))
        a, b = dropped.index_select(d, even), dropped.index_select(d, odd)
        ok = valid.index_select(d, even) & valid.index_select(d, odd)
        if ok.sum() < 500:
            continue
        agreement = (a == b)[ok].double().mean().item()
        if agreement > (1 + q) / 2:
            found.append(d)
    return found


# ---- dropout: shared by the dropout exercise (03) and the attention modules' checks (04, 05) ----------


def kept_scale_hint(ratio: torch.Tensor, p: float) -> tuple[str, dict] | None:
    """None if every kept value is x/(1-p); else the hint naming the scale used."""

    def scaled_by(factor):
        return bool(torch.allclose(ratio, torch.full_like(ratio, factor), rtol=1e-4))

    if ratio.numel() == 0 or scaled_by(1 / (1 - p)):
        return None
    for hint, factor in (("dropout_scaled_by_p", 1 / p), ("dropout_not_scaled", 1.0)):
        if scaled_by(factor):
            return hint, {}
    return "dropout_wrong_scale", {"ratio": f"{ratio.mean().item():.3f}"}


def as_integer(x) -> int | None:
    """``x`` as an int if it is one whole number: a Python or numpy int, a one-element integer tensor or array."""
    if isinstance(x, torch.Tensor):
        return (
            int(x)
            if x.numel() == 1 and not (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool)
            else None
        )
    if isinstance(x, (bool, float, complex)) or type(x).__name__ in ("bool_", "bool"):
        return None
    if isinstance(x, numbers.Integral):  # int, numpy.int64, numpy.intp, ...
        return int(x)
    if type(x).__module__ == "numpy" and getattr(x, "size", 0) == 1 and getattr(x.dtype, "kind", "") in "iu":
        return int(x.reshape(-1)[0])
    return None


def rate_hint(frac: float, p: float, n: int) -> str | None:
    tol = rate_tolerance(n)
    if abs(frac - p) <= tol:
        return None
    return "dropout_rate_inverted" if abs(frac - (1 - p)) <= tol else "dropout_rate_wrong"


# ---- one rule for every exercise: the learner's code gets copies, and a copy changed in place is named --------


def call_unchanged(fn, *args, names: tuple, case: str, **kwargs):
    """``_harness.call(fn, *copies, ...)`` on copies of ``args`` (tensors cloned, lists and dicts deep-copied);
    Fail ``input_modified`` naming the first argument (``names``, one per argument) whose copy differs afterwards:
    ``queries /= ...``, a slice scaled in place, a list appended to. Other arguments are passed as they are."""
    copies = tuple(_copy(a) for a in args)
    out = _harness.call(fn, *copies, case=case, **kwargs)
    for name, before, after in zip(names, args, copies, strict=True):
        if not _unchanged(before, after):
            raise Fail("input_modified", name=name, case=case)
    return out


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value


def _unchanged(before, after) -> bool:
    if isinstance(before, torch.Tensor):
        return same(after, before, atol=0.0, rtol=0.0)
    return before == after if isinstance(before, (list, dict)) else True
