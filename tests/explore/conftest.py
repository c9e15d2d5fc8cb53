import pytest
import torch

from llm_lab import MultiHeadAttention


@pytest.fixture
def mha_weights():
    """The attention weights of a small MultiHeadAttention, (B=2, nh=2, T=6): what the heads explorer shows."""
    torch.manual_seed(123)
    mha = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)
    x = torch.rand(2, 6, 3)  # (B, T, d_in)
    with torch.no_grad():
        _, attn_weights = mha(x, return_attn_weights=True)  # (B, nh, T, T)
    return attn_weights
