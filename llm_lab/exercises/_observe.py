"""Watching what learner code computes, for the statement requirements a result alone cannot show.

``observing()`` is active during one learner call (``_harness.call(..., observe=True)``) and records:

- ``largest``: the most elements of any tensor a torch call produced (views excluded: they allocate nothing).
  Blocked attention (07) must never hold a ``(T, T)`` matrix or whole rows of scores; this is how the checker
  sees that without reading the code.
- ``ops``: the names of the torch functions, Tensor methods and ``torch.ops`` operators the code called itself
  (``torch.Tensor.view``, ``torch.nn.functional.scaled_dot_product_attention``,
  ``torch.ops.aten.scaled_dot_product_attention.default``), and the aten ops that a call outside the plain
  ones ran (``aten._scaled_dot_product_flash_attention_for_cpu.default``). The first kind tells ``reshape``
  from ``view`` (both run ``aten.view``); the second catches an op reached through a composite function.
- ``marks``: what some calls did beyond their name: ``is_causal=True`` (a call passed it, by keyword, by
  position or as torch's ``CausalBias`` mask), and ``constant:<name>`` (a write such as
  ``scores[mask] = float("-inf")`` that put one constant value into chosen positions: how a mask is applied by
  writing, unlike ``out[:, i] = ...``, which writes computed values).

One hook sees every call as written: a ``TorchFunctionMode`` (calls made inside a torch function are not seen, so
printing a tensor does not count as the ops that format it). The plain calls (``PLAIN``: arithmetic, indexing,
reductions, creation, layout; each one aten op, or views and copies of its inputs) on arguments that cannot call
back into Python (``_inert``: tensors, numbers, slices of ints) are only named and sized; any other call runs under
a ``TorchDispatchMode`` as well, which names every aten op it decomposes into and sizes their outputs, however it
was reached (a learner's ``__index__`` or ``__torch_function__`` called from inside it). Looking inside only where
something could hide keeps the cost of observing a loop of tiny ops low (``benchmarks/checker_overhead.py``). The
hooks never raise into the learner's call: a callable they cannot name is recorded by its type. The record is plain
data (an int and sorted lists of str), so a kernel in another process can send it. Limits: code that disables
torch's modes itself hides from both hooks; the record is then the word of whatever ran the code (see
``grading.answering``).
"""

from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

# Calls named and sized without looking inside: each runs one aten op (or views/copies of its inputs), none
# reaches attention, dropout or a mask of its own. Matched on the last part of the name.
PLAIN = frozenset(
    """
__add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__ __rtruediv__
__itruediv__ __floordiv__ __rfloordiv__ __mod__ __matmul__ __rmatmul__ __neg__ __pos__ __abs__ __pow__ __rpow__
__getitem__ __setitem__ __gt__ __lt__ __ge__ __le__ __eq__ __ne__ __and__ __rand__ __or__ __ror__ __xor__
__invert__ __iand__ __ior__ __len__ __bool__ __float__ __int__ __index__ __format__ __hash__ __get__
add add_ sub sub_ mul mul_ div div_ neg exp exp_ log sqrt rsqrt pow abs maximum minimum max min amax amin
sum mean cumsum logsumexp softmax log_softmax matmul mm bmm baddbmm addmm outer dot
masked_fill masked_fill_ where clamp clamp_ isinf isnan isfinite nan_to_num eq ne gt lt ge le logical_not
tensor as_tensor zeros ones full empty zeros_like ones_like full_like empty_like arange tril triu eye rand randn
rand_like randn_like randint bernoulli
transpose permute view view_as reshape reshape_as unsqueeze squeeze expand expand_as contiguous clone detach
flatten unflatten movedim swapaxes swapdims narrow select split chunk unbind cat stack unfold as_strided
item tolist size dim numel float double long int bool to type_as new_zeros new_ones new_full new_empty
copy_ fill_ zero_ index_select gather argmax argmin all any
""".split()
)
# Writes that can hide a score by putting a constant into chosen positions (marked ``constant:<name>``).
WRITES = {
    "__setitem__": 2,
    "index_put": 2,
    "index_put_": 2,
    "masked_scatter": 2,
    "masked_scatter_": 2,
    "index_fill": 3,
    "index_fill_": 3,
}
_NAMES: dict = {}
# Arguments that cannot call back into Python while a torch call runs: a plain call on them is only named and
# sized. Any other argument (a learner's object with ``__index__`` or ``__torch_function__``, a tensor subclass,
# an int subclass) may run Python from inside the call, where this mode is not active: such a call runs under the
# dispatch mode, which sees every aten op, whatever route reached it.
_INERT = frozenset({int, float, bool, complex, type(None), str, torch.dtype, torch.device, type(Ellipsis)})


def _inert(args, depth: int = 0) -> bool:
    for a in args:
        t = type(a)
        if t is torch.Tensor or t in _INERT:
            continue
        if t is slice and all(type(x) in (int, type(None)) for x in (a.start, a.stop, a.step)):
            continue
        if t in (tuple, list) and depth < 4 and len(a) <= 64 and _inert(a, depth + 1):
            continue
        return False
    return True


@dataclass
class Observed:
    largest: int = 0
    ops: set = field(default_factory=set)
    marks: set = field(default_factory=set)

    def record(self) -> dict:
        return {"largest": self.largest, "ops": sorted(self.ops), "marks": sorted(self.marks)}

    def size(self, out, views: bool) -> None:
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.numel() > self.largest and (views or not t._is_view()):
                self.largest = t.numel()


def _name_of(func) -> str:
    if isinstance(func, torch._ops.OpOverloadPacket):
        return "torch.ops." + func._qualified_op_name.replace("::", ".")
    if isinstance(func, torch._ops.OpOverload):
        return f"torch.ops.{func.namespace}.{func.__name__}"  # torch.ops.aten.add.Tensor
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


def function_name(func) -> str:
    """A torch callable as it is written: ``torch.softmax``, ``torch.Tensor.view``, ``torch.ops.aten.add.Tensor``.
    Never raises: what it cannot name is named by its type (``torch.<type>``)."""
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    try:
        name = str(_name_of(func))
    except Exception:  # a callable of a kind torch added later: name it by its type, never fail the call
        name = f"torch.{type(func).__name__}"
    with contextlib.suppress(TypeError):
        if len(_NAMES) < 4096:
            _NAMES[func] = name
    return name


def op_of(name: str) -> str:
    """The operator a recorded name calls: the last part, or for ``torch.ops.<ns>.<op>.<overload>`` the op."""
    parts = name.split(".")
    return parts[3] if name.startswith("torch.ops.") and len(parts) > 3 else parts[-1]


def _is_causal(func, name: str, args, kwargs) -> bool:
    if kwargs.get("is_causal") is True:
        return True
    if "scaled_dot_product" not in name:
        return False
    schema = getattr(func, "_schema", None)
    if schema is not None:
        names = [a.name for a in schema.arguments]
        index = names.index("is_causal") if "is_causal" in names else -1
    else:
        index = 5  # F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, ...)
    return 0 <= index < len(args) and args[index] is True


def _causal_bias(args, kwargs) -> bool:
    bias = getattr(getattr(torch.nn, "attention", None), "bias", None)
    kind = getattr(bias, "CausalBias", None)
    return kind is not None and any(isinstance(a, kind) for a in (*args, *kwargs.values()))


def _constant(value) -> bool:
    if isinstance(value, numbers.Number):
        return True
    if not isinstance(value, torch.Tensor) or value.is_complex() or value.numel() == 0:
        return False
    flat = value.detach().reshape(-1)
    return bool((flat == flat[0]).all()) or bool(flat.isnan().all())


def _mark(seen: Observed, func, name: str, args, kwargs) -> None:
    op = op_of(name)
    if op in WRITES:
        index = WRITES[op]
        value = args[index] if len(args) > index else kwargs.get("values", kwargs.get("value"))
        if _constant(value):
            seen.marks.add(f"constant:{name}")
    if _is_causal(func, name, args, kwargs) or _causal_bias(args, kwargs):
        seen.marks.add("is_causal=True")


def _kind(func) -> tuple[str, bool, bool]:
    """``(name, plain, write)`` of a torch callable, cached: the hook's fast path is one dict lookup."""
    try:
        return _KINDS[func]
    except (KeyError, TypeError):
        pass
    name = function_name(func)
    op = op_of(name)
    kind = (name, op in PLAIN, op in WRITES)
    with contextlib.suppress(TypeError):
        if len(_KINDS) < 4096:
            _KINDS[func] = kind
    return kind


_KINDS: dict = {}


class _Calls(TorchFunctionMode):
    def __init__(self, seen: Observed):
        super().__init__()
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):
        try:
            name, plain, write = _kind(func)
        except Exception:  # noqa: BLE001 - never fail the learner's call: look inside it instead
            name, plain, write = f"torch.{type(func).__name__}", False, False
        seen = self.seen
        seen.ops.add(name)
        plain = plain and _inert(args) and (not kwargs or _inert(kwargs.values()))
        if plain and not write and not kwargs:  # the fast path: most calls of a loop over small tensors
            out = func(*args)
            if type(out) is torch.Tensor and out.numel() > seen.largest and not out._is_view():
                seen.largest = out.numel()
            return out
        kwargs = kwargs or {}
        try:
            _mark(seen, func, name, args, kwargs)
        except Exception:  # noqa: BLE001 - a mark is extra; the call itself goes on untouched
            pass
        if plain:
            out = func(*args, **kwargs)
            seen.size(out, views=False)
            return out
        with _Ops(seen):
            return func(*args, **kwargs)


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
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            name = str(func)
            self.seen.ops.add(name)
            if _is_causal(func, name, args, kwargs):
                self.seen.marks.add("is_causal=True")
            if not getattr(func, "is_view", False):
                self.seen.size(out, views=True)
        except Exception:  # noqa: S110 - observing never fails the learner's call
            pass
        return out


@contextlib.contextmanager
def observing():
    """Record what runs inside the block; yields an :class:`Observed` (``.record()``: the plain-data form)."""
    seen = Observed()
    with _Calls(seen):
        yield seen


def called(record: dict | None, *names: str) -> str | None:
    """The first torch function, Tensor method or ``torch.ops`` operator in ``record`` (not an aten op run
    underneath: ``reshape`` runs ``aten.view``) whose operator is one of ``names``: ``called(r, "view")`` finds
    ``torch.Tensor.view`` and ``torch.ops.aten.view.default``."""
    for op in (record or {}).get("ops", ()):
        if op.startswith("torch.") and op_of(op) in names:
            return op
    return None


def called_matching(record: dict | None, fragment: str) -> str | None:
    """An op name in ``record`` that contains ``fragment`` (e.g. ``"scaled_dot_product"``): a torch function as
    written if there is one, else an aten op."""
    ops = sorted((record or {}).get("ops", ()), key=lambda op: not op.startswith("torch."))
    return next((op for op in ops if fragment in op), None)


def marked(record: dict | None, mark: str) -> str | None:
    """The first mark in ``record`` that starts with ``mark`` (``"is_causal=True"``, ``"constant:"``)."""
    return next((m for m in (record or {}).get("marks", ()) if m.startswith(mark)), None)
