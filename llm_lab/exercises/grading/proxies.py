"""The grader's side of grading: stand-ins for the learner's objects that live in a sandboxed kernel.

:class:`KernelLink` is the grader's end of one kernel: it sends requests through a ``send(request, timeout) ->
reply`` callable (``tools/teaching/grader/kernel.py`` runs them as cells) and turns a captured object's description
into a proxy. :class:`RemoteObject` stands for a learner's function or class; :class:`RemoteModule` for an
``nn.Module``, whose top-level ``nn.Linear`` layers are local copies (the checkers read and change them like any
layer; every call sends them first, with the train/eval flag). The checkers call a proxy through
``_harness.call`` like any learner object; the harness sees a ``Remote`` (``_core``'s marker, which
:class:`Proxy` subclasses) and sends the call to the kernel (``Proxy.call_in_kernel``). Nothing here imports the
checkers: this module knows only the ``wire`` format and that marker.
"""

from __future__ import annotations

import builtins
import math

import torch
from torch import nn

from .._core import Remote
from .wire import decode, encode, opaque


class RemoteFailed(RuntimeError):
    """The kernel could not answer (it died, ran out of time, or sent something the protocol does not allow)."""


class RemoteError(Exception):
    """The learner's code raised an exception of a type that is not a Python builtin; ``type_name`` is its name."""


class KernelLink:
    """The grader's end of one kernel: ``send(request: dict, timeout: float) -> dict`` does the round trip.

    ``exercise`` is the exercise being graded; ``watching`` what the kernel watches each call of it for
    (``{"references": [dotted names under llm_lab], "forbidden": [[module, attribute, hint]]}``, sent with every
    call: the kernel holds no exercise records)."""

    def __init__(self, send):
        self._send = send
        self.exercise: str | None = None
        self.watching: dict = {}

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


class Proxy(Remote):
    """What every proxy shares: its kernel, its handle there, and the round trip of one call."""

    _link: KernelLink
    _handle: int

    def call_in_kernel(self, args: tuple, kwargs: dict, *, case: str, seed, timeout, observe: bool) -> dict:
        """One call in the kernel: ``{"value"}`` or ``{"error": BaseException}``, with ``printed`` (what the
        learner's code printed), ``hit`` (a watched function it ran, by the kernel's word) and ``observed``.
        Tensors among ``args`` get what the learner's code wrote into them. Raises ``RemoteFailed`` when the
        kernel cannot answer, ``TimeoutError`` when it answers too late."""
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
            **self._link.watching,
            **self._state(),
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
        return self._outcome(reply)

    def _state(self) -> dict:
        """What the kernel's object must be set to before the call (a module's layers and train/eval flag)."""
        return {"sync": encode({}), "training": None}

    def _outcome(self, reply: dict) -> dict:
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


class RemoteObject(Proxy):
    """A learner's function or class in the kernel; ``_harness.call`` calls it there."""

    def __init__(self, link: KernelLink, desc: dict):
        self._link, self._handle = link, int(desc["handle"])
        self.__name__ = str(desc.get("name") or "obj")
        self.kind = str(desc.get("kind"))

    def __call__(self, *args, **kwargs):
        raise TypeError("a remote object is called through llm_lab.exercises._harness.call")

    def __repr__(self) -> str:
        return f"<remote {self.kind} {self.__name__}>"


class RemoteModule(Proxy, nn.Module):
    """A learner's ``nn.Module`` in the kernel, mirrored here: its top-level ``nn.Linear`` layers are local
    copies (read and changed by the checkers), its buffers and parameter names as they were when built."""

    def __init__(self, link: KernelLink, desc: dict):
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

    def _state(self) -> dict:
        """The local copies of the layers (the checkers may have set them) and the train/eval flag."""
        layers = {
            name: {"weight": m.weight.detach(), "bias": None if m.bias is None else m.bias.detach()}
            for name, m in self._modules.items()
            if isinstance(m, nn.Linear)
        }
        return {"sync": encode(layers), "training": self.training}

    def forward(self, *args, **kwargs):
        raise TypeError("a remote module is called through llm_lab.exercises._harness.call")

    def __repr__(self) -> str:
        return f"<remote module {self.remote_type}>"
