"""The harness every checker shares: language, one-line results, calling learner code safely, comparing."""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from ._messages import LANGUAGES, MESSAGES

_state = {"lang": "en"}

ICONS = {"passed": "✅", "not_implemented": "🚧", "failed": "❌"}


def set_language(lang: str) -> None:
    """Choose the language of the checkers' messages: ``"en"`` or ``"zh"``."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {lang!r}")
    _state["lang"] = lang


def get_language() -> str:
    return _state["lang"]


def message(hint: str, **params) -> str:
    """The message for ``hint`` in the current language, formatted with ``params``."""
    return MESSAGES[hint][_state["lang"]].format(**params)


@dataclass(frozen=True)
class CheckResult:
    """What a checker found. ``status``: ``"passed"``, ``"not_implemented"`` or ``"failed"``; ``hint``: the key
    of the message (``"passed"``, ``"not_implemented"``, ``"diagonal_masked"``, ...); ``message``: one line in
    the current language, without the status icon."""

    exercise: str
    status: str
    hint: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def line(self) -> str:
        """The line a ``check_*`` function prints: icon, space, message."""
        return f"{ICONS[self.status]} {self.message}"


class Fail(Exception):
    """Raised inside a checker body: the learner's code is wrong; ``hint`` names the mistake."""

    def __init__(self, hint: str, **params):
        super().__init__(hint)
        self.hint = hint
        self.params = params


class LearnerError(Fail):
    """The learner's code raised ``exc``."""

    def __init__(self, exc: BaseException, case: str):
        super().__init__("exception", exc_type=type(exc).__name__, exc_msg=one_line(str(exc)), case=case)
        self.exc = exc
        self.case = case


class _NotImplemented(Exception):
    pass


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call(fn: Callable, *args, case: str, seed: int | None = None, **kwargs):
    """Call learner code: silence its prints and warnings, seed torch if asked, turn its errors into Fail."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if seed is not None:
                torch.manual_seed(seed)
            return fn(*args, **kwargs)
    except NotImplementedError as exc:
        raise _NotImplemented() from exc
    except Exception as exc:
        raise LearnerError(exc, case) from exc


def title_of(obj, default: str) -> str:
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else default


def run(exercise: str, obj, body: Callable) -> CheckResult:
    """Run a checker ``body(obj) -> list of case descriptions``; never raises."""
    title = title_of(obj, exercise)
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():  # the notebook's random stream stays untouched
            cases = body(obj)
        return CheckResult(exercise, "passed", "passed", message("passed", title=title, n=len(cases),
                                                                 cases=", ".join(cases)))
    except _NotImplemented:
        return CheckResult(exercise, "not_implemented", "not_implemented", message("not_implemented", title=title))
    except Fail as f:
        try:
            text = message(f.hint, title=title, **f.params)
        except Exception as exc:  # a template/parameter mismatch must not escape either
            return _checker_error(exercise, title, exc)
        return CheckResult(exercise, "failed", f.hint, text)
    except Exception as exc:
        return _checker_error(exercise, title, exc)


def _checker_error(exercise: str, title: str, exc: Exception) -> CheckResult:
    text = message("checker_error", title=title, exc_type=type(exc).__name__, exc_msg=one_line(str(exc)))
    return CheckResult(exercise, "failed", "checker_error", text)


# ---- comparing ---------------------------------------------------------------------------------------------


def shape_str(shape) -> str:
    return str(tuple(int(s) for s in shape))


def same(a, b, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Equal shapes and values (NaN equals NaN); bool and integer tensors compare exactly."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape:
        return False
    if a.dtype == torch.bool or b.dtype == torch.bool or not (a.is_floating_point() or b.is_floating_point()):
        return bool(torch.equal(a.cpu().long(), b.cpu().long()))
    return bool(torch.allclose(a.detach().cpu().double(), b.detach().cpu().double(), atol=atol, rtol=rtol,
                               equal_nan=True))


def as_tensor(out, case: str) -> torch.Tensor:
    if out is None:
        raise Fail("returned_none", case=case)
    if not isinstance(out, torch.Tensor):
        raise Fail("not_tensor", got=type(out).__name__, case=case)
    return out.detach().cpu()


def diagnose(out: torch.Tensor, variants: Iterable[tuple[str, Callable[[], torch.Tensor]]], want: torch.Tensor,
             **params) -> None:
    """Raise Fail(hint) for the first wrong variant that ``out`` matches (skipping variants equal to ``want``)."""
    for hint, make in variants:
        try:
            candidate = make()
        except Exception:  # a variant that cannot be computed on this input cannot match
            continue
        if same(candidate, want):
            continue
        if same(out, candidate):
            raise Fail(hint, **params)


def compare(out, want: torch.Tensor, case: str, variants=(), **params) -> None:
    """Fail unless ``out`` equals ``want``: first a diagnosed mistake, else shape, dtype or values."""
    out = as_tensor(out, case)
    if same(out, want):
        return
    diagnose(out, variants, want, case=case, **params)
    if out.shape != want.shape:
        raise Fail("wrong_shape", expected=shape_str(want.shape), got=shape_str(out.shape), case=case)
    if want.dtype == torch.bool and out.dtype != torch.bool:
        raise Fail("wrong_dtype", expected=str(want.dtype), got=str(out.dtype), case=case)
    a, b = out.double(), want.double()
    bad = ~torch.isclose(a, b, atol=1e-5, rtol=1e-4, equal_nan=True)
    index = tuple(int(i) for i in bad.nonzero()[0]) if bad.any() else ()
    raise Fail("wrong_values", index=index if len(index) != 1 else index[0], want=_num(b[index]),
               got=_num(a[index]), n_bad=int(bad.sum()), n_all=bad.numel(), case=case)


def _num(t: torch.Tensor) -> str:
    v = float(t)
    return str(v) if math.isnan(v) or math.isinf(v) else f"{v:.4g}"
