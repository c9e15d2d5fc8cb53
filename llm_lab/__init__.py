"""llm_lab: reference implementations for the llm-lab notebook series on causal and multi-head attention.

The book's code is here, at the top level; the course around it is in the subpackages ``explore`` (figures,
explorers, head probes), ``bench`` (notebook 07's race), ``dev`` (bug-report and GPU tools) and ``exercises``
(checkers). README.md in this folder lists the modules in reading order.
"""

from .attention import CausalAttention, SelfAttention
from .dataset import GPTDatasetV1, create_dataloader_v1
from .masks import causal_mask, causal_softmax, mask_and_renormalize
from .multihead import FusedMultiHeadAttention, MultiHeadAttention, MultiHeadAttentionWrapper
from .resources import load_text
from .runtime import get_device, in_colab, seed_everything
from .tokenizer import gpt2_tokenizer

__version__ = "0.2.0"


def show_versions() -> None:
    """Print one block for a bug report: Python, torch and its devices, package versions, Colab, data checksums."""
    # Imported on call: importing llm_lab.dev.env up front would make `python -m llm_lab.dev.env` warn it was imported
    # twice (runpy's "found in sys.modules"). For the same reason no subpackage's __init__ imports its modules.
    from .dev.env import show_versions as _show_versions

    _show_versions()


__all__ = [
    "CausalAttention",
    "FusedMultiHeadAttention",
    "GPTDatasetV1",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttention",
    "causal_mask",
    "causal_softmax",
    "create_dataloader_v1",
    "gpt2_tokenizer",
    "get_device",
    "in_colab",
    "load_text",
    "mask_and_renormalize",
    "seed_everything",
    "show_versions",
]
