"""The kernel's side of grading: the answering code that runs in the learner's (sandboxed) kernel.

The grader writes two kinds of cells into the notebook it runs (``tools/teaching/grader/kernel.py``, through
``llm_lab.exercises.grading.answering_cell``): at each checker cell's place ``capture(key, lambda: key)`` remembers
the object the exercise checks, as it is at that point of the notebook; then, once per request of the grader's
checker, ``serve(request)`` answers: ``describe`` (what the captured object is: a function, a class, a module
with its layers) or ``call`` (run the learner's object on the inputs the grader sent, inside the harness's check
context, and send back what came out). Replies are data only (``wire``); nothing is judged here.

What this side says about *how* the learner's code computed (``hit``: llm_lab's reference or a ruled-out
function ran; ``observed``: the ops and the largest tensor) is the kernel's word: an honest submission that calls
the reference is caught, a lying kernel is not (the grader's source check backs it up). What to watch comes with
each request (``references``, dotted names under llm_lab, and ``forbidden``), so this side needs none of the
checkers' records: in the sandbox it runs on the sealed copy of llm_lab (``tools/teaching/grader/sealing.py``),
where the references are absent and only the ruled-out callables and the starters of threads and processes
(``_harness.STARTERS``) are left to watch.
"""

from __future__ import annotations

import base64
import importlib
import json
import sys
from pathlib import Path

import torch
from torch import nn

from .. import _harness
from .._core import LearnerError, NotImplementedYet, TimedOut
from .._watch import codes_run_first
from . import kernel_guard, wire
from .wire import clean_name, decode, encode, type_name

_LLM_LAB_DIR = str(Path(__file__).resolve().parents[2])  # this llm_lab's files: its own code, not a notebook's

_captured: dict[str, object] = {}
_missing: dict[str, str] = {}
_handles: dict[int, object] = {}


def capture(key: str, get) -> None:
    """Called at a checker cell's place: remember the object the exercise checks (``get()``), or why not."""
    try:
        _captured[key] = get()
        _missing.pop(key, None)
    except NameError as exc:
        _missing[key] = str(exc)


def describe(obj) -> dict:
    """What the grader may know of ``obj``: a handle to it (kept here), its name and type, and its kind:
    ``module`` (with its top-level ``nn.Linear`` layers, buffers and parameter names), ``class``, ``function`` or
    ``value``."""
    handle = id(obj)
    _handles[handle] = obj
    desc = {
        "handle": handle,
        "name": clean_name(getattr(obj, "__name__", "") or ""),
        "type": type_name(obj),
        "callable": callable(obj),
    }
    if isinstance(obj, nn.Module):
        desc.update(kind="module", module=_module_state(obj))
    elif isinstance(obj, type):
        desc.update(kind="class", module_class=issubclass(obj, nn.Module))
    else:
        desc["kind"] = "function" if callable(obj) else "value"
    return desc


def _module_state(module: nn.Module) -> dict:
    linears = {}
    for name in dir(module):
        if name.startswith("__"):
            continue
        try:
            layer = getattr(module, name)
        except Exception:  # a property that raises: not a layer
            continue
        if isinstance(layer, nn.Linear) and len(linears) < 64:
            linears[name] = {
                "in": int(layer.in_features),
                "out": int(layer.out_features),
                "weight": layer.weight,
                "bias": layer.bias,
            }
    return {
        "linears": linears,
        "buffers": dict(module.named_buffers()),
        "parameters": [n for n, _ in module.named_parameters()][:256],
        "state_keys": list(module.state_dict().keys())[:256],
        "training": bool(module.training),
    }


def _sync(module: nn.Module, linears: dict, training) -> None:
    """Put the grader's copies of the layers (and its train/eval flag) into the learner's module."""
    with torch.no_grad():
        for name, state in linears.items():
            layer = getattr(module, name, None)
            if isinstance(layer, nn.Linear):
                layer.weight.copy_(state["weight"])
                if layer.bias is not None and state["bias"] is not None:
                    layer.bias.copy_(state["bias"])
    if training is not None:
        module.train(bool(training))


def _find(module_name: str, path: str):
    """``module_name`` (imported if need be) and the attribute ``path`` of it, or None where there is none (a
    reference the sealed llm_lab leaves out)."""
    try:
        obj = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in path.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    return obj


def watch_of(request: dict) -> _harness.Watch:
    """What a call must not run, named by the grader's request: llm_lab's ``references`` (dotted names under
    llm_lab; watched where this llm_lab has them, under the names the grader's watch gives them), the
    ``forbidden`` callables (``[module, attribute, hint]``), and in every check the starters of threads and
    processes."""
    watch = _harness.Watch()
    for dotted in request.get("references") or ():
        module_name, _, attr = str(dotted).rpartition(".")
        obj = _find(f"llm_lab.{module_name}" if module_name else "llm_lab", attr)
        for code in codes_run_first(obj) if obj is not None else ():
            if code.co_filename.startswith(_LLM_LAB_DIR):  # not a notebook's function patched into llm_lab
                watch.add(code, f"llm_lab.{attr}", "reference")
    for item in (*(request.get("forbidden") or ()), *_harness.STARTERS):
        module_name, attr, hint = (str(part) for part in item)
        obj = _find(module_name, attr)
        if obj is not None:
            watch.add(obj, f"{module_name}.{attr}", hint)
    for module_name, path in _harness.PY_STARTERS:  # their code, for the trace hook that sees Python calls only
        obj = _find(module_name, path)
        if obj is not None:
            watch.add(obj.__code__, f"{module_name}.{path}", "thread_started")
    return watch


PLAIN = (bool, int, float, str, type(None))


def plain(value, depth: int = 0):
    """``value`` in exact built-in types, made inside the check (under its time limit and watch): a learner's
    subclass of a tensor, list, tuple, dict, int, float or str runs its own methods here, where they are watched,
    never later while the reply is encoded (``wire.encode`` takes exact types only). Deeper than the wire
    allows, or another type: left as it is (the wire makes it opaque)."""
    if type(value) in PLAIN or type(value) is torch.Tensor or depth > wire.MAX_DEPTH:
        return value
    if isinstance(value, torch.Tensor):
        return torch.Tensor.as_subclass(value, torch.Tensor)
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, (list, tuple)):
        items = [plain(v, depth + 1) for v in list(value)[: wire.MAX_ITEMS]]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in list(dict(value).items())[: wire.MAX_ITEMS]}
    return value


def answer_call(request: dict) -> dict:
    """A ``call`` request answered: the learner's object (by its handle) run on the decoded inputs inside one
    check (the harness's time limit and watch on that exercise's references), and what came out: ``value`` or
    ``error``, the inputs as the call left them (``after``), what it printed, ``hit`` and ``observed``."""
    obj = _handles[int(request["handle"])]
    args, kwargs = decode(request.get("args", [])), decode(request.get("kwargs", {"__dict__": []}))
    if isinstance(obj, nn.Module):
        _sync(obj, decode(request.get("sync", {"__dict__": []})), request.get("training"))
    watch = watch_of(request)
    reply: dict = {}
    running = kernel_guard.notebook_threads()  # in the graded kernel: a thread could compute what the check watches
    with _harness.checking(request.get("timeout"), watch) as run:
        try:
            observe = {"observe": True} if request.get("observe") else {}
            out = _harness.call(
                obj, *args, case=str(request.get("case", "")), seed=request.get("seed"), **observe, **kwargs
            )
            if isinstance(out, nn.Module):
                reply["value"] = {"__module__": describe(out)}
            else:
                reply["value"] = plain(out)
            reply["after"] = [plain(a) if isinstance(a, torch.Tensor) else None for a in args]
            reply["observed"] = _harness.last_observed() if observe else None
        except NotImplementedYet:
            reply["error"] = {"kind": "not_implemented"}
        except TimedOut:
            reply["error"] = {"kind": "timeout"}
        except LearnerError as err:
            reply["error"] = {
                "kind": "system_exit" if isinstance(err.exc, SystemExit) else "exception",
                "type": type_name(err.exc),
                "message": str(err.exc)[:2000],
                "builtin": type(err.exc).__module__ == "builtins",
            }
    reply["printed"] = _harness.printed(run)
    running = running or kernel_guard.notebook_threads()
    census = [", ".join(running)[:200], _harness.THREAD_RUNNING] if running else None
    reply["hit"] = list(run.hit) if run.hit else census
    return reply


def guard() -> None:
    """The graded kernel's guard (``kernel_guard``), turned on by the grader's warm-up once its imports are done."""
    kernel_guard.install()


def serve(request_text: str) -> None:
    """Answer one grader request (a base64 JSON string); prints ``nonce`` + the base64 JSON reply. The nonce is
    taken out of the request before any learner code runs (what that code changes in the request cannot change
    where the reply goes); the grader takes exactly one line with it."""
    request = json.loads(base64.b64decode(request_text))
    nonce = str(request.pop("nonce", ""))
    op = request.get("op")
    try:
        if op == "describe":
            key = request["key"]
            if key in _captured:
                reply = {"object": describe(_captured[key])}
            else:
                reply = {"missing": _missing.get(key, f"name {key!r} is not defined")}
        elif op == "call":
            reply = answer_call(request)
        else:
            reply = {"failed": f"unknown op {op!r}"}
    except Exception as exc:  # the grader turns this into an error verdict
        reply = {"failed": f"{type(exc).__name__}: {str(exc)[:500]}"}
    text = base64.b64encode(json.dumps(encode(reply)).encode()).decode()
    sys.__stdout__.flush()
    print(nonce + text, flush=True)
