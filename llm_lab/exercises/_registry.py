"""The exercise registry and the one function that checks an object against a record.

Every module ``_exNN_<concept>.py`` in this package holds the exercises of notebook NN as ``RECORDS``, a list
of :class:`Exercise`; the registry is their concatenation in file order (adding an exercise: docs/architecture.md,
"Add an exercise"). ``run_check`` never raises except for a real Ctrl-C (see ``_harness``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

from torch import nn

from . import _harness, _shared
from ._core import CheckResult, Exercise, Fail, NotImplementedYet, fix_text, message, one_line, title_of
from ._watch import codes_run_first

_PACKAGE = __name__.rsplit(".", 1)[0]  # "llm_lab.exercises", or a fresh copy's private name
_ROOT_DIR = str(Path(__file__).resolve().parent.parent)  # llm_lab's folder: where its own code lives
_LLM_LAB = _PACKAGE.rsplit(".", 1)[0]


def checker_code(module) -> tuple[str, ...]:
    """The checker's own code for the exercises of ``module`` (an ``_exNN_*`` module): every function it defines
    (the reference, its mask and span helpers, the mistakes' computations) and the shared helpers that compute
    part of an answer (``_shared.HELPERS``), as dotted names under ``llm_lab``. Each is a reference for every
    exercise of that module: what a checker computes, it computes for the answer."""
    short = module.__name__.rsplit(".", 1)[1]
    own = sorted(
        f"exercises.{short}.{name}"
        for name, obj in vars(module).items()
        if inspect.isfunction(obj) and obj.__module__ == module.__name__
    )
    return (*own, *_shared.HELPERS)


def _load_records() -> dict[str, Exercise]:
    """Every ``_exNN_*`` module's ``RECORDS``; a module's ``MODULE_MESSAGES`` / ``MODULE_FIXES`` (hint texts no
    other module uses) go to each of its records, under the record's own. A record's ``references`` are its own
    (llm_lab's lesson code that computes its answer, listed by hand) and the checker's code (``checker_code``)."""
    records: dict[str, Exercise] = {}
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("_ex"))
    for module_name in names:
        module = importlib.import_module(f"{_PACKAGE}.{module_name}")
        own_messages, own_fixes = getattr(module, "MODULE_MESSAGES", {}), getattr(module, "MODULE_FIXES", {})
        derived = checker_code(module)
        for record in module.RECORDS:
            if record.name in records:
                raise ValueError(f"exercise {record.name!r} is defined twice")
            records[record.name] = dataclasses.replace(
                record,
                messages={**own_messages, **record.messages},
                fixes={**own_fixes, **record.fixes},
                references=tuple(dict.fromkeys((*record.references, *derived))),
            )
    return records


REGISTRY: dict[str, Exercise] = _load_records()


def record(name: str) -> Exercise:
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown exercise {name!r}; known: {', '.join(REGISTRY)}") from None


# ---- what the learner's code must not run ---------------------------------------------------------------------


def _resolve_own(dotted: str):
    module_name, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(f"{_LLM_LAB}.{module_name}"), attr)


# Resolved now, while this copy's modules are importable (a fresh copy's leave sys.modules after loading).
_OWN_REFERENCES = {d: _resolve_own(d) for ex in REGISTRY.values() for d in ex.references}


def watch_for(name: str) -> _harness.Watch:
    """llm_lab's references for exercise ``name`` (this copy's and those of the ``llm_lab`` the notebook
    imported) and the callables it rules out, as the harness watches them."""
    ex = REGISTRY[name]
    watch = _harness.Watch()
    for dotted in ex.references:
        module_name, _, attr = dotted.rpartition(".")
        imported = getattr(sys.modules.get(f"llm_lab.{module_name}"), attr, None)
        for obj in {id(o): o for o in (_OWN_REFERENCES[dotted], imported) if o is not None}.values():
            for code in codes_run_first(obj):
                if code.co_filename.startswith(_ROOT_DIR):  # not a notebook's function patched into llm_lab
                    watch.add(code, f"llm_lab.{attr}", "reference")
    for module_name, attr, hint in (*ex.forbidden, *STARTERS):
        obj = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in attr.split("."):  # "Transformer.generate_square_subsequent_mask": a class's function
            obj = getattr(obj, part, None)
        if obj is not None:
            watch.add(obj, f"{module_name}.{attr}", hint)
    for module_name, path in PY_STARTERS:  # their code, for the trace hook that sees Python calls only
        obj = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in path.split("."):
            obj = getattr(obj, part)
        watch.add(obj.__code__, f"{module_name}.{path}", "thread_started")
    return watch


STARTERS, PY_STARTERS = _harness.STARTERS, _harness.PY_STARTERS  # what every check rules out


class _IsReference(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _precheck(ex: Exercise, obj, watch: _harness.Watch) -> None:
    """Before running anything: an instance instead of a class, a non-callable, or llm_lab's own code."""
    if ex.takes == "class" and isinstance(obj, nn.Module):
        raise Fail("instance_not_class", got=type(obj).__name__)
    if not callable(obj):
        raise Fail("not_callable", got=type(obj).__name__)
    target = obj
    while isinstance(target, functools.partial):
        target = target.func
    target = getattr(target, "__func__", target)  # a bound method
    for code in codes_run_first(target):
        hit = watch.of_code(code)
        if hit and hit[1] == "reference":
            raise _IsReference(hit[0])


def run_check(name: str, obj, *, lang: str, timeout: float | None, secret: int | None = None) -> CheckResult:
    """Check ``obj`` for exercise ``name``; deterministic, prints nothing, uses no hint state. ``secret``: the
    inputs drawn from it instead of the public seeds (``_shared.secret_inputs``)."""
    ex = record(name)
    title = title_of(obj, name)

    def result(status: str, hint: str, output: str = "", **params) -> CheckResult:
        try:
            text = message(hint, lang, ex.messages, title=title, **params)
        except Exception as exc:  # a template/parameter mismatch must not escape either
            return result("error", "checker_error", output, exc_type=type(exc).__name__, exc_msg=one_line(str(exc)))
        return CheckResult(name, status, hint, text, fix_text(hint, lang, ex.fixes), output, ex.points)

    watch = watch_for(name)
    run = None
    try:
        with _harness.checking(timeout, watch) as run, _shared.secret_inputs(secret):
            _precheck(ex, obj, watch)
            cases = ex.body(obj)
        if run.hit is not None:
            ref, hint = run.hit
            if hint == "reference":
                raise _IsReference(ref)
            raise Fail(hint, ref=ref)
        return result("pass", "passed", _harness.printed(run), n=len(cases), cases=", ".join(cases))
    except _IsReference as exc:
        return result("reference", "reference", _printed(run), ref=exc.name)
    except NotImplementedYet:
        return result("todo", "not_implemented", _printed(run))
    except Fail as f:
        return result(f.status, f.hint, _printed(run), **f.params)
    except _harness.Deadline:  # the alarm struck between the learner's return and its own cleanup
        return result("timeout", "timeout", _printed(run), seconds=f"{timeout:g}", case="-")
    except KeyboardInterrupt:
        if run is None or run.interrupted:
            raise
        return result("error", "exception", _printed(run), exc_type="KeyboardInterrupt", exc_msg="", case="-")
    except BaseException as exc:  # a bug in a checker or an unusual object: never an uncaught error
        return result("error", "checker_error", _printed(run), exc_type=type(exc).__name__, exc_msg=one_line(str(exc)))


def _printed(run) -> str:
    return _harness.printed(run) if run is not None else ""
