"""Induction heads: a tiny attention-only transformer, the repeated-random-tokens task it learns, and the measures.

Shape names: B batch, T tokens, L layers, nh heads, hs head size, d model width, V vocabulary size.

A language model can only predict a random token if it has seen it before. In a sequence whose second part
repeats an earlier segment, the repeat is predictable by copying: at token ``i``, find the earlier copy of
token ``i`` and read the token that came after it. Two heads in two layers do this (an *induction circuit*):
a layer-0 *previous-token head* writes "the token before me" into every position, and a layer-1 *induction
head* whose keys read that information attends from ``i`` to the position right after the earlier copy.

    config = InductionConfig()                  # V=64, T=64, d=64, 2 layers of 4 heads
    model = AttentionOnlyTransformer(config)
    history = train(model, TrainSettings())     # 700 steps on the CPU; induction forms after a few hundred
    probe = repeated_sequences(32, config)      # (32, T): random first half, second half a copy
    logits, weights = model(probe, return_attn_weights=True)   # weights: (B, L, nh, T, T)
    induction_scores(weights)                   # (L, nh)

Everything here runs on the CPU with fixed seeds; every random draw uses its own ``torch.Generator``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..multihead import FusedMultiHeadAttention
from .copy_data import CopyTask, copy_batch, repeat_batch, repeated_sequences, split_losses

SIZES = ("vocab_size", "context_length", "d_model", "num_heads", "num_layers")


@dataclass(frozen=True)
class InductionConfig:
    """Sizes of :class:`AttentionOnlyTransformer` (and of the sequences it is trained on)."""

    vocab_size: int = 64
    context_length: int = 64
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2

    def __post_init__(self):
        for name in SIZES:  # a subclass may add fields of other kinds (positions.PositionConfig)
            _checks.positive_int(name, getattr(self, name))
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
        self.pos_emb = self._position_table(config)  # (T, d) learned; None where positions come another way
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(config.num_layers))
        self.attn = nn.ModuleList(self._attention(config) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(d)
        self.unembed = nn.Linear(d, config.vocab_size, bias=False)
        for attn in self.attn:
            # the heads to zero live on the out_proj they act on (a copy of the model carries its own)
            attn.out_proj.ablated_heads = []
            attn.out_proj.head_size = d // config.num_heads
            attn.out_proj.register_forward_pre_hook(_zero_heads)

    def _position_table(self, config: InductionConfig) -> nn.Embedding | None:
        """The learned absolute position table, one row per position (:mod:`.positions` overrides it)."""
        return nn.Embedding(config.context_length, config.d_model)

    def _attention(self, config: InductionConfig) -> FusedMultiHeadAttention:
        """One layer's heads (:mod:`.positions` overrides it)."""
        return FusedMultiHeadAttention(config.d_model, config.d_model, config.context_length, 0.0, config.num_heads)

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids -> the residual stream's start ``(B, T, d)``: token plus position embedding."""
        return self.tok_emb(ids) + self.pos_emb(torch.arange(ids.shape[1], device=ids.device))

    def _check_ids(self, ids) -> None:
        _check_ids(ids, self.config)

    def forward(self, ids: torch.Tensor, return_attn_weights: bool = False, ablate=()):
        _checks.flag("return_attn_weights", return_attn_weights)
        self._check_ids(ids)
        plan = _ablation_plan(ablate, self.config)
        for layer, attn in enumerate(self.attn):
            attn.out_proj.ablated_heads = plan.get(layer, [])
        try:
            x = self._embed(ids)  # (B, T, d)
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
            for attn in self.attn:
                attn.out_proj.ablated_heads = []
        return (logits, torch.stack(weights, dim=1)) if return_attn_weights else logits  # weights: (B, L, nh, T, T)


def _zero_heads(out_proj, args):
    """``out_proj``'s forward pre-hook: zero the features of the heads in ``out_proj.ablated_heads``."""
    if not out_proj.ablated_heads:
        return None
    (context_vec,) = args  # (B, T, nh * hs): the heads' outputs side by side, before out_proj
    hs = out_proj.head_size
    keep = torch.ones(context_vec.shape[-1], dtype=context_vec.dtype, device=context_vec.device)
    for h in out_proj.ablated_heads:
        keep[h * hs : (h + 1) * hs] = 0.0
    return (context_vec * keep,)


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

    steps: int = 700
    batch_size: int = 32
    lr: float = 5e-3
    decay_from: int = 400
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


@torch.no_grad()
def measure(model: AttentionOnlyTransformer, probe: torch.Tensor, ablate=()) -> dict:
    """Losses and scores of ``model`` on ``probe`` ``(B, T)`` (a segment told twice: :func:`repeated_sequences`):
    ``copyable`` and ``other`` losses (floats) and the ``previous`` and ``induction`` scores ``(L, nh)``."""
    was_training = model.training
    model.eval()
    logits, weights = model(probe, return_attn_weights=True, ablate=ablate)
    model.train(was_training)
    losses = split_losses(logits, probe)
    return {
        "copyable": losses["copyable"],
        "other": losses["other"],
        "previous": previous_token_scores(weights),
        "induction": induction_scores(weights),
    }


def train(
    model: AttentionOnlyTransformer,
    settings: TrainSettings = TrainSettings(),
    progress: Callable[[int, dict, float], None] | None = None,
) -> History:
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
