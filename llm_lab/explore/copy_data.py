"""Notebook 08's data: random tokens with copies placed anywhere (:class:`CopyTask`, :func:`copy_batch`), the fixed
layout most demos train on (:func:`repeat_batch`), the probes (:data:`PROBES`, :func:`probe_batch`,
:func:`repeated_sequences`), and which predictions a copier can make (:func:`copyable`, :func:`split_losses`).

:mod:`llm_lab.explore.induction` re-exports every public name here, so ``induction.copy_batch`` is this function.
Every random draw uses the ``torch.Generator`` it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from .. import _checks

if TYPE_CHECKING:
    from .induction import InductionConfig


# ---- the data: random tokens, then a repeat -------------------------------------------------------------------


def repeat_batch(batch_size: int, config: InductionConfig, generator: torch.Generator, min_offset: int = 4):
    """Training sequences ``(B, T)`` and their repeat offsets ``(B,)``.

    The first half of each sequence is random tokens. In the second half every token copies the token
    ``n`` places back, ``x[i] = x[i - n]`` for ``i >= T/2``, with the offset ``n`` drawn from
    ``min_offset .. T/2`` per sequence (``n = T/2``: the first half once more; smaller ``n``: its last ``n``
    tokens over and over). Because ``n`` changes from sequence to sequence, no head can find the earlier copy
    by position alone: it has to find it by content.
    """
    _checks.positive_int("batch_size", batch_size)
    t = config.context_length
    if not (isinstance(min_offset, int) and 1 <= min_offset <= t // 2):
        raise ValueError(f"min_offset={min_offset!r} must be an int between 1 and context_length // 2 = {t // 2}")
    ids = torch.randint(0, config.vocab_size, (batch_size, t), generator=generator)
    offsets = torch.randint(min_offset, t // 2 + 1, (batch_size,), generator=generator)  # (B,)
    for i in range(t // 2, t):  # left to right, so a copy of a copy is already in place
        ids[:, i] = ids[torch.arange(batch_size), i - offsets]
    return ids, offsets


def repeated_sequences(batch_size: int, config: InductionConfig, seed: int = 0) -> torch.Tensor:
    """The probe ``(B, T)``: ``T // 2`` random tokens, then the same ``T // 2`` tokens again."""
    g = torch.Generator().manual_seed(seed)
    half = torch.randint(
        0, config.vocab_size, (_checks.positive_int("batch_size", batch_size), config.context_length // 2), generator=g
    )
    return torch.cat([half, half], dim=1)


@dataclass(frozen=True)
class CopyTask:
    """Where :func:`copy_batch` puts its copies. Scanning left to right, a copy starts at a position with
    probability ``copy_rate``: a run of ``min_run .. max_run`` tokens repeats tokens from earlier in the row. A
    share ``short_share`` of the copies repeat from 2 to 7 tokens back (overlapping: a short pattern again and
    again, over fewer than ``2 * min_told_twice`` tokens); the others copy a run that ended 1 to ``max_gap``
    tokens before the copy starts. Rows where a run of ``min_told_twice`` or more tokens is followed at once by
    itself are drawn again, so that placement (a segment told twice in a row, as in :data:`PROBES`) never occurs
    in training.
    """

    copy_rate: float = 0.25
    min_run: int = 4
    max_run: int = 16
    short_share: float = 0.5
    max_gap: int = 24
    min_told_twice: int = 8

    def __post_init__(self):
        if not (isinstance(self.copy_rate, float) and 0.0 < self.copy_rate < 1.0):
            raise ValueError(f"copy_rate={self.copy_rate!r} must be a float in (0, 1)")
        if not (isinstance(self.short_share, float) and 0.0 <= self.short_share <= 1.0):
            raise ValueError(f"short_share={self.short_share!r} must be a float in [0, 1]")
        for name in ("min_run", "max_run", "max_gap", "min_told_twice"):
            _checks.positive_int(name, getattr(self, name))
        if self.min_run > self.max_run:
            raise ValueError(f"min_run={self.min_run} must not exceed max_run={self.max_run}")


def copy_batch(
    batch_size: int, config: InductionConfig, generator: torch.Generator, task: CopyTask = CopyTask()
) -> torch.Tensor:
    """Training sequences ``(B, T)``: random tokens with copied runs wherever :class:`CopyTask` puts them.

    Copies start anywhere, copy from anywhere before, and have any length in the task's range, so no position
    tells where a copy is: only the content does. The draws come from ``generator`` alone.
    """
    _checks.positive_int("batch_size", batch_size)
    if not isinstance(task, CopyTask):
        raise TypeError(f"task must be a CopyTask, got {type(task).__name__}")
    out = torch.empty(batch_size, config.context_length, dtype=torch.long)
    todo = torch.arange(batch_size)
    while len(todo):
        ids = _with_copies(len(todo), config, generator, task)
        bad = told_twice(ids, task.min_told_twice)  # (n,): rows that hold a segment told twice in a row
        out[todo[~bad]] = ids[~bad]
        todo = todo[bad]
    return out


def _with_copies(n: int, config: InductionConfig, g: torch.Generator, task: CopyTask) -> torch.Tensor:
    t = config.context_length
    rows = torch.randint(0, config.vocab_size, (n, t), generator=g).tolist()
    draws = torch.rand(n, t, 4, generator=g).tolist()  # per position: start?, length, kind, offset
    span = task.max_run - task.min_run + 1
    for x, row_draws in zip(rows, draws, strict=True):
        i = 2
        while i < t - 1:
            start, u_len, u_kind, u_off = row_draws[i]
            length = min(task.min_run + int(u_len * span), t - i)
            short = u_kind < task.short_share
            if start >= task.copy_rate or (not short and i < length + 1):
                i += 1
                continue
            # the offset back to the source: 2 .. 7 (overlapping), or the run's length plus a gap of 1 .. max_gap
            d = 2 + int(u_off * min(6, i - 1)) if short else length + 1 + int(u_off * min(task.max_gap, i - length))
            if short:  # a pattern of d tokens repeated over d + length < 2 * min_told_twice tokens is never told twice
                length = min(length, 2 * task.min_told_twice - 1 - d)
            for k in range(length):
                x[i + k] = x[i + k - d]
            i += length + 1
    return torch.tensor(rows)


def told_twice(ids: torch.Tensor, min_length: int) -> torch.Tensor:
    """``(B, T)`` -> ``(B,)`` bool: the row holds a run of ``min_length`` or more tokens followed at once by itself."""
    _checks.positive_int("min_length", min_length)
    found = torch.zeros(ids.shape[0], dtype=torch.bool)
    for d in range(min_length, ids.shape[1] // 2 + 1):
        same = (ids[:, d:] == ids[:, :-d]).int()  # (B, T - d): x[i + d] == x[i]
        runs = F.pad(same.cumsum(dim=1), (1, 0))
        found |= ((runs[:, d:] - runs[:, :-d]) == d).any(dim=1)  # d equal in a row: x[i : i+d] == x[i+d : i+2d]
    return found


PROBES = {
    "0-31 told again at 32-63": (0, 32),
    "4-17 told again at 18-31": (4, 14),
    "40-51 told again at 52-63": (40, 12),
}
"""Probe placements ``name: (start, length)``: random tokens, and the segment at ``start`` told again right after
itself. Training never holds a segment of 8 or more tokens told twice in a row (:class:`CopyTask`), so each of
these is a placement the model never saw; the first is also longer than any copied run (16)."""


def probe_batch(batch_size: int, config: InductionConfig, start: int, length: int, seed: int = 0) -> torch.Tensor:
    """``(B, T)`` random tokens (drawn with ``seed``); tokens ``start .. start+length-1`` are told again at once."""
    _checks.positive_int("batch_size", batch_size)
    t = config.context_length
    if not (
        isinstance(start, int) and isinstance(length, int) and start >= 0 and length >= 1 and start + 2 * length <= t
    ):
        raise ValueError(
            f"start={start!r}, length={length!r}: the segment and its repeat must fit in "
            f"context_length={t} (start >= 0, length >= 1, start + 2 * length <= {t})"
        )
    ids = torch.randint(0, config.vocab_size, (batch_size, t), generator=torch.Generator().manual_seed(seed))
    ids[:, start + length : start + 2 * length] = ids[:, start : start + length]
    return ids


def half_losses(logits: torch.Tensor, ids: torch.Tensor) -> tuple[float, float]:
    """Mean next-token loss on the fixed-layout probe: predictions inside the first half, and inside the repeated
    half.

    Position ``i`` predicts token ``i + 1``. First half: ``i = 0 .. T/2 - 2`` (random targets). Repeated half:
    ``i = T/2 .. T - 2`` (targets an induction head can copy). The prediction of the first repeated token
    (``i = T/2 - 1``) belongs to neither: it is random too, nothing before it says the repeat starts there.
    """
    t = ids.shape[1]
    loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (B, T - 1)
    return float(loss[:, : t // 2 - 1].mean()), float(loss[:, t // 2 :].mean())


# ---- what a copier can predict -------------------------------------------------------------------------------


def copyable(ids: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` ids -> ``(B, T - 1)`` bool: position ``i``'s target ``ids[i + 1]`` can be copied, that is, some
    earlier ``j < i`` has ``ids[j] == ids[i]`` and ``ids[j + 1] == ids[i + 1]``."""
    _checks.tensor("ids", ids)
    if ids.dim() != 2 or ids.dtype != torch.long or ids.shape[1] < 2:
        raise ValueError(
            f"ids must be a (B, T) tensor of int64 token ids with T >= 2, got {ids.dtype} {tuple(ids.shape)}"
        )
    cur, nxt = ids[:, :-1], ids[:, 1:]  # (B, T - 1): the pair at each position
    same = (cur[:, :, None] == cur[:, None, :]) & (nxt[:, :, None] == nxt[:, None, :])  # (B, i, j)
    earlier = torch.ones(same.shape[-1], same.shape[-1], dtype=torch.bool, device=ids.device).tril(-1)
    return (same & earlier).any(dim=-1)


def split_losses(logits: torch.Tensor, ids: torch.Tensor) -> dict:
    """Mean next-token loss (float64) on the predictions a copier can make and on all the others, with counts."""
    can = copyable(ids)
    if logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise ValueError(f"logits must be (B, T, V) for ids {tuple(ids.shape)}, got {tuple(logits.shape)}")
    loss = F.cross_entropy(logits.detach()[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none")
    return {
        "copyable": float(loss[can].mean()),
        "other": float(loss[~can].mean()),
        "n_copyable": int(can.sum()),
        "n_other": int((~can).sum()),
    }
