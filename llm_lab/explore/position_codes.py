"""The position schemes of notebook 09 by formula: the sinusoidal table, RoPE (rotate-half, and the interleaved
layout), ALiBi's bias and the sliding-window mask. :mod:`llm_lab.explore.positions` puts them into 08's model and
re-exports every name here.

Shape names: T tokens, hs head size, nh heads, d model width.

**The RoPE layout used here is rotate-half** (GPT-NeoX, Llama in Hugging Face ``transformers``): feature ``k`` of a
head pairs with feature ``k + hs/2``, and pair ``k`` turns at frequency ``base ** (-2k / hs)``. The *interleaved*
layout (RoFormer, GPT-J, notebook 07's cell) pairs features ``2k`` and ``2k + 1``; the two agree up to a permutation
of the features (:func:`interleaved_order`).
"""

from __future__ import annotations

import torch

from .. import _checks

CONVENTIONS = ("half", "interleaved")


def sinusoidal_table(num_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(num_positions, d_model)`` float32: ``PE[p, 2k] = sin(p w_k)``, ``PE[p, 2k + 1] = cos(p w_k)`` with
    ``w_k = base ** (-2k / d_model)`` (Vaswani et al. 2017). ``d_model`` must be even."""
    _checks.positive_int("num_positions", num_positions)
    _checks.positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model={d_model} must be even: the table pairs a sine and a cosine per frequency")
    w = rope_frequencies(d_model, base)  # (d / 2,)
    angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * w[None, :]  # (P, d / 2)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1).float()  # (P, d): sin, cos, sin, cos, ...


def rope_frequencies(head_size: int, base: float = 10000.0) -> torch.Tensor:
    """``(head_size / 2,)`` float64: pair ``k`` turns by ``base ** (-2k / head_size)`` radians per position, the first
    pair fastest (1 rad per token), the last slowest."""
    _checks.positive_int("head_size", head_size)
    if head_size % 2:
        raise ValueError(f"head_size={head_size} must be even: RoPE rotates features in pairs")
    if not (isinstance(base, (int, float)) and not isinstance(base, bool) and base > 1):
        raise ValueError(f"base={base!r} must be a number above 1 (10000 in most models)")
    return float(base) ** (-torch.arange(0, head_size, 2, dtype=torch.float64) / head_size)


def rope_angles(positions: torch.Tensor, head_size: int, base: float = 10000.0) -> torch.Tensor:
    """``(T,)`` positions -> ``(T, head_size / 2)`` float64: the angle of each pair at each position,
    ``p * base**(-2k/hs)`` (float64, so that far positions keep their angles' digits)."""
    return positions.to(torch.float64)[:, None] * rope_frequencies(head_size, base)[None, :]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``[x1, x2] -> [-x2, x1]`` on the last dimension (halves ``x1``, ``x2``): a quarter turn of every pair
    ``(k, k + hs/2)``."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(
    x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0, convention: str = "half"
) -> torch.Tensor:
    """Rotate every feature pair of ``x`` ``(..., T, hs)`` by its position's angle (:func:`rope_angles`).

    ``convention="half"`` (the one this module uses): pair ``k`` is features ``(k, k + hs/2)``,
    ``x * cos + rotate_half(x) * sin``. ``"interleaved"``: pair ``k`` is features ``(2k, 2k + 1)``.
    ``positions`` ``(T,)``: the tokens' positions, ``0 .. T - 1`` unless given."""
    _checks.tensor("x", x)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention={convention!r} must be one of {CONVENTIONS}")
    if x.dim() < 2:
        raise ValueError(f"x must be (..., T, hs), got shape {tuple(x.shape)}")
    t, hs = x.shape[-2], x.shape[-1]
    if positions is None:
        positions = torch.arange(t, device=x.device)
    if positions.shape != (t,):
        raise ValueError(f"positions must be ({t},), one per token of x, got shape {tuple(positions.shape)}")
    angles = rope_angles(positions.cpu(), hs, base).to(device=x.device)  # (T, hs / 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if convention == "half":
        cos, sin = torch.cat([cos, cos], dim=-1), torch.cat([sin, sin], dim=-1)  # (T, hs): pair k at k and k + hs/2
        return x * cos + rotate_half(x) * sin
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, hs / 2) each
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


def interleaved_order(head_size: int) -> torch.Tensor:
    """The permutation ``P`` ``(head_size,)`` that turns the interleaved layout into the rotate-half one:
    ``apply_rope(x, convention="interleaved")[..., P] == apply_rope(x[..., P], convention="half")``
    (features ``0, 2, 4, ...`` first, then ``1, 3, 5, ...``)."""
    _checks.positive_int("head_size", head_size)
    if head_size % 2:
        raise ValueError(f"head_size={head_size} must be even: RoPE rotates features in pairs")
    return torch.cat([torch.arange(0, head_size, 2), torch.arange(1, head_size, 2)])


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """``(num_heads,)``: ALiBi's slopes, the geometric sequence ``2 ** (-8 h / nh)``, ``h = 1 .. nh``."""
    _checks.positive_int("num_heads", num_heads)
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, dtype=torch.float32) / num_heads)


def alibi_bias(num_heads: int, num_tokens: int) -> torch.Tensor:
    """``(nh, T, T)``: ``-m_h (i - j)`` on and below the diagonal, ``-inf`` above it (the causal mask folded in)."""
    _checks.positive_int("num_tokens", num_tokens)
    i = torch.arange(num_tokens)
    back = (i[:, None] - i[None, :]).float()  # (T, T): i - j
    bias = -alibi_slopes(num_heads)[:, None, None] * back  # (nh, T, T)
    return bias.masked_fill(back < 0, float("-inf"))


def window_mask(num_tokens: int, window: int | None = None) -> torch.Tensor:
    """bool ``(T, T)``, True where query ``i`` may read key ``j``: ``j <= i`` and, with a ``window``,
    ``i - j < window`` (the query itself and the ``window - 1`` keys before it, as in notebooks 00 and 07)."""
    _checks.positive_int("num_tokens", num_tokens)
    i = torch.arange(num_tokens)
    back = i[:, None] - i[None, :]
    seen = back >= 0
    if window is not None:
        seen &= back < _checks.positive_int("window", window)
    return seen
