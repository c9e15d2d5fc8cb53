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
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1)


def mask_and_renormalize(attn_weights: torch.Tensor) -> torch.Tensor:
    """The manual way: zero the future in already-softmaxed weights, then divide each row by its sum.

    ``attn_weights``: ``(..., T, T)``, rows summing to 1. Returns the same shape, lower-triangular,
    rows summing to 1 again. Equal to :func:`causal_softmax` on the scores the weights came from.
    """
    num_tokens = _checks.square_scores("attn_weights", attn_weights)
    keep = ~causal_mask(num_tokens, device=attn_weights.device)
    masked = attn_weights * keep  # (..., T, T)
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_softmax(attn_scores: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The −inf way: hide the future with ``-inf`` before the softmax, so no renormalizing is needed.

    ``attn_scores``: ``(..., T, T)``, already scaled (e.g. by ``1/sqrt(d_k)``).
    ``key_padding_mask``: optional bool tensor broadcastable to ``(..., 1, T)`` (e.g. ``(B, 1, 1, T)`` or
    ``(T,)``), True where a key is padding and must be hidden too.

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
        if key_padding_mask.shape[-1] != num_tokens:
            raise ValueError(
                f"key_padding_mask last dimension is {key_padding_mask.shape[-1]} but there are {num_tokens} keys "
                f"(attn_scores shape {tuple(attn_scores.shape)})"
            )
        hidden = hidden | key_padding_mask.unsqueeze(-2)  # (..., T, T)
    weights = torch.softmax(attn_scores.masked_fill(hidden, float("-inf")), dim=-1)
    all_hidden = hidden.all(dim=-1, keepdim=True)  # (..., T, 1)
    return weights.masked_fill(all_hidden, 0.0)
