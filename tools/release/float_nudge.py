"""Nudge float32 results the way another device or library would: a robustness check for stored outputs.

Loaded into a notebook kernel as an IPython startup file (``tools/release/standalone.py --perturb``), it wraps every
float32 matmul / linear / einsum / softmax / sum / mean / scaled-dot-product-attention result in a torch
function mode that multiplies each element by ``1 ± 1e-6``. The sign comes from a hash of the element's own
bits, so equal inputs still give equal outputs (as on a real device, where the same kernel on the same
numbers gives the same answer); whole numbers are left alone (a sum of small integers is exact in any order),
but every summation-order-sensitive value moves in its last digits. A stored
output that changes under this nudge depends on float summation order and would differ on a GPU or another
torch build: it needs rounding or a tolerance that fits the values it compares.

``sign=-1`` flips every hashed sign. A value that sits on a rounding boundary (0.2375 printed with three
decimals, 0.23750001 in float32) keeps its printout when nudged up and loses it when nudged down, so one
direction alone finds only about half of them; a run with each sign (``--perturb both``) moves every value
both ways.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

RELATIVE = 1e-6
_GOLDEN = -1640531535  # 0x9E3779B1 as int32: a multiplicative hash spreads nearby bit patterns

NUDGED = {
    torch.matmul,
    torch.Tensor.matmul,
    torch.Tensor.__matmul__,
    torch.Tensor.__rmatmul__,
    torch.mm,
    torch.Tensor.mm,
    torch.bmm,
    torch.Tensor.bmm,
    torch.addmm,
    torch.baddbmm,
    torch.einsum,
    F.linear,
    torch.softmax,
    torch.Tensor.softmax,
    F.softmax,
    F.log_softmax,
    torch.log_softmax,
    torch.sum,
    torch.Tensor.sum,
    torch.mean,
    torch.Tensor.mean,
    F.scaled_dot_product_attention,
}


def nudge(t, sign: int = 1):
    """``t * (1 ± RELATIVE)`` elementwise for a float32 tensor, the sign hashed from each value's bits.

    ``sign=-1`` flips the hashed sign of every element (the opposite direction for every value).
    """
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.device.type == "meta":
        return t
    bits = t.detach().contiguous().view(torch.int32)
    hashed = (((bits * _GOLDEN) >> 16) & 1).to(torch.float32) * 2 - 1
    # whole numbers stay: a sum of small integers is exact in any order on any device
    hashed = torch.where(t.detach() == t.detach().round(), 0.0, hashed * sign)
    return t * (1 + RELATIVE * hashed)


def _owns_storage(out, args, kwargs) -> bool:
    """True when ``out`` is a fresh result: no argument shares its storage (a view of one would)."""
    ptr = out.untyped_storage().data_ptr()
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    return all(a.untyped_storage().data_ptr() != ptr for a in tensors)


def nudge_result(out, args=(), kwargs=None, sign: int = 1):
    """:func:`nudge` a function's result in its own storage where it owns one, otherwise as a copy.

    In place (through ``.data``, so autograd neither records the change nor saves a factor for backward), the
    nudged run holds the same tensors as a plain one: counts of what autograd saves (07's memory lines) stay
    exact. A result sharing an argument's storage (a view of it) is nudged as a copy, leaving the argument alone.
    """
    if not isinstance(out, torch.Tensor) or out.dtype != torch.float32 or out.device.type == "meta":
        return out
    if not _owns_storage(out, args, kwargs or {}):
        return nudge(out, sign)
    with torch.no_grad():
        out.data.copy_(nudge(out.detach(), sign))
    return out


class FloatNudge(TorchFunctionMode):
    """Nudge the result of every function in :data:`NUDGED`; ``sign`` 1 (the hashed sign) or -1 (flipped)."""

    def __init__(self, sign: int = 1):
        super().__init__()
        if sign not in (1, -1):
            raise ValueError(f"sign must be 1 or -1, got {sign!r}")
        self.sign = sign

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in NUDGED and not (kwargs or {}).get("out"):
            return nudge_result(out, args, kwargs, self.sign)
        return out


def install(sign: int = 1) -> FloatNudge:
    """Enter the mode for the rest of the process (the kernel) and return it."""
    mode = FloatNudge(sign)
    mode.__enter__()
    return mode
