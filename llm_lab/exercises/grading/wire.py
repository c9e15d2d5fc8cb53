"""The wire format between the grader and a learner's kernel: values as JSON, tensors as raw bytes.

``encode`` turns what the kernel sends (a request's arguments, a reply's outputs) into JSON-able data: tensors as
dtype, shape and base64 bytes, tuples and dicts tagged, anything else as the name of its type. ``parse`` reads a
reply's text and ``decode`` rebuilds the values, each within a fixed budget (sizes are checked from the shapes
before anything is built) and without running code: no pickle, nothing in a reply can do more than be data.
This module imports nothing of llm_lab: both sides (``kernel`` in the learner's kernel, ``proxies`` in the grader)
import it, and it imports neither.
"""

from __future__ import annotations

import base64
import json
import math
import re

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
    # exact types only: a subclass's own methods (``__abs__``, ``items``, a tensor's ``detach``) would run here,
    # after the check and outside its watch (the kernel's ``answering.plain`` converts them inside it)
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value if kind is not int or abs(value) < 2**62 else {"__float__": str(float(value))}
    if kind is float:
        return value if math.isfinite(value) else {"__float__": str(value)}
    if kind in (torch.Tensor, nn.Parameter):
        return _encode_tensor(value)
    if kind in (list, tuple):
        items = [encode(v, _depth + 1, count) for v in value[:MAX_ITEMS]]
        return items if kind is list else {"__tuple__": items}
    if kind is dict and all(type(k) is str for k in value):
        return {"__dict__": [[k, encode(v, _depth + 1, count)] for k, v in list(value.items())[:MAX_ITEMS]]}
    if kind is nn.Embedding:
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


def clean_name(text: str) -> str:
    """``text`` cut to 60 characters of letters, digits, ``_`` and ``.``: a name the kernel sent, safe to show."""
    return _NAME.sub("", str(text))[:60]


def type_name(obj) -> str:
    return clean_name(type(obj).__name__) or "object"


_OPAQUE: dict[str, type] = {}


class Opaque:
    """A value the kernel returned that is not data (a numpy array, a generator, ...): only its type's name
    came back, so checkers name it ("returned a ndarray") and it compares equal to nothing."""


def opaque(name: str) -> Opaque:
    name = clean_name(name.replace("[", "_").replace("]", "")) or "object"
    if name not in _OPAQUE:
        _OPAQUE[name] = type(name, (Opaque,), {})
    return _OPAQUE[name]()
