"""The book's running example: six tokens, "Your journey starts with one step", as 3-d embeddings."""

from __future__ import annotations

import torch

TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
_INPUTS = [
    [0.43, 0.15, 0.89],  # Your     (x^1)
    [0.55, 0.87, 0.66],  # journey  (x^2)
    [0.57, 0.85, 0.64],  # starts   (x^3)
    [0.22, 0.58, 0.33],  # with     (x^4)
    [0.77, 0.25, 0.10],  # one      (x^5)
    [0.05, 0.80, 0.55],  # step     (x^6)
]


def book_inputs() -> torch.Tensor:
    """A fresh ``(6, 3)`` float32 tensor: row ``i`` embeds token ``TOKENS[i]``."""
    return torch.tensor(_INPUTS)
