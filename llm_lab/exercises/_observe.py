"""Watching what learner code computes, for the statement requirements a result alone cannot show.

``observing()`` is active during one learner call (``_harness.call(..., observe=True)``) and records:

- ``largest``: the most elements of any tensor a torch op produced (views excluded: they allocate nothing).
  Blocked attention (07) must never hold a ``(T, T)`` matrix or whole rows of scores; this is how the checker
  sees that without reading the code.
- ``ops``: the names of the torch functions and Tensor methods the code called itself
  (``torch.Tensor.view``, ``torch.nn.functional.scaled_dot_product_attention``,
  ``torch.ops.aten._scaled_dot_product_attention_math``) and of the aten ops they ran
  (``aten._scaled_dot_product_flash_attention_for_cpu.default``, ``aten.masked_fill.Scalar``). The first kind
  tells ``reshape`` from ``view`` (both run ``aten.view``); the second catches an op reached by any route.

Two torch hooks do it: a ``TorchFunctionMode`` (the calls as written; calls made inside a torch function are
not seen, so printing a tensor does not count as the ops that format it) and a ``TorchDispatchMode`` (every
aten op, composite functions decomposed). The record is plain data (an int and a sorted list of str), so a
kernel in another process can send it. Limits: code that disables torch's modes itself hides from both
hooks; the record is then the word of whatever ran the code (see ``_remote``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


@dataclass
class Observed:
    largest: int = 0
    ops: set = field(default_factory=set)

    def record(self) -> dict:
        return {"largest": self.largest, "ops": sorted(self.ops)}


def function_name(func) -> str:
    """A torch callable as it is written: ``torch.softmax``, ``torch.Tensor.view``, ``torch.ops.aten.foo``."""
    if isinstance(func, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return "torch.ops." + func._qualified_op_name.replace("::", ".")
    owner = getattr(func, "__self__", None)
    if type(owner).__name__ == "getset_descriptor":  # a property such as Tensor.mT
        return f"torch.Tensor.{owner.__name__}"
    name = getattr(func, "__name__", None) or type(func).__name__
    qualname = getattr(func, "__qualname__", "") or ""
    if qualname.startswith(("TensorBase.", "Tensor.")):
        return f"torch.Tensor.{name}"
    module = getattr(func, "__module__", None) or "torch"
    if qualname.startswith("_VariableFunctionsClass."):
        module = "torch"
    elif module == "torch._C._nn":  # F.scaled_dot_product_attention, F.linear, ... are these builtins
        module = "torch.nn.functional"
    return f"{module}.{name}"


class _Calls(TorchFunctionMode):
    def __init__(self, seen: Observed):
        super().__init__()
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.ops.add(function_name(func))
        return func(*args, **(kwargs or {}))


class _Ops(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch >= 2.9 wraps a mode's __torch_dispatch__ in a dynamo guard, importing torch._dynamo on the first
        # op (2 s); nothing is compiled here, so the guard is not needed (older torch ignores this method)
        return False

    def __init__(self, seen: Observed):
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.seen.ops.add(str(func))
        if not getattr(func, "is_view", False):
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.numel() > self.seen.largest:
                    self.seen.largest = t.numel()
        return out


@contextlib.contextmanager
def observing():
    """Record what runs inside the block; yields an :class:`Observed` (``.record()``: the plain-data form)."""
    seen = Observed()
    with _Calls(seen), _Ops(seen):
        yield seen


def called(record: dict | None, *names: str) -> str | None:
    """The first torch function or Tensor method in ``record`` (not an aten op: ``reshape`` runs ``aten.view``)
    whose name, the last dotted part, is one of ``names``: ``called(r, "view")`` finds ``torch.Tensor.view``."""
    for op in (record or {}).get("ops", ()):
        if op.startswith("torch.") and op.rsplit(".", 1)[-1] in names:
            return op
    return None


def called_matching(record: dict | None, fragment: str) -> str | None:
    """An op name in ``record`` that contains ``fragment`` (e.g. ``"scaled_dot_product"``): a torch function as
    written if there is one, else an aten op."""
    ops = sorted((record or {}).get("ops", ()), key=lambda op: not op.startswith("torch."))
    return next((op for op in ops if fragment in op), None)
