"""Multi-head causal attention: stacked heads, the book's efficient version, and a fused fast path.

Shape names: B batch, T tokens, nh heads, hs head size (``d_out // num_heads``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import _checks
from .attention import CausalAttention
from .masks import causal_mask


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent :class:`CausalAttention` heads whose outputs are concatenated.

    Each head maps ``d_in -> d_out``, so the output width is ``d_out * num_heads``. There is no output
    projection (as in the book): the heads' outputs are only placed side by side.

    ``forward(x)``: ``(B, T, d_in) -> (B, T, num_heads * d_out)``; with ``return_attn_weights=True`` also
    the weights ``(B, nh, T, T)``.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        )

    def forward(self, x: torch.Tensor, return_attn_weights: bool = False):
        _checks.flag("return_attn_weights", return_attn_weights)
        outputs = [head(x, return_attn_weights=True) for head in self.heads]
        context_vec = torch.cat([out for out, _ in outputs], dim=-1)  # (B, T, nh * d_out)
        if return_attn_weights:
            return context_vec, torch.stack([w for _, w in outputs], dim=1)  # (B, nh, T, T)
        return context_vec


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention with one projection per role, split into heads by view/transpose.

    Parameters ``W_query``, ``W_key``, ``W_value`` (``d_in -> d_out``, bias if ``qkv_bias``) and
    ``out_proj`` (``d_out -> d_out``, with bias); buffer ``mask`` (bool ``(context_length,)*2``).

    ``forward(x)``: ``(B, T, d_in) -> (B, T, d_out)``; with ``return_attn_weights=True`` also the
    weights ``(B, nh, T, T)`` (after dropout).
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_in = _checks.positive_int("d_in", d_in)
        self.d_out = _checks.positive_int("d_out", d_out)
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        self.context_length = _checks.positive_int("context_length", context_length)
        if d_out % num_heads != 0:
            raise ValueError(
                f"d_out must be divisible by num_heads, got d_out={d_out} and num_heads={num_heads} "
                f"({d_out} % {num_heads} = {d_out % num_heads}); each head gets d_out // num_heads features"
            )
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=_checks.flag("qkv_bias", qkv_bias))
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(_checks.dropout_rate(dropout))
        self.register_buffer("mask", causal_mask(context_length))

    def _split_heads(self, t: torch.Tensor, b: int, num_tokens: int) -> torch.Tensor:
        # (B, T, d_out) -> (B, T, nh, hs) -> (B, nh, T, hs): heads become a batch dimension
        return t.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

    def _project(self, x: torch.Tensor):
        b, num_tokens = _checks.batch_input(x, self.d_in, self.context_length, self.W_query.weight)
        q = self._split_heads(self.W_query(x), b, num_tokens)
        k = self._split_heads(self.W_key(x), b, num_tokens)
        v = self._split_heads(self.W_value(x), b, num_tokens)
        return q, k, v, b, num_tokens  # q, k, v: (B, nh, T, hs)

    def _merge_heads(self, context_vec: torch.Tensor, b: int, num_tokens: int) -> torch.Tensor:
        # (B, nh, T, hs) -> (B, T, nh, hs) -> (B, T, d_out); contiguous because transpose only relabels strides
        context_vec = context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)

    def forward(self, x: torch.Tensor, return_attn_weights: bool = False):
        _checks.flag("return_attn_weights", return_attn_weights)
        q, k, v, b, num_tokens = self._project(x)
        attn_scores = q @ k.transpose(2, 3)  # (B, nh, T, T)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        out = self._merge_heads(attn_weights @ v, b, num_tokens)  # (B, T, d_out)
        return (out, attn_weights) if return_attn_weights else out


class FusedMultiHeadAttention(MultiHeadAttention):
    """:class:`MultiHeadAttention` computed by ``F.scaled_dot_product_attention(is_causal=True)``.

    Same constructor, parameters, buffer and ``state_dict`` keys, so weights move between the two
    unchanged (``fused.load_state_dict(mha.state_dict())`` and back). The fused kernel never materializes
    the ``(T, T)`` weights; ``return_attn_weights=True`` therefore falls back to the explicit path.
    In training its dropout runs inside the fused kernel, which need not draw the same random mask as
    :class:`MultiHeadAttention` for the same seed (CUDA kernels do not); eval-mode outputs are equal.
    """

    def forward(self, x: torch.Tensor, return_attn_weights: bool = False):
        if _checks.flag("return_attn_weights", return_attn_weights):
            return super().forward(x, return_attn_weights=True)
        q, k, v, b, num_tokens = self._project(x)
        p = self.dropout.p if self.training else 0.0
        context_vec = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, nh, T, hs)
        return self._merge_heads(context_vec, b, num_tokens)
