"""Instant checkers for the llm-lab exercises.

Each ``check_*`` runs your function or class on fresh random inputs against the llm_lab reference and prints
ONE line: ``✅`` passed, ``🚧`` not implemented yet, ``❌`` with a hint naming the likely mistake. It never
raises and returns None. ``evaluate(name, obj)`` returns the :class:`CheckResult` without printing.

    from llm_lab.exercises import set_language, check_causal_mask
    set_language("zh")          # or "en"
    check_causal_mask(my_causal_mask)
"""

from __future__ import annotations

from . import _checkers
from ._core import CheckResult, get_language, run, set_language
from ._messages import MESSAGES

# exercise name -> (checker body, what the learner passes)
_BODIES = {
    "causal_mask": _checkers.body_causal_mask,
    "renormalize": _checkers.body_renormalize,
    "attention_weights": _checkers.body_attention_weights,
    "causal_softmax": _checkers.body_causal_softmax,
    "dropout": _checkers.body_dropout,
    "causal_attention": _checkers.body_causal_attention,
    "split_heads": _checkers.body_split_heads,
    "merge_heads": _checkers.body_merge_heads,
    "multihead": _checkers.body_multihead,
    "windows": _checkers.body_windows,
    "input_embeddings": _checkers.body_input_embeddings,
}

EXERCISES = tuple(_BODIES)
HINTS = tuple(MESSAGES)


def evaluate(exercise: str, obj) -> CheckResult:
    """Check ``obj`` for ``exercise`` (one of ``EXERCISES``) and return the result; prints nothing."""
    if exercise not in _BODIES:
        raise ValueError(f"unknown exercise {exercise!r}; known: {', '.join(EXERCISES)}")
    return run(exercise, obj, _BODIES[exercise])


def _show(exercise: str, obj) -> None:
    print(evaluate(exercise, obj).line)


def check_causal_mask(fn) -> None:
    """``fn(num_tokens) -> bool (T, T)``, True strictly above the diagonal (the hidden future)."""
    _show("causal_mask", fn)


def check_renormalize(fn) -> None:
    """``fn(attn_weights (..., T, T)) -> (..., T, T)``: zero the future, divide each row by its sum."""
    _show("renormalize", fn)


def check_attention_weights(fn) -> None:
    """``fn(queries (..., T, d_k), keys (..., T, d_k)) -> (..., T, T)``: scaled, -inf masked, softmaxed."""
    _show("attention_weights", fn)


def check_causal_softmax(fn) -> None:
    """``fn(attn_scores (B, T, T), key_padding_mask bool (B, T)) -> (B, T, T)``; fully masked rows are zeros."""
    _show("causal_softmax", fn)


def check_dropout(fn) -> None:
    """``fn(x, p, training=True) -> tensor``: inverted dropout by hand; identity when not training."""
    _show("dropout", fn)


def check_causal_attention(cls) -> None:
    """``cls(d_in, d_out, context_length, dropout)`` with ``W_query/W_key/W_value``; ``forward(x (B, T, d_in))``."""
    _show("causal_attention", cls)


def check_split_heads(fn) -> None:
    """``fn(x (B, T, d_out), num_heads) -> (B, num_heads, T, head_dim)``."""
    _show("split_heads", fn)


def check_merge_heads(fn) -> None:
    """``fn(context_vec (B, num_heads, T, head_dim)) -> (B, T, num_heads * head_dim)``."""
    _show("merge_heads", fn)


def check_multihead(cls) -> None:
    """``cls(d_in, d_out, context_length, dropout, num_heads)`` with ``W_query/W_key/W_value/out_proj``."""
    _show("multihead", cls)


def check_windows(fn) -> None:
    """``fn(token_ids list[int], max_length, stride) -> (input_ids, target_ids)``, each ``(n_windows, max_length)``."""
    _show("windows", fn)


def check_input_embeddings(fn) -> None:
    """``fn(token_ids (B, T), tok_emb, pos_emb) -> (B, T, d)``: token plus positional embeddings."""
    _show("input_embeddings", fn)


__all__ = [
    "EXERCISES",
    "HINTS",
    "CheckResult",
    "check_attention_weights",
    "check_causal_attention",
    "check_causal_mask",
    "check_causal_softmax",
    "check_dropout",
    "check_input_embeddings",
    "check_merge_heads",
    "check_multihead",
    "check_renormalize",
    "check_split_heads",
    "check_windows",
    "evaluate",
    "get_language",
    "set_language",
]
