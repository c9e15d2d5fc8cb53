"""Induction heads: a tiny attention-only transformer, the repeated-random-tokens task it learns, and the measures.

Shape names: B batch, T tokens, L layers, nh heads, hs head size, d model width, V vocabulary size.

A language model can only predict a random token if it has seen it before. In a sequence whose second part
repeats an earlier segment, the repeat is predictable by copying: at token ``i``, find the earlier copy of
token ``i`` and read the token that came after it. Two heads in two layers do this (an *induction circuit*):
a layer-0 *previous-token head* writes "the token before me" into every position, and a layer-1 *induction
head* whose keys read that information attends from ``i`` to the position right after the earlier copy.

    config = InductionConfig()                  # V=64, T=64, d=64, 2 layers of 4 heads
    model = AttentionOnlyTransformer(config)
    history = train(model, TrainSettings())     # 1,000 steps on the CPU; induction forms after a few hundred
    probe = repeated_sequences(32, config)      # (32, T): random first half, second half a copy
    logits, weights = model(probe, return_attn_weights=True)   # weights: (B, L, nh, T, T)
    induction_scores(weights)                   # (L, nh)

Everything here runs on the CPU with fixed seeds; every random draw uses its own ``torch.Generator``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..multihead import FusedMultiHeadAttention


@dataclass(frozen=True)
class InductionConfig:
    """Sizes of :class:`AttentionOnlyTransformer` (and of the sequences it is trained on)."""

    vocab_size: int = 64
    context_length: int = 64
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2

    def __post_init__(self):
        for name, value in asdict(self).items():
            _checks.positive_int(name, value)
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")
        if self.context_length % 2:
            raise ValueError(f"context_length={self.context_length} must be even: the probe repeats its first half")


class AttentionOnlyTransformer(nn.Module):
    """Token + position embeddings, ``num_layers`` x (LayerNorm, :class:`~llm_lab.MultiHeadAttention`, residual
    add), a final LayerNorm and an unembedding to ``vocab_size`` logits. The attention modules are
    :class:`~llm_lab.FusedMultiHeadAttention` (the same parameters): without ``return_attn_weights`` they run the
    fused kernel, which makes training faster; with it, the explicit path that keeps the weights. No feed-forward
    blocks: the heads are the only place where one position reads another.

    ``forward(ids, return_attn_weights=False, ablate=())``: ids ``(B, T)`` -> logits ``(B, T, V)``; with
    ``return_attn_weights=True`` also the weights ``(B, L, nh, T, T)``. ``ablate``: ``(layer, head)`` pairs whose
    output is set to zero before the layer's ``out_proj`` (zero ablation: the head still computes, but
    nothing it finds reaches the residual stream).
    """

    def __init__(self, config: InductionConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.tok_emb = nn.Embedding(config.vocab_size, d)
        self.pos_emb = nn.Embedding(config.context_length, d)
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(config.num_layers))
        self.attn = nn.ModuleList(
            FusedMultiHeadAttention(d, d, config.context_length, 0.0, config.num_heads)
            for _ in range(config.num_layers)
        )
        self.final_norm = nn.LayerNorm(d)
        self.unembed = nn.Linear(d, config.vocab_size, bias=False)
        self._ablated: dict[int, list[int]] = {}
        for layer, attn in enumerate(self.attn):
            attn.out_proj.register_forward_pre_hook(self._zero_heads_hook(layer))

    def _zero_heads_hook(self, layer: int):
        hs = self.config.d_model // self.config.num_heads

        def hook(module, args):
            heads = self._ablated.get(layer)
            if not heads:
                return None
            (context_vec,) = args  # (B, T, nh * hs): the heads' outputs side by side, before out_proj
            keep = torch.ones(context_vec.shape[-1], dtype=context_vec.dtype, device=context_vec.device)
            for h in heads:
                keep[h * hs : (h + 1) * hs] = 0.0
            return (context_vec * keep,)

        return hook

    def forward(self, ids: torch.Tensor, return_attn_weights: bool = False, ablate=()):
        _checks.flag("return_attn_weights", return_attn_weights)
        _check_ids(ids, self.config)
        self._ablated = _ablation_plan(ablate, self.config)
        try:
            x = self.tok_emb(ids) + self.pos_emb(torch.arange(ids.shape[1], device=ids.device))  # (B, T, d)
            weights = []
            for norm, attn in zip(self.norms, self.attn, strict=True):
                if not return_attn_weights:  # the fused kernel: no (T, T) weights kept, training ~25 % faster
                    x = x + attn(norm(x))
                    continue
                out, w = attn(norm(x), return_attn_weights=True)  # (B, T, d), (B, nh, T, T)
                x = x + out  # the residual stream: each layer adds what its heads found
                weights.append(w)
            logits = self.unembed(self.final_norm(x))  # (B, T, V)
        finally:
            self._ablated = {}
        return (logits, torch.stack(weights, dim=1)) if return_attn_weights else logits  # weights: (B, L, nh, T, T)


def _check_ids(ids, config: InductionConfig) -> None:
    _checks.token_ids(ids, config.vocab_size, config.context_length)


def _ablation_plan(ablate, config: InductionConfig) -> dict[int, list[int]]:
    plan: dict[int, list[int]] = {}
    for pair in ablate:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"ablate takes (layer, head) pairs, got {pair!r}")
        layer, head = pair
        if not (isinstance(layer, int) and 0 <= layer < config.num_layers):
            raise ValueError(f"layer={layer!r} in ablate must be an int in [0, {config.num_layers})")
        if not (isinstance(head, int) and 0 <= head < config.num_heads):
            raise ValueError(f"head={head!r} in ablate must be an int in [0, {config.num_heads})")
        plan.setdefault(layer, []).append(head)
    return plan


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
    half = torch.randint(0, config.vocab_size, (_checks.positive_int("batch_size", batch_size),
                                                config.context_length // 2), generator=g)
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


def copy_batch(batch_size: int, config: InductionConfig, generator: torch.Generator,
               task: CopyTask = CopyTask()) -> torch.Tensor:
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
    if not (isinstance(start, int) and isinstance(length, int) and start >= 0 and length >= 1
            and start + 2 * length <= t):
        raise ValueError(f"start={start!r}, length={length!r}: the segment and its repeat must fit in "
                         f"context_length={t} (start >= 0, length >= 1, start + 2 * length <= {t})")
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


# ---- what the heads do ------------------------------------------------------------------------------------------


def _probe_weights(attn_weights: torch.Tensor) -> int:
    _checks.tensor("attn_weights", attn_weights)
    t = attn_weights.shape[-1] if attn_weights.dim() else 0
    if attn_weights.dim() not in (4, 5) or attn_weights.shape[-2] != t or t < 4:
        raise ValueError(
            "attn_weights must have shape (B, L, nh, T, T) or, for one sequence, (L, nh, T, T), with T >= 4; "
            f"got {tuple(attn_weights.shape)}"
        )
    if t % 2:
        raise ValueError(f"the probe repeats its first half, so T must be even, got T={t}")
    return t


def previous_token_scores(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on token ``i - 1``, rows ``i = 1 .. T - 1``: ``(B, L, nh, T, T) -> (L, nh)``.

    One sequence, ``(L, nh, T, T)``, gives ``(L, nh)`` too.
    """
    t = _probe_weights(attn_weights)
    rows = torch.arange(1, t, device=attn_weights.device)
    per_row = attn_weights[..., rows, rows - 1]  # (..., nh, T - 1)
    return _mean_rows(per_row)


def induction_scores(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on the token after the earlier copy, on the probe: ``(B, L, nh, T, T) -> (L, nh)``.

    In the repeated half (rows ``i = T/2 .. T - 1``) token ``i`` is a copy of token ``i - T/2``; the token that
    followed that copy sits at ``j = i - T/2 + 1``. One sequence, ``(L, nh, T, T)``, gives ``(L, nh)`` too.
    """
    t = _probe_weights(attn_weights)
    rows = torch.arange(t // 2, t, device=attn_weights.device)
    per_row = attn_weights[..., rows, rows - t // 2 + 1]  # (..., nh, T/2)
    return _mean_rows(per_row)


def _mean_rows(per_row: torch.Tensor) -> torch.Tensor:
    # (B, L, nh, rows) -> (L, nh): mean over the rows and the batch; (L, nh, rows) -> (L, nh): one sequence
    return per_row.mean(dim=-1).mean(dim=0) if per_row.dim() == 4 else per_row.mean(dim=-1)


def even_scores(num_tokens: int) -> dict[str, float]:
    """The two scores of a head that spreads its weight evenly over the visible tokens (row ``i``: ``1/(i+1)``)."""
    t = _checks.positive_int("num_tokens", num_tokens)
    previous = sum(1 / (i + 1) for i in range(1, t)) / (t - 1)
    induction = sum(1 / (i + 1) for i in range(t // 2, t)) / (t - t // 2)
    return {"previous token": previous, "induction": induction}


# ---- training ------------------------------------------------------------------------------------------------


DATA = ("copies", "fixed start")


@dataclass(frozen=True)
class TrainSettings:
    """How :func:`train` trains: AdamW, ``steps`` batches of ``batch_size`` sequences, the learning rate ``lr``
    constant for the first ``decay_from`` steps (the induction circuit forms there), then decaying along a half
    cosine to ``lr * final_lr_ratio`` (so the model settles); the probe measured every ``measure_every`` steps.
    ``data``: ``"copies"`` (:func:`copy_batch` with ``task``: copies anywhere) or ``"fixed start"``
    (:func:`repeat_batch`: the repeat always starts at ``T/2``, the layout that teaches a shortcut).
    ``seed`` fixes the data stream (the model's initial weights come from ``torch.manual_seed`` before it is
    built). ``threads``: torch threads while training (one is enough for this model and keeps it off the other
    core)."""

    steps: int = 1000
    batch_size: int = 32
    lr: float = 5e-3
    decay_from: int = 600
    final_lr_ratio: float = 0.1
    weight_decay: float = 0.0
    seed: int = 0
    measure_every: int = 20
    probe_size: int = 32
    threads: int = 1
    data: str = "copies"
    task: CopyTask = CopyTask()

    def __post_init__(self):
        if self.data not in DATA:
            raise ValueError(f"data={self.data!r} must be one of {DATA}")
        for name in ("steps", "batch_size", "measure_every", "probe_size", "threads"):
            _checks.positive_int(name, getattr(self, name))

    def batch(self, config: InductionConfig, generator: torch.Generator) -> torch.Tensor:
        """One training batch ``(batch_size, T)`` drawn from ``generator``."""
        if self.data == "copies":
            return copy_batch(self.batch_size, config, generator, self.task)
        return repeat_batch(self.batch_size, config, generator)[0]


@dataclass
class History:
    """What :func:`train` measured on the probe: one entry per measurement, at ``steps``.

    ``copyable``, ``other``: losses (floats) on the predictions a copier can make and on the rest
    (:func:`split_losses`); ``previous``, ``induction``: ``(n, L, nh)`` scores; ``train_loss``: the training loss
    of every step; ``seconds``: wall time of the whole run.
    """

    steps: list = field(default_factory=list)
    copyable: list = field(default_factory=list)
    other: list = field(default_factory=list)
    previous: list = field(default_factory=list)
    induction: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    seconds: float = 0.0

    def scores(self, name: str) -> torch.Tensor:
        """``"previous"`` or ``"induction"`` scores stacked: ``(n, L, nh)``."""
        if name not in ("previous", "induction"):
            raise ValueError(f"name must be 'previous' or 'induction', got {name!r}")
        return torch.stack(getattr(self, name))


def copyable(ids: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` ids -> ``(B, T - 1)`` bool: position ``i``'s target ``ids[i + 1]`` can be copied, that is, some
    earlier ``j < i`` has ``ids[j] == ids[i]`` and ``ids[j + 1] == ids[i + 1]``."""
    _checks.tensor("ids", ids)
    if ids.dim() != 2 or ids.dtype != torch.long or ids.shape[1] < 2:
        raise ValueError(f"ids must be a (B, T) tensor of int64 token ids with T >= 2, got {ids.dtype} "
                         f"{tuple(ids.shape)}")
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
    return {"copyable": float(loss[can].mean()), "other": float(loss[~can].mean()),
            "n_copyable": int(can.sum()), "n_other": int((~can).sum())}


@torch.no_grad()
def measure(model: AttentionOnlyTransformer, probe: torch.Tensor, ablate=()) -> dict:
    """Losses and scores of ``model`` on ``probe`` ``(B, T)`` (a segment told twice: :func:`repeated_sequences`):
    ``copyable`` and ``other`` losses (floats) and the ``previous`` and ``induction`` scores ``(L, nh)``."""
    was_training = model.training
    model.eval()
    logits, weights = model(probe, return_attn_weights=True, ablate=ablate)
    model.train(was_training)
    losses = split_losses(logits, probe)
    return {"copyable": losses["copyable"], "other": losses["other"], "previous": previous_token_scores(weights),
            "induction": induction_scores(weights)}


def train(model: AttentionOnlyTransformer, settings: TrainSettings = TrainSettings(),
          progress: Callable[[int, dict, float], None] | None = None) -> History:
    """Train ``model`` in place on ``settings.batch`` sequences; measure the probe as it goes.

    The loop that notebook 08 writes out: batch, forward, cross-entropy of each position against the next
    token, backward, AdamW step, schedule step. Runs on the CPU with ``settings.threads`` threads (restored
    afterwards), the data drawn from its own generator (the global random stream is not touched), the probe a
    segment told twice (:func:`repeated_sequences`, seed ``settings.seed + 1``). ``progress(step, measured,
    seconds)`` is called at every measurement. Returns a :class:`History`.
    """
    if next(model.parameters()).device.type != "cpu":
        raise ValueError("train runs on the CPU (the same numbers on every machine); move the model with .cpu()")
    config = model.config
    threads = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    g = torch.Generator().manual_seed(settings.seed)
    probe = repeated_sequences(settings.probe_size, config, seed=settings.seed + 1)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, settings))
    history = History()
    start = time.perf_counter()
    try:
        model.train()
        for step in range(settings.steps + 1):
            if step % settings.measure_every == 0 or step == settings.steps:
                _record(history, step, measure(model, probe), progress, time.perf_counter() - start)
            if step == settings.steps:
                break
            ids = settings.batch(config, g)  # (B, T)
            logits = model(ids)  # (B, T, V)
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())  # i predicts i + 1
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            schedule.step()
            history.train_loss.append(float(loss.detach()))
    finally:
        torch.set_num_threads(threads)
        model.eval()
    history.seconds = time.perf_counter() - start
    return history


def _record(history: History, step: int, m: dict, progress, seconds: float) -> None:
    history.steps.append(step)
    for key in ("copyable", "other", "previous", "induction"):
        getattr(history, key).append(m[key])
    if progress is not None:
        progress(step, m, seconds)


def lr_factor(step: int, settings: TrainSettings) -> float:
    """The learning rate at ``step`` as a multiple of ``settings.lr``: 1, then a half cosine down to the final ratio."""
    if step <= settings.decay_from:
        return 1.0
    done = min(1.0, (step - settings.decay_from) / max(1, settings.steps - settings.decay_from))
    low = settings.final_lr_ratio
    return low + (1 - low) * 0.5 * (1 + math.cos(math.pi * done))


def uniform_loss(config: InductionConfig) -> float:
    """The loss of a uniform guess over the vocabulary: ``ln(V)``."""
    return math.log(config.vocab_size)
