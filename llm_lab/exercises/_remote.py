"""Checking a learner's object that lives in another process: the grader's side and the kernel's side.

Grading (``tools/teaching/grade.py``) runs the submission in a sandboxed kernel and the checkers in its own process.
The kernel only ever answers with DATA: the grader asks it to call the learner's function (or build and call
the learner's class) on inputs the grader chose, and the kernel sends back what came out, as JSON with
tensors written as raw bytes (``encode``/``decode``: no pickle, nothing in a reply can run code). The
checker, the reference and the comparison never run where the learner's code runs, so a kernel that patches
``json``, ``print``, ``torch.allclose``, IPython's input transformers or the checker modules can only change
what it says its own function returns.

The kernel's side (``capture``, ``serve``) is called by cells the grader appends to the notebook. The grader's
side is :class:`Link` (one per kernel; it sends requests through a ``send(request) -> reply`` callable),
:class:`RemoteObject` (a learner's function or class) and :class:`RemoteModule` (an ``nn.Module`` whose
top-level ``nn.Linear`` layers are local copies; the checkers read and change them like any layer, and every
forward sends them first, with the train/eval flag). ``_harness.call`` routes calls on these to the kernel.

What the kernel says about *how* it computed (llm_lab's reference code running, a ruled-out function called,
shapes observed) is its own word: an honest submission that calls the reference is caught, a lying kernel is
not; the grader adds a check of the submitted source that no kernel can change (``tools/teaching/grade.py``).
"""

from __future__ import annotations

import base64
import json
import math
import re
import sys

import torch
from torch import nn

MAX_ITEMS = 10_000  # values in one reply (a flood is an error, not a hang)
MAX_BYTES = 64 * 2**20  # one tensor's bytes, meta tensors included (what would be built from their shape)
MAX_REPLY_BYTES = 4 * MAX_BYTES  # all tensors of one reply together; also its text, as the grader reads it
MAX_NODES = 200_000  # JSON values in one reply's text, counted before it is parsed
MAX_DEPTH = 8
DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    )
}
_NAME = re.compile(r"[^A-Za-z0-9_.]")


class WireError(ValueError):
    """A reply that is not what the protocol allows (too big, too deep, an unknown type)."""


# ---- the wire format ------------------------------------------------------------------------------------------


def encode(value, _depth: int = 0, _count: list | None = None):
    """``value`` as JSON-able data: tensors as dtype, shape and base64 bytes; anything else as its type name."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_ITEMS or _depth > MAX_DEPTH:
        return {"__opaque__": "TooLarge"}
    if value is None or isinstance(value, (bool, int, str)) and not isinstance(value, torch.Tensor):
        return value if not isinstance(value, int) or abs(value) < 2**62 else {"__float__": str(float(value))}
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": str(value)}
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, (list, tuple)):
        items = [encode(v, _depth + 1, count) for v in value[:MAX_ITEMS]]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": [[k, encode(v, _depth + 1, count)] for k, v in list(value.items())[:MAX_ITEMS]]}
    if isinstance(value, nn.Embedding):
        return {"__embedding__": _encode_tensor(value.weight)}
    return {"__opaque__": type_name(value)}


def _encode_tensor(t: torch.Tensor):
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        return {"__opaque__": f"Tensor[{dtype}]"}
    if t.is_meta:
        return {"__tensor__": dtype, "shape": list(t.shape), "meta": True}
    t = t.detach().cpu().contiguous()
    raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
    return {"__tensor__": dtype, "shape": list(t.shape), "data": base64.b64encode(raw.numpy().tobytes()).decode()}


def parse(text: bytes):
    """A reply's JSON text as data, within a fixed budget: at most MAX_REPLY_BYTES of text and MAX_NODES values,
    counted before anything is parsed (a text of a million empty lists costs its length, not 20 times it)."""
    if len(text) > MAX_REPLY_BYTES:
        raise WireError(f"a reply of {len(text)} bytes (at most {MAX_REPLY_BYTES})")
    nodes = text.count(b",") + text.count(b"[") + text.count(b"{") + text.count(b":")
    if nodes > MAX_NODES:
        raise WireError(f"a reply of about {nodes} values (at most {MAX_NODES})")
    try:
        return json.loads(text)
    except RecursionError:
        raise WireError("reply nested too deep") from None
    except ValueError as exc:
        raise WireError(f"a reply that is not JSON ({type(exc).__name__})") from None


def decode(obj, _depth: int = 0, _budget: list | None = None):
    """The value ``encode`` wrote; raises ``WireError`` for anything else. Never runs code. Every tensor's size
    (a meta tensor's too) is checked against MAX_BYTES, and all of one reply's against MAX_REPLY_BYTES, from its
    shape, before anything is built."""
    budget = [MAX_REPLY_BYTES] if _budget is None else _budget
    if _depth > MAX_DEPTH + 1:
        raise WireError("reply nested too deep")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [decode(v, _depth + 1, budget) for v in obj]
    if not isinstance(obj, dict) or len(obj) > 4:
        raise WireError(f"unexpected value of type {type(obj).__name__}")
    if "__tensor__" in obj:
        return _decode_tensor(obj, budget)
    if "__tuple__" in obj:
        return tuple(decode(v, _depth + 1, budget) for v in _list(obj["__tuple__"]))
    if "__dict__" in obj:
        return {str(k): decode(v, _depth + 1, budget) for k, v in _list(obj["__dict__"])}
    if "__float__" in obj:
        return float(str(obj["__float__"]))
    if "__embedding__" in obj:
        weight = _decode_tensor(obj["__embedding__"], budget)
        if weight.dim() != 2 or not weight.is_floating_point():
            raise WireError("an embedding's weight must be a 2-D float tensor")
        return nn.Embedding.from_pretrained(weight, freeze=False)
    if "__opaque__" in obj:
        return opaque(str(obj["__opaque__"]))
    raise WireError(f"unexpected keys {sorted(obj)[:4]}")


def _list(v) -> list:
    if not isinstance(v, list):
        raise WireError("expected a list")
    return v


def _decode_tensor(obj, budget: list) -> torch.Tensor:
    if not isinstance(obj, dict):
        raise WireError("a tensor that is not an object")
    dtype = DTYPES.get(str(obj.get("__tensor__")))
    shape = obj.get("shape")
    if (
        dtype is None
        or not isinstance(shape, list)
        or len(shape) > 16
        or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s for s in shape)
    ):
        raise WireError("a tensor with an unknown dtype or a bad shape")
    n = math.prod(shape)
    size = torch.empty((), dtype=dtype).element_size()
    if n * size > MAX_BYTES:
        raise WireError(f"a tensor of {n * size} bytes (at most {MAX_BYTES})")
    budget[0] -= n * size
    if budget[0] < 0:
        raise WireError(f"a reply whose tensors hold more than {MAX_REPLY_BYTES} bytes")
    if obj.get("meta"):
        return torch.empty(shape, dtype=dtype, device="meta")
    raw = base64.b64decode(str(obj.get("data", "")), validate=True)
    if len(raw) != n * size:
        raise WireError(f"a tensor of shape {shape} needs {n * size} bytes, got {len(raw)}")
    if n == 0:
        return torch.empty(shape, dtype=dtype)
    load = torch.int16 if dtype == torch.bfloat16 else dtype
    t = torch.frombuffer(bytearray(raw), dtype=load).clone().reshape(shape)
    return t.view(torch.bfloat16) if dtype == torch.bfloat16 else t


def type_name(obj) -> str:
    return _NAME.sub("", type(obj).__name__)[:60] or "object"


_OPAQUE: dict[str, type] = {}


class Opaque:
    """A value the kernel returned that is not data (a numpy array, a generator, ...): only its type's name
    came back, so checkers name it ("returned a ndarray") and it compares equal to nothing."""


def opaque(name: str) -> Opaque:
    name = _NAME.sub("", name.replace("[", "_").replace("]", ""))[:60] or "object"
    if name not in _OPAQUE:
        _OPAQUE[name] = type(name, (Opaque,), {})
    return _OPAQUE[name]()


# ---- the kernel's side ------------------------------------------------------------------------------------------

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


def _describe(obj) -> dict:
    handle = id(obj)
    _handles[handle] = obj
    desc = {
        "handle": handle,
        "name": _NAME.sub("", str(getattr(obj, "__name__", "") or ""))[:60],
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


def _call(request: dict) -> dict:
    from . import _harness
    from ._core import LearnerError, NotImplementedYet, TimedOut
    from ._registry import watch_for

    obj = _handles[int(request["handle"])]
    args, kwargs = decode(request.get("args", [])), decode(request.get("kwargs", {"__dict__": []}))
    if isinstance(obj, nn.Module):
        _sync(obj, decode(request.get("sync", {"__dict__": []})), request.get("training"))
    exercise = request.get("exercise")
    watch = watch_for(exercise) if exercise else _harness.Watch()
    reply: dict = {}
    with _harness.checking(request.get("timeout"), watch) as run:
        try:
            observe = {"observe": True} if request.get("observe") else {}
            out = _harness.call(
                obj, *args, case=str(request.get("case", "")), seed=request.get("seed"), **observe, **kwargs
            )
            if isinstance(out, nn.Module):
                reply["value"] = {"__module__": _describe(out)}
            else:
                reply["value"] = out
            reply["after"] = [a if isinstance(a, torch.Tensor) else None for a in args]
            last = getattr(_harness, "last_observed", None)
            reply["observed"] = last() if observe and last else None
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
    reply["hit"] = list(run.hit) if run.hit else None
    return reply


def serve(request_text: str) -> None:
    """Answer one grader request (a base64 JSON string); prints ``nonce`` + the base64 JSON reply."""
    request = json.loads(base64.b64decode(request_text))
    op = request.get("op")
    try:
        if op == "describe":
            key = request["key"]
            if key in _captured:
                reply = {"object": _describe(_captured[key])}
            else:
                reply = {"missing": _missing.get(key, f"name {key!r} is not defined")}
        elif op == "call":
            reply = _call(request)
        else:
            reply = {"failed": f"unknown op {op!r}"}
    except Exception as exc:  # the grader turns this into an error verdict
        reply = {"failed": f"{type(exc).__name__}: {str(exc)[:500]}"}
    text = base64.b64encode(json.dumps(encode(reply)).encode()).decode()
    sys.__stdout__.flush()
    print(request["nonce"] + text, flush=True)


# ---- the grader's side ------------------------------------------------------------------------------------------


class RemoteFailed(RuntimeError):
    """The kernel could not answer (it died, ran out of time, or sent something the protocol does not allow)."""


class RemoteError(Exception):
    """The learner's code raised an exception of a type that is not a Python builtin; ``type_name`` is its name."""


class Link:
    """The grader's end of one kernel: ``send(request: dict, timeout: float) -> dict`` does the round trip.

    ``exercise`` is the exercise being graded (the kernel watches for that exercise's references)."""

    def __init__(self, send):
        self._send = send
        self.exercise: str | None = None

    def request(self, request: dict, timeout: float) -> dict:
        reply = decode(self._send(request, timeout))
        if not isinstance(reply, dict):
            raise RemoteFailed("the kernel's reply is not an object")
        if "failed" in reply:
            raise RemoteFailed(str(reply["failed"])[:300])
        return reply

    def lookup(self, key: str, timeout: float = 30.0):
        """The learner's object named ``key`` as captured at its checker cell: a proxy, or NameError."""
        reply = self.request({"op": "describe", "key": key}, timeout)
        if "missing" in reply:
            raise NameError(str(reply["missing"])[:300])
        return self.proxy(reply["object"])

    def proxy(self, desc: dict):
        if not isinstance(desc, dict) or not isinstance(desc.get("handle"), int):
            raise RemoteFailed("a bad object description")
        kind = desc.get("kind")
        if kind == "module":
            return RemoteModule(self, desc)
        if kind in ("class", "function") and desc.get("callable"):
            return RemoteObject(self, desc)
        return opaque(str(desc.get("type", "object")))


def _error_from(error: dict) -> BaseException:
    """The learner's exception as the kernel named it: a builtin type is rebuilt (checkers match on
    ``RuntimeError``, ``IndexError``, ...), any other becomes a :class:`RemoteError` carrying the name."""
    import builtins

    message, name = str(error.get("message", "")), str(error.get("type", "Exception"))
    klass = getattr(builtins, name, None) if error.get("builtin") else None
    if isinstance(klass, type) and issubclass(klass, Exception):
        try:
            return klass(message)
        except Exception:  # some builtins want other arguments (UnicodeDecodeError, ...)
            pass
    err = RemoteError(f"{name}: {message}" if message else name)
    err.type_name = name
    return err


class _Remote:
    """What a proxy shares: the round trip of one call."""

    _link: Link
    _handle: int

    def _remote_call(
        self, args: tuple, kwargs: dict, *, case: str, seed, timeout, observe: bool, sync=None, training=None
    ) -> dict:
        """One call in the kernel: ``{"value"}`` or ``{"error": BaseException}``, with ``printed`` (what the
        learner's code printed), ``hit`` (a watched function it ran, by the kernel's word) and ``observed``.
        Raises ``RemoteFailed`` when the kernel cannot answer, ``TimeoutError`` when it answers too late."""
        request = {
            "op": "call",
            "handle": self._handle,
            "args": encode(list(args)),
            "kwargs": encode(kwargs),
            "case": case,
            "seed": seed,
            "timeout": timeout,
            "observe": observe,
            "exercise": self._link.exercise,
            "sync": encode(sync or {}),
            "training": training,
        }
        reply = self._link.request(request, (timeout or 60.0) + 15.0)
        after = reply.get("after") if isinstance(reply.get("after"), list) else []
        for mine, theirs in zip(args, after[: len(args)], strict=False):  # what the learner's code did to them
            if (
                isinstance(mine, torch.Tensor)
                and isinstance(theirs, torch.Tensor)
                and theirs.shape == mine.shape
                and theirs.dtype == mine.dtype
            ):
                mine.copy_(theirs)
        hit = reply.get("hit")
        result = {
            "printed": str(reply.get("printed") or "")[:5000],
            "hit": tuple(str(h) for h in hit[:2]) if isinstance(hit, list) and len(hit) == 2 else None,
            "observed": _observed(reply.get("observed")),
        }
        error = reply.get("error")
        if isinstance(error, dict):
            kind = error.get("kind")
            exc = {"not_implemented": NotImplementedError, "timeout": TimeoutError, "system_exit": SystemExit}.get(kind)
            result["error"] = exc() if exc else _error_from(error)
            return result
        value = reply.get("value")
        if isinstance(value, dict) and "__module__" in value:
            value = self._link.proxy(value["__module__"])
        result["value"] = value
        return result


def _observed(record) -> dict | None:
    """The kernel's record of an observed call (its own word), reduced to what the checkers read."""
    if not isinstance(record, dict):
        return None
    largest = record.get("largest")
    ops = record.get("ops") if isinstance(record.get("ops"), list) else []
    marks = record.get("marks") if isinstance(record.get("marks"), list) else []
    return {
        **{k: v for k, v in record.items() if isinstance(k, str) and isinstance(v, (int, float, str, bool))},
        "largest": int(largest) if isinstance(largest, (int, float)) and math.isfinite(largest) else 0,
        "ops": [str(op)[:200] for op in ops[:5000]],
        "marks": [str(m)[:200] for m in marks[:100]],
    }


class RemoteObject(_Remote):
    """A learner's function or class in the kernel; ``_harness.call`` calls it there."""

    def __init__(self, link: Link, desc: dict):
        self._link, self._handle = link, int(desc["handle"])
        self.__name__ = str(desc.get("name") or "obj")
        self.kind = str(desc.get("kind"))
        self.module_class = bool(desc.get("module_class"))

    def __call__(self, *args, **kwargs):
        raise TypeError("a remote object is called through llm_lab.exercises._harness.call")

    def __repr__(self) -> str:
        return f"<remote {self.kind} {self.__name__}>"


class RemoteModule(_Remote, nn.Module):
    """A learner's ``nn.Module`` in the kernel, mirrored here: its top-level ``nn.Linear`` layers are local
    copies (read and changed by the checkers), its buffers and parameter names as they were when built."""

    def __init__(self, link: Link, desc: dict):
        nn.Module.__init__(self)
        state = desc.get("module") or {}
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_handle", int(desc["handle"]))
        object.__setattr__(self, "remote_type", str(desc.get("type", "Module")))
        object.__setattr__(self, "remote_parameters", [str(n) for n in state.get("parameters", [])])
        object.__setattr__(self, "remote_state_keys", [str(n) for n in state.get("state_keys", [])])
        for name, layer in (state.get("linears") or {}).items():
            weight, bias = layer.get("weight"), layer.get("bias")
            if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or not str(name).isidentifier():
                continue
            meta = weight.is_meta or (isinstance(bias, torch.Tensor) and bias.is_meta)
            copy = nn.Linear(
                weight.shape[1],
                weight.shape[0],
                bias=isinstance(bias, torch.Tensor),
                dtype=weight.dtype if weight.is_floating_point() else torch.float32,
                device="meta" if meta else None,
            )  # the learner's meta layer: no values, no memory
            with torch.no_grad():
                if not meta:
                    copy.weight.copy_(weight)
                    if isinstance(bias, torch.Tensor) and bias.shape == copy.bias.shape:
                        copy.bias.copy_(bias)
            setattr(self, name, copy)
        for name, buf in (state.get("buffers") or {}).items():
            if (
                isinstance(buf, torch.Tensor)
                and "." not in name
                and str(name).isidentifier()
                and not hasattr(self, name)
            ):
                self.register_buffer(name, buf)
        self.train(bool(state.get("training", True)))

    def named_parameters(self, *args, **kwargs):  # the learner module's own names, with local copies where any
        local = dict(nn.Module.named_parameters(self))
        for name in self.remote_parameters:
            yield name, local.get(name, nn.Parameter(torch.empty(0), requires_grad=False))

    def state_dict(self, *args, **kwargs):
        local = nn.Module.state_dict(self)
        return {k: local.get(k, torch.empty(0)) for k in self.remote_state_keys}

    def sync_state(self) -> dict:
        return {
            name: {"weight": m.weight.detach(), "bias": None if m.bias is None else m.bias.detach()}
            for name, m in self._modules.items()
            if isinstance(m, nn.Linear)
        }

    def forward(self, *args, **kwargs):
        raise TypeError("a remote module is called through llm_lab.exercises._harness.call")

    def __repr__(self) -> str:
        return f"<remote module {self.remote_type}>"


def is_remote(obj) -> bool:
    return isinstance(obj, _Remote)
