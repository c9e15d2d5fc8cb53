"""Notebook 08's circuits read from the weights alone, as the circuits papers and ARENA read them: no data.

Shape names: V vocabulary size, T tokens, d model width, nh heads, hs head size.

- :func:`ov_circuit` is a head's OV circuit on the token embeddings, ``W_U W_O^h W_V^h W_E``: row ``s`` is what the
  head adds to every output logit when it attends to a key holding token ``s``, ``(V, V)``. A head that copies
  puts each row's largest entry on the diagonal; :func:`diagonal_share` measures how often.
- :func:`positional_qk` is a head's attention pattern from the position embeddings alone, ``(T, T)``: a
  previous-token head puts each row's largest weight one below the diagonal; :func:`band_share` measures how often.
- :func:`random_head` is the same model with one head's weights redrawn at random, the baseline for both.

The LayerNorms are treated as the model applies them to a vector holding only the embedding: each layer's
LayerNorm is applied to the embedding rows, the final one linearised (mean removed, its weight applied; its
positive scale does not move a row's largest entry).
"""

from __future__ import annotations

import copy

import torch

from .. import _checks

__all__ = ["ov_circuit", "positional_qk", "diagonal_share", "band_share", "random_head"]


def _head_slice(model, layer: int, head: int) -> slice:
    cfg = model.config
    _checks.int_range("layer", layer, 0, cfg.num_layers - 1)
    _checks.int_range("head", head, 0, cfg.num_heads - 1)
    hs = cfg.d_model // cfg.num_heads
    return slice(head * hs, (head + 1) * hs)


@torch.no_grad()
def ov_circuit(model, layer: int, head: int) -> torch.Tensor:
    """``(V, V)``: row ``s``, column ``t``: what head ``(layer, head)`` adds to token ``t``'s logit when it attends to
    a key holding token ``s`` (the token embedding through ``norms[layer]``, the head's values and its columns of
    ``out_proj``, the final LayerNorm linearised, the unembedding), each row's mean removed."""
    cols = _head_slice(model, layer, head)
    attn = model.attn[layer]
    x = model.norms[layer](model.tok_emb.weight)  # (V, d)
    v = attn.W_value(x)[:, cols]  # (V, hs)
    out = v @ attn.out_proj.weight[:, cols].T  # (V, d)
    out = (out - out.mean(dim=-1, keepdim=True)) * model.final_norm.weight
    logits = model.unembed(out)  # (V, V)
    return logits - logits.mean(dim=-1, keepdim=True)


@torch.no_grad()
def positional_qk(model, layer: int, head: int) -> torch.Tensor:
    """``(T, T)``: the causal attention weights of head ``(layer, head)`` computed from the position embeddings alone
    (through ``norms[layer]``, the head's queries and keys): where position decides the head looks."""
    cols = _head_slice(model, layer, head)
    attn = model.attn[layer]
    x = model.norms[layer](model.pos_emb.weight)  # (T, d)
    q, k = attn.W_query(x)[:, cols], attn.W_key(x)[:, cols]  # (T, hs)
    scores = q @ k.T / k.shape[-1] ** 0.5
    t = scores.shape[0]
    hidden = torch.ones(t, t, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)


def diagonal_share(ov: torch.Tensor) -> float:
    """Share of the rows of a square matrix whose largest entry is on the diagonal."""
    _checks.square_scores("ov", ov)
    return float((ov.argmax(dim=-1) == torch.arange(ov.shape[0])).float().mean())


def band_share(pattern: torch.Tensor, rows=None) -> float:
    """Share of the rows ``i`` (default ``1 .. T - 1``) of a ``(T, T)`` pattern whose largest entry is at ``i - 1``."""
    _checks.square_scores("pattern", pattern)
    t = pattern.shape[0]
    rows = torch.arange(1, t) if rows is None else torch.as_tensor(rows)
    return float((pattern[rows].argmax(dim=-1) == rows - 1).float().mean())


@torch.no_grad()
def random_head(model, layer: int, head: int, seed: int = 0):
    """A copy of ``model`` whose head ``(layer, head)`` has random queries, keys, values and ``out_proj`` columns,
    each drawn from a normal distribution with the trained weights' own standard deviation (seeded)."""
    cols = _head_slice(model, layer, head)
    g = torch.Generator().manual_seed(seed)
    other = copy.deepcopy(model)
    attn = other.attn[layer]
    for w in (attn.W_query.weight, attn.W_key.weight, attn.W_value.weight):
        w[cols] = torch.randn(w[cols].shape, generator=g) * w[cols].std()
    o = attn.out_proj.weight
    o[:, cols] = torch.randn(o[:, cols].shape, generator=g) * o[:, cols].std()
    return other


def claims(model, prev_head: int, seed: int = 0) -> dict:
    """What notebook 08 says about the weights, as booleans: every layer-1 head's OV circuit copies (diagonal on
    more than 0.8 of the rows, a random head below 0.1) and head ``prev_head`` of layer 0 is a previous-token head
    by position (band on more than 0.8 of rows 1 .. 60, a random head below 0.2)."""
    heads = range(model.config.num_heads)
    rand_ov = max(diagonal_share(ov_circuit(random_head(model, 1, h, seed), 1, h)) for h in heads)
    rand_qk = band_share(positional_qk(random_head(model, 0, prev_head, seed), 0, prev_head), range(1, 61))
    return {
        "every layer-1 OV circuit: diagonal on more than 0.8 of the rows": all(
            diagonal_share(ov_circuit(model, 1, h)) > 0.8 for h in heads
        ),
        "random layer-1 heads: below 0.1": rand_ov < 0.1,
        f"layer 0, head {prev_head}: band on more than 0.8 of rows 1 .. 60": band_share(
            positional_qk(model, 0, prev_head), range(1, 61)
        )
        > 0.8,
        "a random head there: below 0.2": rand_qk < 0.2,
    }
