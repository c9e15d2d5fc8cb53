"""Decoding one token at a time with a KV cache: past keys and values are kept, not recomputed.

When a model generates text, token ``t`` needs the keys and values of tokens ``0 … t``. They do not change when
a later token arrives (causal attention: a token never looks ahead), so each layer keeps them in a cache and
computes queries, keys and values only for the new token. Its attention then has ``q_len`` new queries against
``k_len`` cached keys, ``q_len < k_len``, and the causal mask must be aligned to the *bottom right*: the newest
query sits at the last position and sees every key. ``F.scaled_dot_product_attention(..., is_causal=True)``
aligns it to the top left (query ``i`` sees keys ``0 … i``), which for one query means key 0 only.

Shape names: B batch, nh heads, hs head size, q_len new tokens, k_len tokens so far (cache included).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _checks
from .multihead import MultiHeadAttention


def causal_mask_bottom_right(q_len: int, k_len: int, device=None) -> torch.Tensor:
    """Bool ``(q_len, k_len)``, True = hidden: the ``q_len`` newest queries against all ``k_len`` keys.

    Query ``i`` sits at position ``k_len - q_len + i`` and hides the keys after it. With ``q_len == k_len`` this is
    :func:`~llm_lab.causal_mask`; with one query nothing is hidden.
    """
    q_len, k_len = _checks.positive_int("q_len", q_len), _checks.positive_int("k_len", k_len)
    if q_len > k_len:
        raise ValueError(f"q_len={q_len} new queries need at least as many keys, got k_len={k_len}")
    ones = torch.ones(q_len, k_len, dtype=torch.bool, device=device)
    return ones.triu(diagonal=k_len - q_len + 1)


class KVCache:
    """The keys and values of every token seen so far by one attention layer, each ``(B, nh, k_len, hs)``."""

    def __init__(self):
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, keys: torch.Tensor, values: torch.Tensor):
        """Add the new tokens' keys and values, ``(B, nh, q_len, hs)``; return all of them so far."""
        _checks.tensor("keys", keys)
        _checks.tensor("values", values)
        if keys.dim() != 4 or keys.shape != values.shape:
            raise ValueError(
                f"keys and values must both be (batch, num_heads, num_tokens, head_dim), got {tuple(keys.shape)} "
                f"and {tuple(values.shape)}"
            )
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            if keys.shape[:2] != self.keys.shape[:2] or keys.shape[-1] != self.keys.shape[-1]:
                raise ValueError(f"new keys {tuple(keys.shape)} do not fit the cache {tuple(self.keys.shape)}")
            self.keys = torch.cat([self.keys, keys], dim=-2)  # (B, nh, k_len, hs)
            self.values = torch.cat([self.values, values], dim=-2)
        return self.keys, self.values

    def nbytes(self) -> int:
        """Bytes held: keys and values together."""
        return 0 if self.keys is None else self.keys.nbytes + self.values.nbytes


def cached_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Causal attention of the newest queries ``(B, nh, q_len, hs)`` on all keys and values ``(B, nh, k_len, hs)``.

    The mask is aligned bottom right (:func:`causal_mask_bottom_right`); SDPA's bool mask means True = attend.
    """
    hidden = causal_mask_bottom_right(queries.shape[-2], keys.shape[-2], device=queries.device)
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=~hidden)  # (B, nh, q_len, hs)


def decode_step(mha: MultiHeadAttention, x_new: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """``mha`` on the new tokens ``x_new`` ``(B, q_len, d_in)``, attending to them and to everything in ``cache``.

    Appends the new keys and values to ``cache`` and returns ``(B, q_len, d_out)``: the rows that ``mha`` would give
    these tokens on the whole sequence at once. Inference only: no dropout.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be an llm_lab.MultiHeadAttention, got {type(mha).__name__}")
    b, q_len = _checks.batch_input(x_new, mha.d_in, None, mha.W_query.weight)
    if len(cache) + q_len > mha.context_length:
        raise ValueError(
            f"{len(cache)} cached + {q_len} new tokens exceed context_length={mha.context_length}; build the layer "
            "with a longer context_length or start a new cache"
        )
    queries = mha._split_heads(mha.W_query(x_new), b, q_len)  # (B, nh, q_len, hs)
    keys, values = cache.append(
        mha._split_heads(mha.W_key(x_new), b, q_len), mha._split_heads(mha.W_value(x_new), b, q_len)
    )  # (B, nh, k_len, hs)
    return mha._merge_heads(cached_attention(queries, keys, values), b, q_len)  # (B, q_len, d_out)


def cache_bytes_per_token(num_layers: int, num_heads: int, head_dim: int, dtype=torch.float32) -> int:
    """Bytes one token adds to the cache of a whole model: a key and a value per head, in every layer."""
    for name, value in (("num_layers", num_layers), ("num_heads", num_heads), ("head_dim", head_dim)):
        _checks.positive_int(name, value)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float16, got {dtype!r}")
    return 2 * num_layers * num_heads * head_dim * torch.empty((), dtype=dtype).element_size()
