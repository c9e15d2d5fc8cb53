"""Single-head attention: the book's ``SelfAttention`` and ``CausalAttention``."""

from __future__ import annotations

import torch
from torch import nn

from . import _checks
from .masks import causal_mask


class SelfAttention(nn.Module):
    """Scaled dot-product self-attention with trainable projections, no mask.

    ``forward(x)``: ``x`` is ``(T, d_in)`` or ``(B, T, d_in)``; returns the context vectors
    ``(..., T, d_out)``, and with ``return_attn_weights=True`` also the weights ``(..., T, T)``.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.d_in = _checks.positive_int("d_in", d_in)
        self.d_out = _checks.positive_int("d_out", d_out)
        self.W_query = nn.Linear(d_in, d_out, bias=_checks.flag("qkv_bias", qkv_bias))
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor, return_attn_weights: bool = False):
        _checks.tensor("x", x)
        _checks.flag("return_attn_weights", return_attn_weights)
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_in:
            raise ValueError(
                f"expected input of shape (num_tokens, d_in={self.d_in}) or (batch, num_tokens, d_in={self.d_in}), "
                f"got {tuple(x.shape)}"
            )
        _checks.matches_weights(x, self.W_query.weight)
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (..., T, d_out)
        attn_scores = queries @ keys.transpose(-2, -1)  # (..., T, T)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values  # (..., T, d_out)
        return (context_vec, attn_weights) if return_attn_weights else context_vec


class CausalAttention(nn.Module):
    """One causal attention head with dropout on the attention weights.

    ``forward(x)``: ``x`` is ``(B, T, d_in)`` with ``T <= context_length``; returns ``(B, T, d_out)``,
    and with ``return_attn_weights=True`` also the weights ``(B, T, T)`` after dropout.

    The mask is a buffer: it follows ``.to(device)`` and is saved in ``state_dict`` under ``"mask"``.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        self.d_in = _checks.positive_int("d_in", d_in)
        self.d_out = _checks.positive_int("d_out", d_out)
        self.context_length = _checks.positive_int("context_length", context_length)
        self.W_query = nn.Linear(d_in, d_out, bias=_checks.flag("qkv_bias", qkv_bias))
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(_checks.dropout_rate(dropout))
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: torch.Tensor, return_attn_weights: bool = False):
        _, num_tokens = _checks.batch_input(x, self.d_in, self.context_length, self.W_query.weight)
        _checks.flag("return_attn_weights", return_attn_weights)
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (B, T, d_out)
        attn_scores = queries @ keys.transpose(1, 2)  # (B, T, T)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values  # (B, T, d_out)
        return (context_vec, attn_weights) if return_attn_weights else context_vec
