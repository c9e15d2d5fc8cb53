"""Nine ways to write one causal multi-head attention layer, for notebook 07 and the benchmark.

Every contestant is built by the same call, ``build(d_in, d_out, context_length, num_heads)``, and takes its
weights from a reference :class:`~llm_lab.MultiHeadAttention` with ``copy_from(ref)`` (``W_query``,
``W_key``, ``W_value`` without bias, ``out_proj`` with bias), so all of them compute the same function.

Shape names: B batch, T tokens, nh heads, hs head size (``d_out // num_heads``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from .. import _checks
from ..masks import causal_mask
from ..multihead import FusedMultiHeadAttention, MultiHeadAttention, MultiHeadAttentionWrapper


class _Heads(nn.Module):
    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        self.d_in = _checks.positive_int("d_in", d_in)
        self.d_out = _checks.positive_int("d_out", d_out)
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} must be divisible by num_heads={num_heads}")
        self.head_dim = d_out // num_heads


class SDPAAttention(_Heads):
    """Three ``Linear``, the head split, one ``F.scaled_dot_product_attention(is_causal=True)``, ``out_proj``.

    ``backend=SDPBackend.MATH`` forces PyTorch's reference backend, which materializes the weights.
    """

    def __init__(self, d_in, d_out, context_length, num_heads, backend=None):
        super().__init__(d_in, d_out, num_heads)
        self.backend = backend
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)

    def copy_from(self, ref):
        self.load_state_dict({k: v for k, v in ref.state_dict().items() if k != "mask"})  # SDPA builds its mask
        return self

    def forward(self, x):
        b, num_tokens, _ = x.shape
        heads = (b, num_tokens, self.num_heads, self.head_dim)
        queries = self.W_query(x).view(heads).transpose(1, 2)  # (B, nh, T, hs)
        keys = self.W_key(x).view(heads).transpose(1, 2)
        values = self.W_value(x).view(heads).transpose(1, 2)
        if self.backend is None:
            context_vec = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        else:
            with sdpa_kernel(self.backend):
                context_vec = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        return self.out_proj(context_vec.transpose(1, 2).reshape(b, num_tokens, self.d_out))  # (B, T, d_out)


class CombinedQKVAttention(_Heads):
    """One ``Linear(d_in, 3 * d_out)`` for queries, keys and values; explicit masked softmax."""

    def __init__(self, d_in, d_out, context_length, num_heads):
        super().__init__(d_in, d_out, num_heads)
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer("mask", causal_mask(context_length))

    def copy_from(self, ref):
        with torch.no_grad():
            self.qkv.weight.copy_(torch.cat([ref.W_query.weight, ref.W_key.weight, ref.W_value.weight]))
            self.out_proj.load_state_dict(ref.out_proj.state_dict())
        return self

    def forward(self, x):
        b, num_tokens, _ = x.shape
        qkv = self.qkv(x).view(b, num_tokens, 3, self.num_heads, self.head_dim)  # (B, T, 3, nh, hs)
        queries, keys, values = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, nh, T, hs)
        attn_scores = queries @ keys.transpose(2, 3)  # (B, nh, T, T)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        context_vec = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


class EinsumAttention(_Heads):
    """Projections and both attention products as ``einsum``: the heads never need a ``transpose``."""

    def __init__(self, d_in, d_out, context_length, num_heads):
        super().__init__(d_in, d_out, num_heads)
        self.W_query = nn.Parameter(torch.empty(d_out, d_in))
        self.W_key = nn.Parameter(torch.empty(d_out, d_in))
        self.W_value = nn.Parameter(torch.empty(d_out, d_in))
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer("mask", causal_mask(context_length))

    def copy_from(self, ref):
        with torch.no_grad():
            for name in ("W_query", "W_key", "W_value"):
                getattr(self, name).copy_(getattr(ref, name).weight)
            self.out_proj.load_state_dict(ref.out_proj.state_dict())
        return self

    def forward(self, x):
        b, num_tokens, _ = x.shape
        heads = (b, num_tokens, self.num_heads, self.head_dim)
        queries = torch.einsum("btd,od->bto", x, self.W_query).view(heads)  # (B, T, nh, hs)
        keys = torch.einsum("btd,od->bto", x, self.W_key).view(heads)
        values = torch.einsum("btd,od->bto", x, self.W_value).view(heads)
        attn_scores = torch.einsum("bqhe,bkhe->bhqk", queries, keys)  # (B, nh, T, T)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        context_vec = torch.einsum("bhqk,bkhe->bqhe", attn_weights, values)  # (B, T, nh, hs)
        return self.out_proj(context_vec.reshape(b, num_tokens, self.d_out))


class TorchMHA(nn.Module):
    """``torch.nn.MultiheadAttention`` with a causal mask; ``in_proj_weight = cat(Wq, Wk, Wv)``, zero in-bias.

    Its bool ``attn_mask`` means True = hidden, like :func:`~llm_lab.causal_mask` (the opposite of
    ``F.scaled_dot_product_attention``'s bool mask).
    """

    def __init__(self, d_in, d_out, context_length, num_heads, need_weights=False):
        super().__init__()
        if d_in != d_out:
            raise ValueError(f"nn.MultiheadAttention maps embed_dim -> embed_dim; got d_in={d_in}, d_out={d_out}")
        self.need_weights = _checks.flag("need_weights", need_weights)
        self.mha = nn.MultiheadAttention(d_out, num_heads, bias=True, batch_first=True)
        self.register_buffer("mask", causal_mask(context_length))

    @property
    def out_proj(self):
        return self.mha.out_proj

    def copy_from(self, ref):
        with torch.no_grad():
            self.mha.in_proj_weight.copy_(torch.cat([ref.W_query.weight, ref.W_key.weight, ref.W_value.weight]))
            self.mha.in_proj_bias.zero_()
            self.mha.out_proj.load_state_dict(ref.out_proj.state_dict())
        return self

    def forward(self, x):
        num_tokens = x.shape[1]
        mask = self.mask[:num_tokens, :num_tokens]
        out, _ = self.mha(x, x, x, attn_mask=mask, is_causal=True, need_weights=self.need_weights)
        return out


def copy_heads(wrapper: MultiHeadAttentionWrapper, ref: MultiHeadAttention) -> MultiHeadAttentionWrapper:
    """Give head ``h`` of ``wrapper`` rows ``h*hs:(h+1)*hs`` of each of ``ref``'s projections (what view splits)."""
    hs = ref.head_dim
    with torch.no_grad():
        for h, head in enumerate(wrapper.heads):
            for name in ("W_query", "W_key", "W_value"):
                getattr(head, name).weight.copy_(getattr(ref, name).weight[h * hs : (h + 1) * hs])
    return wrapper


class WrapperAttention(nn.Module):
    """Notebook 05's stacked heads (:class:`~llm_lab.MultiHeadAttentionWrapper`) followed by ``out_proj``."""

    def __init__(self, d_in, d_out, context_length, num_heads):
        super().__init__()
        head_dim = d_out // _checks.positive_int("num_heads", num_heads)
        self.wrapper = MultiHeadAttentionWrapper(d_in, head_dim, context_length, 0.0, num_heads)
        self.out_proj = nn.Linear(d_out, d_out)

    def copy_from(self, ref):
        copy_heads(self.wrapper, ref)
        self.out_proj.load_state_dict(ref.out_proj.state_dict())
        return self

    def forward(self, x):
        return self.out_proj(self.wrapper(x))


def _book_layer(cls):
    """llm_lab's classes take (d_in, d_out, context_length, dropout, num_heads) and share the reference's state_dict."""

    def build(d_in, d_out, context_length, num_heads):
        module = cls(d_in, d_out, context_length, 0.0, num_heads)
        module.copy_from = lambda ref: (module.load_state_dict(ref.state_dict()), module)[1]
        return module

    return build


@dataclass(frozen=True)
class Contestant:
    """One entry of the race: a label and ``build(d_in, d_out, context_length, num_heads)``.

    ``explicit``: it materializes the ``(B, nh, T, T)`` weights. ``same_as``: the contestant whose call it
    ends in (the fused SDPA path is entered three times, as controls).
    """

    label: str
    build: Callable[[int, int, int, int], nn.Module]
    explicit: bool
    same_as: str | None = None


BASELINE = "sdpa"

CONTESTANTS: dict[str, Contestant] = {
    "wrapper": Contestant("llm_lab.MultiHeadAttentionWrapper + out_proj", WrapperAttention, True),
    "manual": Contestant("llm_lab.MultiHeadAttention (explicit softmax)", _book_layer(MultiHeadAttention), True),
    "combined_qkv": Contestant("one Linear(d_in, 3*d_out), explicit softmax", CombinedQKVAttention, True),
    "einsum": Contestant("einsum projections and products", EinsumAttention, True),
    "fused": Contestant(
        "llm_lab.FusedMultiHeadAttention (SDPA)", _book_layer(FusedMultiHeadAttention), False, same_as=BASELINE
    ),
    "sdpa": Contestant("3 Linear + F.scaled_dot_product_attention + Linear", SDPAAttention, False),
    "sdpa_math": Contestant(
        "same, sdpa_kernel(SDPBackend.MATH)",
        lambda d_in, d_out, t, nh: SDPAAttention(d_in, d_out, t, nh, SDPBackend.MATH),
        True,
    ),
    "torch_mha": Contestant(
        "nn.MultiheadAttention, need_weights=False",
        lambda d_in, d_out, t, nh: TorchMHA(d_in, d_out, t, nh, False),
        False,
        same_as=BASELINE,
    ),
    "torch_mha_weights": Contestant(
        "nn.MultiheadAttention, need_weights=True", lambda d_in, d_out, t, nh: TorchMHA(d_in, d_out, t, nh, True), True
    ),
}


def build_contestants(d: int, num_heads: int, context_length: int, keys=None, seed: int = 123):
    """``(ref, {key: module})``: a reference MultiHeadAttention(d, d) and each contestant with its weights.

    The reference is drawn after ``torch.manual_seed(seed)`` on the CPU, so every machine gets the same weights.
    """
    keys = list(CONTESTANTS) if keys is None else list(keys)
    unknown = [k for k in keys if k not in CONTESTANTS]
    if unknown:
        raise ValueError(f"unknown contestants {unknown}; choose from {list(CONTESTANTS)}")
    torch.manual_seed(seed)
    ref = MultiHeadAttention(d, d, context_length, 0.0, num_heads)
    return ref, {k: CONTESTANTS[k].build(d, d, context_length, num_heads).copy_from(ref) for k in keys}
