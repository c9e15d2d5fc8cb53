"""Argument checks shared by the package: fail early, name the values, say what is allowed."""

from __future__ import annotations

import numbers

import torch


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return int(value)


def int_range(name: str, value, low: int, high: int) -> int:
    """An int in ``[low, high]`` (numpy ints too; bools are not ints here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int in [{low}, {high}], got {value!r} ({type(value).__name__})")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value}")
    return int(value)


def one_of(name: str, value, allowed) -> str:
    """``value``, a str among ``allowed``; else a TypeError or ValueError naming both."""
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str, one of {', '.join(map(repr, allowed))}; got {value!r} ({type(value).__name__})"
        )
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not known: use one of {', '.join(map(repr, allowed))}")
    return value


def dropout_rate(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"dropout must be a float in [0, 1), got {value!r} ({type(value).__name__})")
    if not 0.0 <= float(value) < 1.0:  # also rejects nan
        why = "p=1 would zero every weight" if float(value) >= 1.0 else "a probability cannot be negative or nan"
        raise ValueError(f"dropout must be in [0, 1), got {value}: it is the probability of zeroing a weight; {why}")
    return float(value)


def flag(name: str, value) -> bool:
    """A real bool: strings like "False" are truthy and would silently flip the meaning."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return value


def tensor(name: str, value) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def matches_weights(x: torch.Tensor, weight: torch.Tensor) -> None:
    """The input must be floating point, with the layer's dtype and on the layer's device."""
    if not x.is_floating_point():
        raise TypeError(
            f"input must be a floating-point tensor of embeddings, got dtype {x.dtype}; token ids must go "
            "through an nn.Embedding first"
        )
    if x.dtype != weight.dtype:
        raise TypeError(
            f"input dtype {x.dtype} does not match the layer's {weight.dtype}; use x.to({weight.dtype}) "
            f"or layer.to({x.dtype})"
        )
    if x.device != weight.device:
        raise ValueError(
            f"input is on {x.device} but the layer is on {weight.device}; move one of them with .to(device)"
        )


def batch_input(x, d_in: int, context_length: int | None = None, weight: torch.Tensor | None = None):
    """Check a (batch, num_tokens, d_in) input (and, given the layer's weight, its dtype/device); return (b, T)."""
    tensor("x", x)
    if x.dim() != 3:
        raise ValueError(
            f"expected input of shape (batch, num_tokens, d_in={d_in}), got {x.dim()}-D shape {tuple(x.shape)}; "
            "for a single sequence use x.unsqueeze(0)"
        )
    b, num_tokens, width = x.shape
    if width != d_in:
        raise ValueError(
            f"input last dimension is {width} but this layer was built with d_in={d_in} (input shape {tuple(x.shape)})"
        )
    if num_tokens == 0:
        raise ValueError(f"input has no tokens (shape {tuple(x.shape)}): attention needs num_tokens >= 1")
    if weight is not None:
        matches_weights(x, weight)
    if context_length is not None and num_tokens > context_length:
        raise ValueError(
            f"num_tokens={num_tokens} exceeds context_length={context_length}: the causal mask only covers "
            f"{context_length} positions; build the layer with context_length >= {num_tokens} or truncate the input"
        )
    return b, num_tokens


def square_scores(name: str, scores) -> int:
    """Check a floating-point (..., T, T) score/weight tensor with T >= 1; return T."""
    tensor(name, scores)
    if scores.dim() < 2 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"{name} must have shape (..., num_tokens, num_tokens), got {tuple(scores.shape)}")
    if scores.shape[-1] == 0:
        raise ValueError(f"{name} has no tokens (shape {tuple(scores.shape)}): num_tokens must be >= 1")
    if not scores.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {scores.dtype}")
    return scores.shape[-1]


def token_ids(ids, vocab_size: int, context_length: int, hint: str = "") -> None:
    """``ids`` must be an integer ``(batch, num_tokens)`` tensor, ``1 <= num_tokens <= context_length``, every id
    in ``[0, vocab_size)``; ``hint`` is added to the last error (how to get such ids)."""
    tensor("ids", ids)
    if ids.dim() != 2 or ids.is_floating_point() or ids.dtype == torch.bool:
        raise ValueError(
            f"ids must be an integer tensor (batch, num_tokens), got shape {tuple(ids.shape)}, dtype {ids.dtype}"
        )
    if not 1 <= ids.shape[1] <= context_length:
        raise ValueError(f"num_tokens={ids.shape[1]} must be between 1 and context_length={context_length}")
    if ids.numel() and (ids.min() < 0 or ids.max() >= vocab_size):
        where = f"[0, {vocab_size})" + (" (the model's own vocabulary)" if hint else "")
        got = f"got {int(ids.min())}..{int(ids.max())}"
        raise ValueError(f"ids must lie in {where}, {got}" + (f"; {hint}" if hint else ""))


def id_rows(ids) -> torch.Tensor:
    """``ids`` when it is a (B, T) int64 tensor of token ids with T >= 2 (rows a model reads), else ValueError."""
    tensor("ids", ids)
    if ids.dim() != 2 or ids.dtype != torch.long or ids.shape[1] < 2:
        raise ValueError(
            f"ids must be a (B, T) tensor of int64 token ids with T >= 2, got {ids.dtype} {tuple(ids.shape)}"
        )
    return ids
