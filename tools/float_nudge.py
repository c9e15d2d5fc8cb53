"""Nudge float32 results the way another device or library would: a robustness check for stored outputs.

Loaded into a notebook kernel as an IPython startup file (``tools/standalone.py --perturb``), it wraps every
float32 matmul / linear / einsum / softmax / sum / mean / scaled-dot-product-attention result in a torch
function mode that multiplies each element by ``1 ± 1e-6``. The sign comes from a hash of the element's own
bits, so equal inputs still give equal outputs (as on a real device, where the same kernel on the same
numbers gives the same answer); whole numbers are left alone (a sum of small integers is exact in any order),
but every summation-order-sensitive value moves in its last digits. A stored
output that changes under this nudge depends on float summation order and would differ on a GPU or another
torch build: it needs rounding or a tolerance that fits the values it compares.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

RELATIVE = 1e-6
_GOLDEN = -1640531535  # 0x9E3779B1 as int32: a multiplicative hash spreads nearby bit patterns

NUDGED = {
    torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__,
    torch.mm, torch.Tensor.mm, torch.bmm, torch.Tensor.bmm, torch.addmm, torch.baddbmm, torch.einsum,
    F.linear, torch.softmax, torch.Tensor.softmax, F.softmax, F.log_softmax, torch.log_softmax,
    torch.sum, torch.Tensor.sum, torch.mean, torch.Tensor.mean, F.scaled_dot_product_attention,
}


def nudge(t):
    """``t * (1 ± RELATIVE)`` elementwise for a float32 tensor, the sign hashed from each value's bits."""
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.device.type == "meta":
        return t
    bits = t.detach().contiguous().view(torch.int32)
    sign = (((bits * _GOLDEN) >> 16) & 1).to(torch.float32) * 2 - 1
    # whole numbers stay: a sum of small integers is exact in any order on any device
    sign = torch.where(t.detach() == t.detach().round(), 0.0, sign)
    return t * (1 + RELATIVE * sign)


class FloatNudge(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in NUDGED and not (kwargs or {}).get("out"):
            return nudge(out)
        return out


def install() -> FloatNudge:
    """Enter the mode for the rest of the process (the kernel) and return it."""
    mode = FloatNudge()
    mode.__enter__()
    return mode

