"""Where the code runs: device choice, seeding, Colab detection."""

from __future__ import annotations

import numbers
import random
import sys

import numpy as np
import torch


def get_device() -> torch.device:
    """``cuda`` if a GPU is visible, else ``mps`` on Apple silicon, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and every GPU).

    CPU and CUDA draw from different generators: to get the same numbers on every machine, draw
    random tensors (and run dropout) on the CPU, then move the result to the device.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r} ({type(seed).__name__})")
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def in_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules
