"""What every checker shares: the result record, the Fail signal a checker body raises, messages, comparing."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import torch

from ._messages import FIXES, LANGUAGES, MESSAGES, WORDS

# status -> icon of the printed line
ICONS = {"pass": "✅", "todo": "🚧", "fail": "❌", "error": "❌", "timeout": "⏰", "reference": "⚠️"}
STATUSES = tuple(ICONS)

_state = {"lang": "en"}


def set_language(lang: str) -> None:
    """Choose the language of the ``check_*`` messages: ``"en"`` or ``"zh"``."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {lang!r}")
    _state["lang"] = lang


def get_language() -> str:
    return _state["lang"]


def known_language(lang: str) -> str:
    """``lang`` if the checkers have messages in it; ValueError otherwise."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    return lang


def message(hint: str, lang: str, extra: dict | None = None, **params) -> str:
    """The concept line for ``hint`` in ``lang`` (``extra``: an exercise's own messages), formatted."""
    table = (extra or {}).get(hint) or MESSAGES[hint]
    return table[lang].format(**params)


def fix_text(hint: str, lang: str, extra_fixes: dict | None = None) -> str:
    table = (extra_fixes or {}).get(hint) or FIXES.get(hint)
    return table[lang] if table else ""


def word(key: str, lang: str, **params) -> str:
    return WORDS[key][lang].format(**params)


@dataclass(frozen=True)
class CheckResult:
    """What a checker found.

    ``status``: one of ``"pass"``, ``"todo"`` (still ``raise NotImplementedError()``), ``"fail"`` (runs, wrong
    result), ``"error"`` (the code raised, called ``sys.exit``, or the check could not run), ``"timeout"``,
    ``"reference"`` (the object is, wraps or subclasses llm_lab's own reference). ``hint``: the mistake id (the
    message key: ``"passed"``, ``"diagonal_masked"``, ``"exception"``, ...). ``message``: one line naming the
    concept, in the requested language, without icon. ``fix``: the exact fix for that mistake (``""`` if none).
    ``output``: what the learner's code printed while checked (trimmed). ``points``: the exercise's points;
    ``score``: ``points`` if passed, else 0.
    """

    exercise: str
    status: str
    hint: str
    message: str
    fix: str = ""
    output: str = ""
    points: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def score(self) -> int:
        return self.points if self.passed else 0

    @property
    def line(self) -> str:
        """Icon, space, message: the line ``check_*`` prints (it may add the fix)."""
        return f"{ICONS[self.status]} {self.message}"


@dataclass(frozen=True)
class Exercise:
    """One exercise, the single source of everything about it.

    ``name``: the id (``check_<name>`` is derived from it). ``notebook``: ``"01"`` ... ``"07"``. ``body(obj) ->
    list of case labels``: runs the learner's ``obj`` on fixed-seed inputs and raises ``Fail(hint)`` at the first
    problem. ``points``: what a pass is worth when graded. ``takes``: ``"function"`` or ``"class"``.
    ``signature``: what the learner passes (the ``check_<name>`` docstring). ``hints``: the mistake ids the
    body can name (besides the generic ones). ``references``: llm_lab objects (dotted names under ``llm_lab``)
    that ARE the answer: handing one in, subclassing it or calling it gives status ``"reference"``.
    ``forbidden``: ``(module, attribute, hint)``: a callable the learner's code must not call, failing with
    ``hint``. ``messages``/``fixes``: this exercise's own hint texts, ``{hint: {"en": ..., "zh": ...}}``.
    """

    name: str
    notebook: str
    body: Callable
    points: int
    takes: str
    signature: str
    hints: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    forbidden: tuple[tuple[str, str, str], ...] = ()
    messages: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    fixes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


class Fail(Exception):
    """Raised inside a checker body: the learner's code is wrong; ``hint`` names the mistake."""

    status = "fail"

    def __init__(self, hint: str, **params):
        super().__init__(hint)
        self.hint = hint
        self.params = params


class LearnerError(Fail):
    """The learner's code raised ``exc`` (``SystemExit`` and a ``KeyboardInterrupt`` it raised itself included)."""

    status = "error"

    def __init__(self, exc: BaseException, case: str):
        if isinstance(exc, SystemExit):
            super().__init__("system_exit", case=case)
        else:
            super().__init__("exception", exc_type=type(exc).__name__, exc_msg=one_line(str(exc)), case=case)
        self.exc = exc
        self.case = case


class TimedOut(Fail):
    status = "timeout"

    def __init__(self, seconds: float, case: str):
        super().__init__("timeout", seconds=f"{seconds:g}", case=case)


class Remote:
    """An object whose calls run in another process (``grading.proxies.Proxy``, the learner's object in a
    sandboxed kernel): ``_harness.call`` sends a call on one there through ``call_in_kernel`` instead of running it.
    Defined here, not in ``grading``, so that the harness needs nothing of the grading package (no import circle)."""

    def call_in_kernel(self, args: tuple, kwargs: dict, *, case: str, seed, timeout, observe: bool) -> dict:
        raise NotImplementedError


class NotImplementedYet(Exception):
    """The learner's code still raises ``NotImplementedError``."""


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def title_of(obj, default: str) -> str:
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else default


# ---- comparing ---------------------------------------------------------------------------------------------


def shape_str(shape) -> str:
    return str(tuple(int(s) for s in shape))


def same(a, b, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Equal shapes and values (NaN equals NaN); bool and integer tensors compare exactly."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape:
        return False
    if a.is_complex() or b.is_complex() or a.layout != torch.strided or b.layout != torch.strided:
        return False  # never cast: a complex tensor loses its imaginary part (and warns) when made real
    if a.dtype == torch.bool or b.dtype == torch.bool or not (a.is_floating_point() or b.is_floating_point()):
        return bool(torch.equal(a.cpu().long(), b.cpu().long()))
    return bool(
        torch.allclose(a.detach().cpu().double(), b.detach().cpu().double(), atol=atol, rtol=rtol, equal_nan=True)
    )


def as_tensor(out, case: str) -> torch.Tensor:
    if out is None:
        raise Fail("returned_none", case=case)
    if not isinstance(out, torch.Tensor):
        raise Fail("not_tensor", got=type(out).__name__, case=case)
    if out.is_meta:
        raise Fail("meta_tensor", case=case)
    if out.is_complex() or out.is_quantized or out.layout != torch.strided:
        # before any comparison: casting a complex tensor to a real one drops the imaginary part (with a warning)
        raise Fail("not_real", got=f"{out.dtype}, {out.layout}".replace(", torch.strided", ""), case=case)
    return out.detach().cpu()


def diagnose(
    out: torch.Tensor, mistakes: Iterable[tuple[str, Callable[[], torch.Tensor]]], want: torch.Tensor, **params
) -> None:
    """Raise Fail(hint) for the first known mistake whose output ``out`` matches: ``mistakes`` are ``(hint,
    make)`` pairs, ``make()`` computing what that mistake gives on this input (those equal to ``want`` skipped)."""
    for hint, make in mistakes:
        try:
            candidate = make()
        except Exception:  # a mistake that cannot be computed on this input cannot match
            continue
        if same(candidate, want):
            continue
        if same(out, candidate):
            raise Fail(hint, **params)


class Diagnosis:
    """Names a mistake only when its computation gives the learner's output on every case, the right ones
    included: one case can make two computations agree (``d_k = 16`` and ``T = 4`` make ``/ 2`` a scale by
    ``sqrt(T)``). ``add`` each case once the learner's call returned; ``verdict()`` after the last one fails for
    the first wrong case, by the mistakes that fit every case (``diagnose``'s order) or else by shape, dtype, NaN
    or the first wrong value; ``verdict(ended=True)`` when a later case cannot be compared (the learner's code
    raised, as a wrong view of the heads may): the earlier wrong case is said first, judged by the cases that
    returned. On a case that does not list a mistake, the mistake fits when the output is right there."""

    def __init__(self):
        self._cases = []  # (out, right, mistakes) of every case
        self._first = None  # (out, want, case, mistakes, atol, params) of the first wrong case

    def add(self, out, want: torch.Tensor, case: str, mistakes=(), atol: float = 1e-5, **params) -> None:
        try:
            out = as_tensor(out, case)
        except Fail:
            self.verdict(ended=True)
            raise
        right = same(out, want, atol=atol)
        mistakes = list(mistakes)
        self._cases.append((out, right, mistakes))
        if not right and self._first is None:
            self._first = (out, want, case, mistakes, atol, params)

    def verdict(self, ended: bool = False) -> None:
        """Fail for the first wrong case, if any (``ended``: called because a later case could not be compared)."""
        if self._first is None:
            return
        out, want, case, mistakes, atol, params = self._first
        fitting = [m for m in mistakes if all(self._fits(m[0], c) for c in self._cases)]
        compare(out, want, case, fitting, atol=atol, **params)
        raise AssertionError("compare() accepted a wrong case")  # pragma: no cover

    @staticmethod
    def _fits(hint: str, case) -> bool:
        out, right, mistakes = case
        makes = [make for h, make in mistakes if h == hint]
        if not makes:
            return right
        for make in makes:
            try:
                if same(out, make()):
                    return True
            except Exception:  # a mistake that cannot be computed on this input does not fit it
                continue
        return False


def compare(out, want: torch.Tensor, case: str, mistakes=(), atol: float = 1e-5, **params) -> None:
    """Fail unless ``out`` equals ``want``: first a diagnosed mistake (``diagnose``), else shape, dtype, NaN or
    values."""
    out = as_tensor(out, case)
    if same(out, want, atol=atol):
        return
    diagnose(out, mistakes, want, case=case, **params)
    if out.shape != want.shape:
        raise Fail("wrong_shape", expected=shape_str(want.shape), got=shape_str(out.shape), case=case)
    if want.dtype == torch.bool and out.dtype != torch.bool:
        raise Fail("wrong_dtype", expected=str(want.dtype), got=str(out.dtype), case=case)
    a, b = out.double(), want.double()
    nan = a.isnan() & ~b.isnan()
    if nan.any():
        raise Fail("nan_output", n_nan=int(nan.sum()), n_all=a.numel(), case=case)
    bad = ~torch.isclose(a, b, atol=atol, rtol=1e-4, equal_nan=True)
    index = tuple(int(i) for i in bad.nonzero()[0]) if bad.any() else ()
    raise Fail(
        "wrong_values",
        index=index if len(index) != 1 else index[0],
        want=_num(b[index]),
        got=_num(a[index]),
        n_bad=int(bad.sum()),
        n_all=bad.numel(),
        case=case,
    )


def _num(t: torch.Tensor) -> str:
    v = float(t)
    return str(v) if math.isnan(v) or math.isinf(v) else f"{v:.4g}"
