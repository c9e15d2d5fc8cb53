"""The book's sliding-window GPT dataset, stored as views over one token tensor."""

from __future__ import annotations

import numbers

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from . import _checks
from .tokenizer import ENDOFTEXT, gpt2_tokenizer


def _encode(tokenizer, txt: str) -> torch.Tensor:
    """Token ids as one int64 tensor, checked: a tokenizer must return non-negative integer ids."""
    try:
        ids = tokenizer.encode(txt, allowed_special={ENDOFTEXT})
    except TypeError:  # a plain tokenizer without tiktoken's allowed_special keyword
        ids = tokenizer.encode(txt)
    try:
        # via NumPy: torch.tensor() on a Python list of a million ints is several times slower
        token_ids = torch.from_numpy(np.fromiter(ids, dtype=np.int64, count=len(ids)))
    except (TypeError, ValueError, OverflowError) as err:
        raise TypeError(f"tokenizer.encode must return a list of int token ids in [0, 2**63); got {err}") from err
    if len(token_ids) and token_ids.min() < 0:
        raise ValueError(f"tokenizer returned a negative token id ({token_ids.min().item()}); ids must be >= 0")
    return token_ids


class GPTDatasetV1(Dataset):
    """Input/target windows over a tokenized text; the target is the input shifted by one token.

    Window ``i`` starts at token ``i * stride``; there are ``(n_tokens - max_length - 1) // stride + 1``
    windows (each needs ``max_length + 1`` tokens: the inputs plus the next-token target). All windows
    are views into a single ``(n_tokens,)`` int64 tensor, so memory does not grow with their number.

    ``dataset[i]`` is ``(input_ids, target_ids)``, each ``(max_length,)`` int64.
    """

    def __init__(self, txt: str, tokenizer, max_length: int, stride: int):
        if not isinstance(txt, str):
            raise TypeError(f"txt must be a str, got {type(txt).__name__}")
        self.max_length = _checks.positive_int("max_length", max_length)
        self.stride = _checks.positive_int("stride", stride)
        if not callable(getattr(tokenizer, "encode", None)):
            raise TypeError(
                f"tokenizer must have an encode(text) method, e.g. llm_lab.gpt2_tokenizer(); got "
                f"{type(tokenizer).__name__}"
            )
        ids = _encode(tokenizer, txt)
        if len(ids) < max_length + 1:
            raise ValueError(
                f"text too short for one window: it has {len(ids)} tokens, but max_length={max_length} needs "
                f"at least {max_length + 1} (max_length inputs + 1 next-token target); use a smaller max_length "
                "or a longer text"
            )
        self.token_ids = ids  # (n_tokens,) int64
        # (n_windows, max_length + 1): each row a strided view, no copy
        self.windows = self.token_ids.unfold(0, max_length + 1, stride)

    def __len__(self) -> int:
        return self.windows.shape[0]

    @property
    def input_ids(self) -> torch.Tensor:
        """All inputs as one ``(n_windows, max_length)`` view."""
        return self.windows[:, :-1]

    @property
    def target_ids(self) -> torch.Tensor:
        """All targets as one ``(n_windows, max_length)`` view."""
        return self.windows[:, 1:]

    def __getitem__(self, idx):
        """``(input_ids, target_ids)`` for window ``idx``; a slice or list of indices gives ``(n, max_length)`` each.

        Both are views into ``token_ids``: writing into them changes the dataset (clone them first).
        """
        window = self.windows[idx]  # (max_length + 1,) or (n, max_length + 1)
        return window[..., :-1], window[..., 1:]


def create_dataloader_v1(
    txt: str,
    batch_size: int = 4,
    max_length: int = 256,
    stride: int = 128,
    shuffle: bool = True,
    drop_last: bool = True,
    num_workers: int = 0,
) -> DataLoader:
    """A ``DataLoader`` of ``(inputs, targets)`` batches, each ``(batch_size, max_length)``, GPT-2 tokens."""
    batch_size = _checks.positive_int("batch_size", batch_size)
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or num_workers < 0:
        raise ValueError(f"num_workers must be an int >= 0, got {num_workers!r}")
    dataset = GPTDatasetV1(txt, gpt2_tokenizer(), max_length, stride)
    if drop_last and len(dataset) < batch_size:
        raise ValueError(
            f"only {len(dataset)} windows for batch_size={batch_size} with drop_last=True: every batch would be "
            "dropped; lower batch_size or stride, or pass drop_last=False"
        )
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, num_workers=num_workers)
