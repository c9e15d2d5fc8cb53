"""Notebook 08's evidence beyond two scores: what a copier can predict, what a one-token copier would lose, the
previous-token weight row by row, path ablations, the copying half of the circuit, and generation.

Shape names: B batch, T tokens, L layers, nh heads, hs head size, d model width, V vocabulary size.

- ``copy_data.copyable`` marks the predictions a copier can make: the pair (current token, next token) occurred
  earlier; ``copy_data.split_losses`` is the next-token loss on those predictions and on the rest (both live with
  the data, in :mod:`llm_lab.explore.copy_data`). :func:`proportional_copier_loss` is the loss of the
  count-proportional one-token copier: it sees only the current token and splits its bet over every earlier
  continuation, in proportion to how often each came (a reference line, not the best a one-token copier can do:
  ``distance.recency_copier_losses`` weighs recent occurrences more and can beat it).
- :func:`previous_token_per_row` is a head's weight on the token before, row by row: a previous-token head must
  do its job on every row, not only on average. :func:`key_uses` counts, per position, the copyable predictions
  whose earlier copy sits there: how often a key at that row is needed at all.
- :func:`path_ablation` runs layer 1 with one layer-0 head's output removed from its keys, queries or values only;
  :func:`path_effects` measures the copying and layer 1's induction score with it taken out of each in turn.
- :func:`logit_attribution` is what one head's output adds to the logit of each token (its direct effect).
- :func:`generate` decodes greedily, one token at a time, with one :class:`~llm_lab.kv_cache.KVCache` per layer.

Everything here is inference on the CPU or the model's device; nothing draws random numbers.
"""

from __future__ import annotations

import torch

from .. import _checks, _old_path
from ..kv_cache import KVCache, decode_step
from .copy_data import split_losses
from .induction import AttentionOnlyTransformer, _check_ids, induction_scores

__all__ = [
    "PATHS",
    "proportional_copier_loss",
    "previous_token_per_row",
    "key_uses",
    "head_outputs",
    "path_ablation",
    "path_effects",
    "path_claims",
    "logit_attribution",
    "generate",
    "decode_tokens",
]

PATHS = ("queries", "keys", "values")


def proportional_copier_loss(ids: torch.Tensor) -> float:
    """The loss, on the copyable predictions, of the count-proportional one-token copier: it knows only the current
    token, and at ``i`` bets on the tokens that followed every earlier occurrence of ``ids[i]``, in proportion to
    how often each did."""
    ids = _checks.id_rows(ids)
    cur, nxt = ids[:, :-1], ids[:, 1:]
    t = cur.shape[1]
    earlier = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril(-1)
    seen = (cur[:, :, None] == cur[:, None, :]) & earlier  # (B, i, j): x[j] == x[i], j < i
    right = seen & (nxt[:, :, None] == nxt[:, None, :])  # ... and x[j + 1] == x[i + 1]
    can = right.any(dim=-1)
    p = right.sum(-1).double() / seen.sum(-1).clamp(min=1).double()  # (B, T - 1)
    return float(-p[can].log().mean())


ideal_copier_loss = _old_path.renamed("llm_lab.explore.circuit.ideal_copier_loss", proportional_copier_loss)


def previous_token_per_row(attn_weights: torch.Tensor) -> torch.Tensor:
    """Weight on the token just before, per row: ``(B, L, nh, T, T) -> (L, nh, T - 1)`` (rows ``1 .. T - 1``,
    averaged over the batch)."""
    _checks.tensor("attn_weights", attn_weights)
    if attn_weights.dim() != 5 or attn_weights.shape[-1] != attn_weights.shape[-2]:
        raise ValueError(f"attn_weights must be (B, L, nh, T, T), got {tuple(attn_weights.shape)}")
    t = attn_weights.shape[-1]
    rows = torch.arange(1, t, device=attn_weights.device)
    return attn_weights[..., rows, rows - 1].mean(dim=0)


def key_uses(ids: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` ids -> ``(T,)`` int64: at ``j``, how many predictions in the batch a copier makes by reading key
    ``j``: position ``i`` (predicting ``ids[i + 1]``) with ``j <= i``, ``ids[j - 1] == ids[i]`` and
    ``ids[j] == ids[i + 1]``. Key 0 has no token before it and is never read this way, so its count is 0."""
    ids = _checks.id_rows(ids)
    t = ids.shape[1]
    cur, nxt = ids[:, :-1], ids[:, 1:]  # query i = 0 .. T - 2 and its target; key j = 1 .. T - 1 and its token before
    match = (cur[:, :, None] == cur[:, None, :]) & (nxt[:, :, None] == nxt[:, None, :])  # (B, i, j - 1)
    reach = torch.ones(t - 1, t - 1, dtype=torch.bool, device=ids.device).tril(-1)  # j - 1 < i: key j <= query i
    uses = (match & reach).sum(dim=(0, 1))  # (T - 1,): keys 1 .. T - 1
    return torch.cat([uses.new_zeros(1), uses])


def head_outputs(model: AttentionOnlyTransformer, ids: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The residual stream entering ``layer`` ``(B, T, d)`` and what each head of it writes there
    ``(B, nh, T, d)`` (its slice of the context vector through its columns of ``out_proj``; the bias apart)."""
    _layer(model, layer)
    x = _embed(model, ids)
    for lay in range(layer + 1):
        attn = model.attn[lay]
        ctx, _ = _attend(attn, model.norms[lay](x), model.norms[lay](x), model.norms[lay](x))  # (B, nh, T, hs)
        per_head = _through_out_proj(attn, ctx)  # (B, nh, T, d)
        if lay == layer:
            return x, per_head
        x = x + per_head.sum(dim=1) + _bias(attn)
    raise AssertionError("unreachable")


@torch.no_grad()
def path_ablation(model: AttentionOnlyTransformer, ids: torch.Tensor, head: int, paths=("keys",)):
    """Layer 1 with layer-0 head ``head``'s output taken out of the input of some of its paths only.

    ``paths``: any of ``"queries"``, ``"keys"``, ``"values"``; those read the residual stream without what
    ``head`` wrote into it, the others read it whole. Returns ``(logits (B, T, V), layer-1 weights (B, nh, T, T))``.
    The model must have exactly two layers.
    """
    if model.config.num_layers != 2:
        raise ValueError(f"path_ablation needs a 2-layer model, got num_layers={model.config.num_layers}")
    _checks.int_range("head", head, 0, model.config.num_heads - 1)
    paths = tuple(paths)
    bad = [p for p in paths if p not in PATHS]
    if bad or not paths:
        raise ValueError(f"paths must be a non-empty subset of {PATHS}, got {paths!r}")
    x0, per_head = head_outputs(model, ids, 0)
    whole = x0 + per_head.sum(dim=1) + _bias(model.attn[0])  # the residual stream entering layer 1
    without = whole - per_head[:, head]
    norm = model.norms[1]
    q, k, v = (norm(without if name in paths else whole) for name in PATHS)
    ctx, weights = _attend(model.attn[1], q, k, v)
    x = whole + _through_out_proj(model.attn[1], ctx).sum(dim=1) + _bias(model.attn[1])
    return model.unembed(model.final_norm(x)), weights


@torch.no_grad()
def path_effects(model: AttentionOnlyTransformer, probe: torch.Tensor, head: int) -> dict:
    """Layer-0 head ``head`` taken out of one of layer 1's inputs at a time (:func:`path_ablation`), on a probe
    whose second half repeats its first (``copy_data.probe_batch``): for ``"whole"`` (nothing taken out),
    ``"queries"``, ``"keys"`` and ``"values"``, ``{"copyable": the copyable loss, "induction": layer 1's induction
    score, the mean of its heads}``."""
    was_training = model.training
    model.eval()
    try:
        logits, weights = model(probe, return_attn_weights=True)
        out = {"whole": _path_point(logits, weights[:, 1], probe)}
        for path in PATHS:
            out[path] = _path_point(*path_ablation(model, probe, head, paths=(path,)), probe)
    finally:
        model.train(was_training)
    return out


def _path_point(logits, layer1_weights, probe) -> dict:
    return {
        "copyable": split_losses(logits, probe)["copyable"],
        "induction": float(induction_scores(layer1_weights[:, None])[0].mean()),
    }


def path_claims(effects: dict) -> dict:
    """What notebook 08 says about :func:`path_effects`, as booleans: the keys need the head (without it the
    copyable loss rises by more than 1 and layer 1's induction score falls below a third of the whole model's),
    the queries and the values do not (the loss moves by less than 0.5; the score stays above two thirds, and
    without the head in the values it is the whole model's, within 0.01)."""
    whole = effects["whole"]
    loss = {p: effects[p]["copyable"] - whole["copyable"] for p in PATHS}
    score = {p: effects[p]["induction"] for p in PATHS}
    return {
        "keys: copyable loss up by more than 1": loss["keys"] > 1.0,
        "keys: induction score below a third of the whole model's": score["keys"] < whole["induction"] / 3,
        "queries: copyable loss within 0.5 of the whole model's": abs(loss["queries"]) < 0.5,
        "queries: induction score above two thirds of the whole model's": score["queries"] > 2 * whole["induction"] / 3,
        "values: copyable loss within 0.5 of the whole model's": abs(loss["values"]) < 0.5,
        "values: induction score the whole model's, within 0.01": abs(score["values"] - whole["induction"]) < 0.01,
    }


@torch.no_grad()
def logit_attribution(model: AttentionOnlyTransformer, ids: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """What head ``(layer, head)`` adds to every token's logit at every position, ``(B, T, V)``: its output
    through the final LayerNorm (linearised: the scale of the whole stream at that position, its mean removed)
    and the unembedding. Its mean over the vocabulary is subtracted, so 0 is "no preference"."""
    _checks.int_range("head", head, 0, model.config.num_heads - 1)
    _, per_head = head_outputs(model, ids, layer)
    x = _final_stream(model, ids)
    norm = model.final_norm
    scale = (x.var(dim=-1, unbiased=False, keepdim=True) + norm.eps).rsqrt()  # (B, T, 1): LayerNorm's divisor
    out = per_head[:, head]
    out = (out - out.mean(dim=-1, keepdim=True)) * scale * norm.weight  # (B, T, d)
    logits = model.unembed(out)  # (B, T, V)
    return logits - logits.mean(dim=-1, keepdim=True)


@torch.no_grad()
def generate(model: AttentionOnlyTransformer, prompt: torch.Tensor, num_new: int) -> torch.Tensor:
    """Greedy decoding: feed ``prompt`` ``(B, T0)``, then each new token, one at a time, through one KV cache per
    layer; return the ``(B, num_new)`` tokens chosen (each the argmax of the newest position's logits)."""
    prompt = _checks.id_rows(prompt)
    _checks.positive_int("num_new", num_new)
    total = prompt.shape[1] + num_new
    if total > model.config.context_length:
        raise ValueError(
            f"a prompt of {prompt.shape[1]} tokens + num_new={num_new} = {total} tokens exceed "
            f"context_length={model.config.context_length}: shorten the prompt or generate fewer"
        )
    caches = [KVCache() for _ in model.attn]
    new, chunk, start = [], prompt, 0
    for _ in range(num_new):
        logits = decode_tokens(model, chunk, caches, start)  # (B, len(chunk), V)
        start += chunk.shape[1]
        chunk = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1): the next token
        new.append(chunk)
    return torch.cat(new, dim=1)


def decode_tokens(model: AttentionOnlyTransformer, ids: torch.Tensor, caches: list, start: int) -> torch.Tensor:
    """The logits ``(B, q, V)`` of ``q`` new tokens at positions ``start ..``, every layer attending to its cache."""
    if len(caches) != model.config.num_layers or any(len(c) != start for c in caches):
        raise ValueError(f"need one KVCache per layer ({model.config.num_layers}), each holding start={start} tokens")
    pos = torch.arange(start, start + ids.shape[1], device=ids.device)
    x = model.tok_emb(ids) + model.pos_emb(pos)  # (B, q, d)
    for norm, attn, cache in zip(model.norms, model.attn, caches, strict=True):
        x = x + decode_step(attn, norm(x), cache)
    return model.unembed(model.final_norm(x))


# ---- pieces ------------------------------------------------------------------------------------------------


def _layer(model, layer) -> None:
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    _checks.int_range("layer", layer, 0, model.config.num_layers - 1)


def _embed(model, ids) -> torch.Tensor:
    ids = _checks.id_rows(ids)
    _check_ids(ids, model.config)
    return model.tok_emb(ids) + model.pos_emb(torch.arange(ids.shape[1], device=ids.device))


def _attend(attn, xq, xk, xv):
    """The heads of ``attn`` with queries, keys and values read from three inputs: context ``(B, nh, T, hs)``
    and weights ``(B, nh, T, T)``, causal, no dropout."""
    b, t, _ = xq.shape
    q = attn._split_heads(attn.W_query(xq), b, t)
    k = attn._split_heads(attn.W_key(xk), b, t)
    v = attn._split_heads(attn.W_value(xv), b, t)
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
    hidden = torch.ones(t, t, dtype=torch.bool, device=xq.device).triu(1)
    weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
    return weights @ v, weights


def _through_out_proj(attn, ctx) -> torch.Tensor:
    """Each head's context ``(B, nh, T, hs)`` through its own columns of ``out_proj``: ``(B, nh, T, d)``."""
    nh, hs = ctx.shape[1], ctx.shape[-1]
    w = attn.out_proj.weight.view(attn.out_proj.weight.shape[0], nh, hs)  # (d, nh, hs)
    return torch.einsum("bhts,dhs->bhtd", ctx, w)


def _bias(attn) -> torch.Tensor:
    return attn.out_proj.bias if attn.out_proj.bias is not None else torch.zeros(())


def _final_stream(model, ids) -> torch.Tensor:
    x = _embed(model, ids)
    for norm, attn in zip(model.norms, model.attn, strict=True):
        out, _ = attn(norm(x), return_attn_weights=True)
        x = x + out
    return x
