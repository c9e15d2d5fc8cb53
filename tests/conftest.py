import os

import pytest
import torch

os.environ.setdefault("MPLBACKEND", "Agg")

BOOK_INPUTS = [
    [0.43, 0.15, 0.89],  # Your
    [0.55, 0.87, 0.66],  # journey
    [0.57, 0.85, 0.64],  # starts
    [0.22, 0.58, 0.33],  # with
    [0.77, 0.25, 0.10],  # one
    [0.05, 0.80, 0.55],  # step
]


@pytest.fixture
def inputs():
    return torch.tensor(BOOK_INPUTS)
