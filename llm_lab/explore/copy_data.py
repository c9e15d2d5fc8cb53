"""Notebook 08's data: random tokens with copies placed anywhere (:class:`CopyTask`, :func:`copy_batch`), the fixed
layout most demos train on (:func:`repeat_batch`), the probes (:data:`PROBES`, :func:`probe_batch`,
:func:`repeated_sequences`), and which predictions a copier can make (:func:`copyable`, :func:`split_losses`,
:func:`half_losses`, :func:`first_half_losses`).

Notebook 08 and :mod:`llm_lab.explore.induction` import the data from here; this module needs of a model only its
sizes (:class:`Sizes`: an ``induction.InductionConfig`` has them), so it imports nothing of the model.
Every random draw uses the ``torch.Generator`` it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from .. import _checks


class Sizes(Protocol):
    """What the data needs to know of a model: its vocabulary and its context (``induction.InductionConfig``)."""

    vocab_size: int
    context_length: int


# ---- the data: random tokens, then a repeat -------------------------------------------------------------------


def repeat_batch(batch_size: int, config: Sizes, generator: torch.Generator, min_offset: int = 4):
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


def repeated_sequences(batch_size: int, config: Sizes, seed: int = 0) -> torch.Tensor:
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
    tokens before the copy starts. A share ``end_share`` of the rows also ends inside a short pattern (the last
    ``min_run .. min_run + 5`` tokens repeat from 2 or 3 back), so that the keys of the last rows are read
    often enough to learn from. Rows where a run of ``min_told_twice`` or more tokens is followed at once by
    itself are drawn again, so that placement (a segment told twice in a row, as in :data:`PROBES`) never occurs
    in training.
    """

    copy_rate: float = 0.25
    min_run: int = 4
    max_run: int = 16
    short_share: float = 0.5
    max_gap: int = 24
    min_told_twice: int = 8
    end_share: float = 0.7

    def __post_init__(self):
        if not (isinstance(self.copy_rate, float) and 0.0 < self.copy_rate < 1.0):
            raise ValueError(f"copy_rate={self.copy_rate!r} must be a float in (0, 1)")
        for name in ("short_share", "end_share"):
            value = getattr(self, name)
            if not (isinstance(value, float) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name}={value!r} must be a float in [0, 1]")
        for name in ("min_run", "max_run", "max_gap", "min_told_twice"):
            _checks.positive_int(name, getattr(self, name))
        if self.min_run > self.max_run:
            raise ValueError(f"min_run={self.min_run} must not exceed max_run={self.max_run}")
        if self.min_run + 8 >= 2 * self.min_told_twice:
            raise ValueError(
                f"min_run={self.min_run} and min_told_twice={self.min_told_twice}: the end pattern (3 back, up to "
                f"min_run + 5 tokens) must stay under 2 * min_told_twice tokens: min_run < 2 * min_told_twice - 8"
            )


def copy_batch(batch_size: int, config: Sizes, generator: torch.Generator, task: CopyTask = CopyTask()) -> torch.Tensor:
    """Training sequences ``(B, T)``: random tokens with copied runs wherever :class:`CopyTask` puts them.

    Copies start anywhere, copy from anywhere before, and have any length in the task's range, so no position
    tells where a copy is: only the content does. The draws come from ``generator`` alone.
    """
    _checks.positive_int("batch_size", batch_size)
    if not isinstance(task, CopyTask):
        raise TypeError(f"task must be a CopyTask, got {type(task).__name__}")
    out = np.empty((batch_size, config.context_length), dtype=np.int64)
    todo = np.arange(batch_size)
    while len(todo):
        ids = _with_copies(len(todo), config, generator, task)
        bad = _told_twice(ids, task.min_told_twice)  # (n,): rows that hold a segment told twice in a row
        out[todo[~bad]] = ids[~bad]
        todo = todo[bad]
    return torch.from_numpy(out)


def _with_copies(n: int, config: Sizes, g: torch.Generator, task: CopyTask) -> np.ndarray:
    """The scan of :class:`CopyTask` for ``n`` rows at once, one copy per step (each row's copies follow each
    other left to right, so a copy may repeat an earlier copy). The draws come from ``g``; the bookkeeping is
    NumPy's, whose small operations cost a microsecond where torch's cost ten."""
    t = config.context_length
    ids = torch.randint(0, config.vocab_size, (n, t), generator=g).numpy()  # (n, T), shares torch's memory
    start, u_len, u_kind, u_off = torch.rand(t, 4, n, generator=g, dtype=torch.float64).numpy().transpose(1, 0, 2)
    ends = torch.rand(3, n, generator=g, dtype=torch.float64).numpy()  # the end pattern: whether, how far back, length
    gaps = np.floor(np.log1p(-start) / math.log1p(-task.copy_rate)).astype(np.int64)  # (T, n): geometric gaps
    runs = task.min_run + (u_len * (task.max_run - task.min_run + 1)).astype(np.int64)  # (T, n): run lengths
    shorts = u_kind < task.short_share  # (T, n): the copy repeats a short pattern
    at = np.full(n, 2)  # (n,): where each row's scan stands
    for step in range(t):  # each step places a copy or moves past a refused one
        at = at + gaps[step]
        if not (at < t - 1).any():
            break
        length = np.minimum(runs[step], t - at)
        short, off = shorts[step], u_off[step]
        short_back = 2 + (off * np.minimum(at - 1, 6)).astype(np.int64)
        long_back = length + 1 + (off * np.clip(at - length, 0, task.max_gap)).astype(np.int64)
        back = np.where(short, short_back, long_back)  # (n,): how far back the source starts
        length = np.where(short, np.minimum(length, 2 * task.min_told_twice - 1 - short_back), length)
        place = (at < t - 1) & (short | (at >= length + 1))  # (n,): a long copy needs room for its source
        _copy(ids, at, length, back, place, task.max_run)
        at = at + np.where(place, length + 1, 1)
    length = task.min_run + (ends[2] * 6).astype(np.int64)  # (n,): the last min_run .. min_run + 5 tokens
    _copy(ids, t - length, length, 2 + (ends[1] < 0.5), ends[0] < task.end_share, task.min_run + 5)
    return ids


def _copy(ids, at, length, back, place, width):
    """In rows where ``place``: ``ids[at + k] = ids[at - back + k % back]`` for ``k < length`` (a run ``back``
    tokens back; an overlapping one, ``back < length``, repeats its pattern as a left-to-right copy would)."""
    k = np.arange(width)  # (width,)
    keep = place[:, None] & (k < length[:, None]) & (at[:, None] + k < ids.shape[1])  # (n, width)
    row, col = np.nonzero(keep)
    if len(row):
        step = col % np.maximum(back[row], 1)
        ids[row, at[row] + col] = ids[row, at[row] - back[row] + step]


def _told_twice(ids: np.ndarray, min_length: int) -> np.ndarray:
    """:func:`told_twice` on a NumPy ``(n, T)`` array (``copy_batch``'s check, where torch's overhead dominates)."""
    n, t = ids.shape
    bad = np.zeros(n, dtype=bool)
    for d in range(min_length, t // 2 + 1):  # x[i : i+d] == x[i+d : i+2d] for some i
        same = np.zeros((n, t - d + 1), dtype=np.int64)
        np.cumsum(ids[:, d:] == ids[:, :-d], axis=1, out=same[:, 1:])  # equal pairs before each i
        bad |= (same[:, d : t - d + 1] - same[:, : t - 2 * d + 1] == d).any(axis=1)
    return bad


def told_twice(ids: torch.Tensor, min_length: int) -> torch.Tensor:
    """``(B, T)`` -> ``(B,)`` bool: the row holds a run of ``min_length`` or more tokens followed at once by itself."""
    _checks.positive_int("min_length", min_length)
    t = ids.shape[1]
    if min_length > t // 2:  # no run that long fits twice
        return torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    d = torch.arange(min_length, t // 2 + 1, device=ids.device)[:, None]  # (nd, 1): the run lengths to try
    i = torch.arange(t, device=ids.device)  # (T,)
    ahead = i + d  # (nd, T)
    same = (ids[:, ahead.clamp(max=t - 1)] == ids[:, None, :]) & (ahead < t)  # (B, nd, T): x[i + d] == x[i]
    runs = F.pad(same.int().cumsum(dim=-1), (1, 0))  # (B, nd, T + 1): equal pairs before each position
    count = runs.gather(-1, ahead.clamp(max=t).expand(ids.shape[0], -1, -1)) - runs[..., :t]  # equal in i .. i+d-1
    return (count == d).any(dim=(1, 2))  # d equal in a row: x[i : i+d] == x[i+d : i+2d]


PROBES = {
    "0-31 told again at 32-63": (0, 32),
    "4-17 told again at 18-31": (4, 14),
    "40-51 told again at 52-63": (40, 12),
}
"""Probe placements ``name: (start, length)``: random tokens, and the segment at ``start`` told again right after
itself. Training never holds a segment of 8 or more tokens told twice in a row (:class:`CopyTask`), so each of
these is a placement the model never saw; the first is also longer than any planted run (16) and than any stretch
that repeats one fixed distance back in notebook 08's 2,000 training rows (21: ``distance.longest_stretches``)."""


def probe_batch(batch_size: int, config: Sizes, start: int, length: int, seed: int = 0) -> torch.Tensor:
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


def first_half_losses(logits: torch.Tensor, ids: torch.Tensor) -> dict:
    """Mean next-token loss (float64) on the first-half predictions ``i = 0 .. T/2 - 2`` of ``ids`` ``(B, T)``, as in
    :func:`half_losses`: ``"all"``; ``"chance match"``, those whose current token ``ids[i]`` occurred earlier in the
    row while the pair ``(ids[i], ids[i + 1])`` did not (a copier bets there and loses); ``"no earlier occurrence"``,
    those whose current token is new. ``nan`` where a group is empty."""
    can = copyable(ids)  # checks ids
    if logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise ValueError(f"logits must be (B, T, V) for ids {tuple(ids.shape)}, got {tuple(logits.shape)}")
    t = ids.shape[1]
    if t < 4:
        raise ValueError(f"ids must have at least 4 tokens for a first half with a prediction, got T={t}")
    cur = ids[:, :-1]  # (B, T - 1)
    earlier = torch.ones(t - 1, t - 1, dtype=torch.bool, device=ids.device).tril(-1)
    seen = ((cur[:, :, None] == cur[:, None, :]) & earlier).any(dim=-1)  # (B, T - 1): ids[i] occurred before
    loss = F.cross_entropy(logits.detach()[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none")
    half = slice(0, t // 2 - 1)
    loss, seen, can = loss[:, half], seen[:, half], can[:, half]
    groups = {"all": torch.ones_like(seen), "chance match": seen & ~can, "no earlier occurrence": ~seen}
    return {name: float(loss[m].mean()) if m.any() else float("nan") for name, m in groups.items()}


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
