"""The learner's checkers, one function per exercise: ``check_<name>(obj)`` prints the result line (and
what ``obj`` printed) and never raises.

Generated from the exercise records by ``python -m tools.authoring.checker_defs``; do not edit by hand
(``tests/tools/authoring/test_checker_defs.py`` fails when this file and the records differ). ``llm_lab.exercises``
exports them all.
"""

from __future__ import annotations

import sys

_package = sys.modules[__package__]  # the llm_lab.exercises this file belongs to (a fresh() copy has its own)

__all__ = [
    "check_window_weights",
    "check_causal_mask",
    "check_renormalize",
    "check_packed_weights",
    "check_causal_softmax",
    "check_dropout",
    "check_additive_attention",
    "check_causal_attention",
    "check_split_qkv",
    "check_multihead",
    "check_padded_attention",
    "check_document_windows",
    "check_next_token_loss",
    "check_cached_attention",
    "check_tiled_attention",
    "check_induction_score",
    "check_find_by_ablation",
    "check_alibi_bias",
    "check_rope_chunk_attention",
]


def check_window_weights(obj) -> None:
    """Notebook 00, 2 points: ``fn(attn_scores (T, T), window) -> (T, T)``: row i a softmax over keys i - window + 1 ..
    i, 0 elsewhere."""
    _package.check("window_weights", obj)


def check_causal_mask(obj) -> None:
    """Notebook 01, 1 point: ``fn(num_tokens) -> bool (T, T)``, True strictly above the diagonal (the hidden future)."""
    _package.check("causal_mask", obj)


def check_renormalize(obj) -> None:
    """Notebook 01, 2 points: ``fn(attn_weights (..., Tq, Tk)) -> (..., Tq, Tk)``, the rows of the last Tq <= Tk
    queries: zero each row's future, divide each row by its sum."""
    _package.check("renormalize", obj)


def check_packed_weights(obj) -> None:
    """Notebook 02, 2 points: ``fn(queries (..., T, d_k), keys (..., T, d_k), doc_ids int (..., T)) -> (..., T, T)``:
    scaled, the future and the other documents' keys -inf, softmaxed."""
    _package.check("packed_weights", obj)


def check_causal_softmax(obj) -> None:
    """Notebook 02, 3 points: ``fn(attn_scores (B, T, T), key_padding_mask bool (B, T)) -> (B, T, T)``; fully masked
    rows are zeros."""
    _package.check("causal_softmax", obj)


def check_dropout(obj) -> None:
    """Notebook 03, 2 points: ``fn(x, p, training=True) -> tensor``: inverted dropout by hand; identity when not
    training."""
    _package.check("dropout", obj)


def check_additive_attention(obj) -> None:
    """Notebook 04, 2 points: ``cls(d_in, d_out, context_length, dropout)`` with ``W_query/W_key/W_value`` and an
    additive causal mask (0 / -inf) registered as a buffer and added to the scores; ``forward(x (B, T, d_in)) -> (B,
    T, d_out)``, dropout on the attention weights."""
    _package.check("additive_attention", obj)


def check_causal_attention(obj) -> None:
    """Notebook 04, 2 points: ``cls(d_in, d_out, context_length, dropout)`` with ``W_query/W_key/W_value``; ``forward(x
    (B, T, d_in)) -> (B, T, d_out)``, dropout on the attention weights."""
    _package.check("causal_attention", obj)


def check_split_qkv(obj) -> None:
    """Notebook 05, 2 points: ``fn(qkv (B, T, (num_heads + 2 * num_kv_heads) * head_dim), num_heads, num_kv_heads) ->
    (queries, keys, values)``: one fused projection's columns [queries | keys | values] split into heads, queries
    ``(B, num_heads, T, head_dim)``, keys and values ``(B, num_kv_heads, T, head_dim)``."""
    _package.check("split_qkv", obj)


def check_multihead(obj) -> None:
    """Notebook 05, 3 points: ``cls(d_in, d_out, context_length, dropout, num_heads)`` with
    ``W_query/W_key/W_value/out_proj``; ``forward(x (B, T, d_in)) -> (B, T, d_out)``."""
    _package.check("multihead", obj)


def check_padded_attention(obj) -> None:
    """Notebook 05, 3 points: ``fn(queries, keys, values (B, nh, T, hs), key_padding_mask bool (B, T)) -> (B, nh, T,
    hs)``: causal attention per head that also hides padded keys; a query with no visible key gets zeros."""
    _package.check("padded_attention", obj)


def check_document_windows(obj) -> None:
    """Notebook 06, 2 points: ``fn(token_ids list[int], max_length, stride) -> (input_ids, target_ids)``, each int64
    ``(n_windows, max_length)``: the sliding windows of every document of a stream joined by <|endoftext|> (50256),
    none crossing from one document into the next."""
    _package.check("document_windows", obj)


def check_next_token_loss(obj) -> None:
    """Notebook 06, 2 points: ``fn(logits (B, T, V), targets (B, T) int64) -> 0-d tensor``: the mean of -ln
    softmax(logits)[target] over all B * T positions, finite for scores near 1000 and for a target whose probability
    rounds to 0 in float32."""
    _package.check("next_token_loss", obj)


def check_cached_attention(obj) -> None:
    """Notebook 07, 2 points: ``fn(queries (B, nh, q_len, hs), keys, values (B, nh, k_len, hs), window) -> (B, nh,
    q_len, hs)``: sliding-window causal attention of the q_len newest tokens on all k_len keys and values (the cache
    included), ``q_len <= k_len``: each query sees its own key and the ``window - 1`` before it."""
    _package.check("cached_attention", obj)


def check_tiled_attention(obj) -> None:
    """Notebook 07, 3 points: ``fn(queries, keys, values (B, nh, T, hs), block_size) -> (B, nh, T, hs)``: causal
    attention computed block by block with an online softmax, equal to ``F.scaled_dot_product_attention(...,
    is_causal=True)``."""
    _package.check("tiled_attention", obj)


def check_induction_score(obj) -> None:
    """Notebook 08, 2 points: ``fn(attn_weights (L, nh, T, T), token_ids (T,)) -> (L, nh)``: the mean weight each head
    puts on keys j < i with ``token_ids[j - 1] == token_ids[i]``, over the rows that have such a key."""
    _package.check("induction_score", obj)


def check_find_by_ablation(obj) -> None:
    """Notebook 08, 2 points: ``fn(runs (1 + nh, L, nh, T, T), layer, head) -> int``: the weights of one probe (second
    half = first half), run 0 clean and run ``1 + h`` with layer-0 head ``h`` zeroed; return the layer-0 head whose
    ablation lowers the induction score of head ``(layer, head)`` the most."""
    _package.check("find_by_ablation", obj)


def check_alibi_bias(obj) -> None:
    """Notebook 09, 2 points: ``fn(num_heads, T) -> (num_heads, T, T)``: ALiBi's bias for the scores, -m_h * (i - j)
    for keys j <= i and -inf for j > i, with slopes m_h = 2 ** (-8 h / num_heads), h = 1 .. num_heads."""
    _package.check("alibi_bias", obj)


def check_rope_chunk_attention(obj) -> None:
    """Notebook 09, 3 points: ``fn(q (..., Tq, hs), k (..., Tk, hs), v (..., Tk, hs)) -> (..., Tq, hs)``: the last Tq
    tokens' queries against the keys and values of positions 0 .. Tk - 1, RoPE (rotate-half, base 10000) on queries
    and keys, a causal mask, the softmax of the scores over sqrt(hs), times the values."""
    _package.check("rope_chunk_attention", obj)
