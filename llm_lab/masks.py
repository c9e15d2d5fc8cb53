"""The causal mask and the two ways to apply it.

Shapes: ``T`` is the number of tokens. Score and weight tensors are ``(..., T, T)``: row ``i`` is the
query at position ``i``, column ``j`` the key at position ``j``.
"""

from __future__ import annotations

import torch

from . import _checks


def causal_mask(num_tokens: int, device=None) -> torch.Tensor:
    """Bool ``(T, T)`` mask, True strictly above the diagonal: the future positions a query must not see."""
    num_tokens = _checks.positive_int("num_tokens", num_tokens)
    try:
        device = torch.device(device) if device is not None else None
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must be a torch.device or a name like 'cpu' or 'cuda:0', got {device!r}") from err
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1)


def mask_and_renormalize(attn_weights: torch.Tensor) -> torch.Tensor:
    """The manual way: zero the future in already-softmaxed weights, then divide each row by its sum.

    ``attn_weights``: ``(..., T, T)``, rows summing to 1. Returns the same shape, lower-triangular,
    rows summing to 1 again. Equal to :func:`causal_softmax` on the scores the weights came from.

    The weakness of this route: when a future score dominates a row, the visible weights can underflow
    to exactly 0 in the first softmax, and 0/0 has no answer. That raises a ValueError naming the rows
    (the −inf route, :func:`causal_softmax`, has no such problem).
    """
    num_tokens = _checks.square_scores("attn_weights", attn_weights)
    keep = ~causal_mask(num_tokens, device=attn_weights.device)
    masked = attn_weights * keep  # (..., T, T)
    row_sums = masked.sum(dim=-1, keepdim=True)  # (..., T, 1)
    if (row_sums == 0).any():
        rows = (row_sums.squeeze(-1) == 0).nonzero().tolist()[:5]
        raise ValueError(
            f"rows {rows} (indices, first 5) have no visible weight left to renormalize: their past weights "
            "underflowed to 0 (or were 0 to begin with); mask the scores with -inf before the softmax "
            "(causal_softmax) instead"
        )
    return masked / row_sums


def causal_softmax(attn_scores: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The −inf way: hide the future with ``-inf`` before the softmax, so no renormalizing is needed.

    ``attn_scores``: ``(..., T, T)``, already scaled (e.g. by ``1/sqrt(d_k)``).
    ``key_padding_mask``: optional bool tensor, True where a key is padding and must be hidden too. Its
    last dimension is the keys ``T``; the dimensions before it line up with the dimensions of
    ``attn_scores`` before ``(T, T)``: ``(T,)`` for every row, ``(B, T)`` for ``(B, T, T)`` scores,
    ``(B, 1, T)`` for ``(B, nh, T, T)`` scores (``mask[:, None, :]``).

    A row whose every position is hidden (possible with a padding mask) has no valid distribution:
    softmax over all ``-inf`` is NaN. Such rows are returned as all zeros, so they contribute nothing
    downstream instead of spreading NaN through the whole batch.
    """
    num_tokens = _checks.square_scores("attn_scores", attn_scores)
    hidden = causal_mask(num_tokens, device=attn_scores.device)
    if key_padding_mask is not None:
        _checks.tensor("key_padding_mask", key_padding_mask)
        if key_padding_mask.dtype != torch.bool:
            raise TypeError(f"key_padding_mask must be a bool tensor (True = hide), got dtype {key_padding_mask.dtype}")
        _padding_mask_fits(key_padding_mask, attn_scores)
        hidden = hidden | key_padding_mask.unsqueeze(-2)  # (..., T, T)
    weights = torch.softmax(attn_scores.masked_fill(hidden, float("-inf")), dim=-1)
    all_hidden = hidden.all(dim=-1, keepdim=True)  # (..., T, 1)
    return weights.masked_fill(all_hidden, 0.0)


def _padding_mask_fits(mask: torch.Tensor, scores: torch.Tensor) -> None:
    num_tokens, lead = scores.shape[-1], tuple(scores.shape[:-2])
    shapes = f"key_padding_mask shape {tuple(mask.shape)}, attn_scores shape {tuple(scores.shape)}"
    if mask.dim() == 0 or mask.shape[-1] != num_tokens:
        raise ValueError(f"key_padding_mask needs a last dimension of {num_tokens} keys ({shapes})")
    if mask.dim() > 1 and mask.dim() != scores.dim() - 1:
        hint = " for (B, nh, T, T) scores pass mask[:, None, :] of shape (B, 1, T);" if scores.dim() == 4 else ""
        raise ValueError(
            f"key_padding_mask must be (T,) or have one dimension per leading dimension of attn_scores plus the "
            f"keys, i.e. {scores.dim() - 1} dimensions;{hint} got {shapes}"
        )
    try:
        fits = torch.broadcast_shapes(tuple(mask.shape[:-1]), lead) == lead
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"key_padding_mask's leading dimensions must broadcast to {lead} ({shapes})")
    if mask.device != scores.device:
        raise ValueError(f"key_padding_mask is on {mask.device} but attn_scores on {scores.device}")
