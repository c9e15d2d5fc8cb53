"""Where attention gets its order: notebook 09's position schemes on notebook 08's model and task.

Shape names: B batch, T tokens, L layers, nh heads, hs head size, d model width, V vocabulary size.

Attention alone is blind to order; a model gets it from its *position scheme*. Four of them, a parameter of 08's
:class:`~llm_lab.explore.induction.AttentionOnlyTransformer` (:class:`PositionalTransformer` is that class with
its position hooks filled in; everything else, training included, is 08's code):

- ``"learned"``: 08's learned absolute table, one row per position (no row past the trained length);
- ``"sinusoidal"``: a fixed table added to the token embedding (:func:`sinusoidal_table`, Vaswani et al. 2017);
- ``"rope"``: rotary positions (:func:`apply_rope`, Su et al. 2021): every query and key rotated, pair by pair, by an
  angle proportional to its position, so that a score depends on positions only through the offset ``i - j``;
- ``"none"``: no positions; the causal mask is the only source of order;
- ``"alibi"`` (optional, Press et al. 2022): a fixed linear penalty ``-m_h (i - j)`` added to head ``h``'s scores.

**The RoPE convention used here is rotate-half** (GPT-NeoX, Llama in Hugging Face ``transformers``): feature ``k``
of a head pairs with feature ``k + hs/2``, and pair ``k`` turns at frequency ``base ** (-2k / hs)``. The other
convention, *interleaved* (RoFormer, GPT-J, notebook 07's cell), pairs features ``2k`` and ``2k + 1``; the two agree
up to a permutation of the features (:func:`interleaved_order`).

    config = PositionConfig(scheme="rope")           # 08's sizes, V = T = d = 64, 2 layers of 4 heads
    model = PositionalTransformer(config)
    induction.train(model, induction.TrainSettings())  # 08's training loop, unchanged
    model(ids_of_256_tokens)                         # runs past the trained length (not "learned": no rows)
    model(ids, window=64)                            # each query sees itself and the 63 keys before it

The formulas (the sinusoidal table, RoPE, ALiBi's bias, the window mask) live in :mod:`.position_codes` and are
re-exported here. :func:`train_schemes` trains several schemes the same way (same data, steps, seeds);
:func:`probe` measures a model at any length: the copy loss of an 8-token repeat at given distances beside two
one-token copiers' (count-proportional and recency-weighted), and the per-row previous-token weight of layer 0's
previous-token head.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..multihead import FusedMultiHeadAttention
from . import induction
from .distance import SWEEP_LENGTH, proportional_copier_losses, recency_copier_losses, sweep_batch
from .position_codes import CONVENTIONS as CONVENTIONS  # re-exported: notebook 09 reads the formulas through here
from .position_codes import alibi_bias as alibi_bias
from .position_codes import alibi_slopes as alibi_slopes
from .position_codes import apply_rope as apply_rope
from .position_codes import interleaved_order as interleaved_order
from .position_codes import rope_angles as rope_angles
from .position_codes import rope_frequencies as rope_frequencies
from .position_codes import rotate_half as rotate_half
from .position_codes import sinusoidal_table as sinusoidal_table
from .position_codes import window_mask as window_mask

__all__ = [
    "SCHEMES",
    "CONVENTIONS",
    "PositionConfig",
    "PositionalTransformer",
    "PositionalAttention",
    "sinusoidal_table",
    "rope_frequencies",
    "rope_angles",
    "rotate_half",
    "apply_rope",
    "interleaved_order",
    "alibi_slopes",
    "alibi_bias",
    "window_mask",
    "train_schemes",
    "probe",
    "previous_head",
    "row_means",
    "measure_all",
    "claims",
    "LESSON_SCHEMES",
    "LESSON_SETTINGS",
    "LENGTHS",
    "DISTANCES",
]

SCHEMES = ("learned", "sinusoidal", "rope", "none", "alibi")
LESSON_SCHEMES = ("learned", "sinusoidal", "rope", "none")
"""The four schemes notebook 09 trains (ALiBi is an exercise)."""
LENGTHS = (64, 128, 256)
"""The lengths notebook 09 probes: the trained one, 2x and 4x."""
DISTANCES = (8, 56)
"""How far back :func:`probe`'s copied source lies: near, and the farthest a 64-token window allows with 8 copied."""
LESSON_SETTINGS = induction.TrainSettings(steps=500, decay_from=300, measure_every=50)
"""Notebook 09's training, the same for every scheme: 08's, shortened to 500 steps (the learning rate falls from step
300) so that the four trainings together stay within a minute of one CPU thread."""


# ---- the model -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PositionConfig(induction.InductionConfig):
    """08's :class:`~llm_lab.explore.induction.InductionConfig` and the position scheme: ``scheme`` (one of
    :data:`SCHEMES`), ``base`` (the sinusoidal table's and RoPE's frequencies), ``convention`` (RoPE's feature
    pairing, :data:`CONVENTIONS`). ``context_length`` is the trained length (the learned table's rows)."""

    scheme: str = "learned"
    base: float = 10000.0
    convention: str = "half"

    def __post_init__(self):
        super().__post_init__()
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme={self.scheme!r} must be one of {SCHEMES}")
        if self.convention not in CONVENTIONS:
            raise ValueError(f"convention={self.convention!r} must be one of {CONVENTIONS}")
        rope_frequencies(self.d_model // self.num_heads, self.base)  # names a bad base, or an odd head size
        if self.d_model % 2:
            raise ValueError(f"d_model={self.d_model} must be even")


class PositionalAttention(FusedMultiHeadAttention):
    """08's heads with a position scheme inside: RoPE rotates queries and keys after their projection, ALiBi adds
    its bias to the scaled scores, and ``window`` (an attribute the model sets per call) hides keys ``window`` or
    more back. No length limit: the mask is built for the input's length. The same parameters and buffer as
    :class:`~llm_lab.FusedMultiHeadAttention`, so 08's ablation hook on ``out_proj`` works unchanged."""

    def __init__(self, config: PositionConfig):
        d = config.d_model
        super().__init__(d, d, config.context_length, 0.0, config.num_heads)
        self.scheme, self.base, self.convention = config.scheme, config.base, config.convention
        self.window: int | None = None

    def _project(self, x: torch.Tensor):
        b, num_tokens = _checks.batch_input(x, self.d_in, None, self.W_query.weight)
        q = self._split_heads(self.W_query(x), b, num_tokens)
        k = self._split_heads(self.W_key(x), b, num_tokens)
        v = self._split_heads(self.W_value(x), b, num_tokens)  # values are never rotated
        if self.scheme == "rope":
            q = apply_rope(q, base=self.base, convention=self.convention)
            k = apply_rope(k, base=self.base, convention=self.convention)
        return q, k, v, b, num_tokens  # q, k, v: (B, nh, T, hs)

    def _bias(self, num_tokens: int, device) -> torch.Tensor:
        """Additive ``(nh or 1, T, T)``: 0 where a key is seen, ``-inf`` where hidden, plus ALiBi's penalty."""
        hidden = ~window_mask(num_tokens, self.window)
        bias = (
            alibi_bias(self.num_heads, num_tokens) if self.scheme == "alibi" else torch.zeros(1, num_tokens, num_tokens)
        )
        return bias.masked_fill(hidden, float("-inf")).to(device)

    def forward(self, x: torch.Tensor, return_attn_weights: bool = False):
        _checks.flag("return_attn_weights", return_attn_weights)
        q, k, v, b, num_tokens = self._project(x)
        plain = self.scheme != "alibi" and self.window is None
        if not return_attn_weights:
            if plain:
                ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=self._bias(num_tokens, q.device).to(q.dtype))
            return self._merge_heads(ctx, b, num_tokens)
        scores = q @ k.transpose(2, 3) / self.head_dim**0.5 + self._bias(num_tokens, q.device)  # (B, nh, T, T)
        attn_weights = self.dropout(torch.softmax(scores, dim=-1))
        return self._merge_heads(attn_weights @ v, b, num_tokens), attn_weights


class PositionalTransformer(induction.AttentionOnlyTransformer):
    """08's :class:`~llm_lab.explore.induction.AttentionOnlyTransformer` with ``config.scheme`` as its position
    scheme. ``"learned"`` is 08's model itself (built after the same seed, the same weights); the others have no
    position table and run at any length. ``forward(ids, return_attn_weights=False, ablate=(), window=None,
    window_layers=None)``: 08's forward; ``window`` (an int) lets each query read only itself and the ``window - 1``
    keys before it, in the layers ``window_layers`` names (their indices; every layer unless given)."""

    config: PositionConfig

    def __init__(self, config: PositionConfig):
        if not isinstance(config, PositionConfig):
            raise TypeError(f"config must be a PositionConfig, got {type(config).__name__}")
        super().__init__(config)
        if config.scheme == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(config.context_length, config.d_model, config.base))

    def _position_table(self, config: PositionConfig) -> nn.Embedding | None:
        return super()._position_table(config) if config.scheme == "learned" else None

    def _attention(self, config: PositionConfig) -> PositionalAttention:
        return PositionalAttention(config)

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        scheme = self.config.scheme
        if scheme == "learned":
            return super()._embed(ids)
        x = self.tok_emb(ids)  # (B, T, d)
        if scheme == "sinusoidal":
            t = ids.shape[1]
            table = self.pos_table if t <= self.pos_table.shape[0] else self._long_table(t)
            x = x + table[:t].to(x.device)
        return x

    def _long_table(self, t: int) -> torch.Tensor:
        return sinusoidal_table(t, self.config.d_model, self.config.base)

    def _check_ids(self, ids) -> None:
        c = self.config
        _checks.tensor("ids", ids)
        if c.scheme == "learned" and ids.dim() == 2 and ids.shape[1] > c.context_length:
            raise ValueError(
                f"ids have {ids.shape[1]} tokens, but the learned position table has {c.context_length} rows "
                f"(positions 0 .. {c.context_length - 1}): a learned absolute scheme cannot run past its trained "
                "length; the sinusoidal, rope, none and alibi schemes can"
            )
        _checks.token_ids(ids, c.vocab_size, max(c.context_length, ids.shape[-1] if ids.dim() else 1))

    def forward(
        self,
        ids: torch.Tensor,
        return_attn_weights: bool = False,
        ablate=(),
        window: int | None = None,
        window_layers=None,
    ):
        if window is not None:
            _checks.positive_int("window", window)
        layers = _window_layers(window_layers, len(self.attn))
        for layer, attn in enumerate(self.attn):
            attn.window = window if layer in layers else None
        try:
            return super().forward(ids, return_attn_weights=return_attn_weights, ablate=ablate)
        finally:
            for attn in self.attn:
                attn.window = None


def _window_layers(window_layers, num_layers: int) -> set[int]:
    """The layer indices a window applies to: every layer for ``None``, else the given ones (each checked)."""
    if window_layers is None:
        return set(range(num_layers))
    if isinstance(window_layers, (int, str, bytes)) or not hasattr(window_layers, "__iter__"):
        raise TypeError(f"window_layers must be a sequence of layer indices such as (0,), got {window_layers!r}")
    layers = {_checks.int_range("window_layers entry", layer, 0, num_layers - 1) for layer in window_layers}
    if not layers:
        raise ValueError(f"window_layers must name at least one layer of 0 .. {num_layers - 1}, got an empty sequence")
    return layers


# ---- training and probing --------------------------------------------------------------------------------------


def train_schemes(
    schemes=("learned", "sinusoidal", "rope", "none"),
    settings: induction.TrainSettings | None = None,
    config: induction.InductionConfig | None = None,
    seed: int = 123,
    progress=None,
) -> dict:
    """One model per scheme, each built after ``torch.manual_seed(seed)`` and trained by 08's
    :func:`~llm_lab.explore.induction.train` with the same ``settings`` (08's unless given: the same data stream
    and steps for every scheme) on ``config``'s sizes (08's unless given).
    ``progress(scheme, step, measured, seconds)`` is passed on. Returns ``{scheme: {"model", "history",
    "cpu_seconds"}}``; ``cpu_seconds`` is ``time.process_time`` around the training (all threads of the process)."""
    settings = induction.TrainSettings() if settings is None else settings
    config = induction.InductionConfig() if config is None else config
    out = {}
    for scheme in schemes:
        if scheme not in SCHEMES:
            raise ValueError(f"scheme={scheme!r} must be one of {SCHEMES}")
        cfg = PositionConfig(
            **{f.name: getattr(config, f.name) for f in dataclasses.fields(induction.InductionConfig)}, scheme=scheme
        )
        torch.manual_seed(seed)
        model = PositionalTransformer(cfg)
        hook = None if progress is None else (lambda step, m, s, _s=scheme: progress(_s, step, m, s))
        cpu = time.process_time()
        history = induction.train(model, settings, hook)
        out[scheme] = {"model": model, "history": history, "cpu_seconds": time.process_time() - cpu}
    return out


def previous_head(model: PositionalTransformer, seed: int = 0) -> int:
    """Layer 0's previous-token head: the one with the most weight on the token just before, rows ``1 .. T - 1`` of
    64 random rows of the trained length (drawn with ``seed``)."""
    c = model.config
    ids = torch.randint(0, c.vocab_size, (64, c.context_length), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        _, w = model.eval()(ids, return_attn_weights=True)  # (B, L, nh, T, T)
    rows = torch.arange(1, c.context_length)
    return int(w[:, 0, :, rows, rows - 1].mean(dim=(0, 2)).argmax())


@torch.no_grad()
def probe(
    model: PositionalTransformer,
    length: int,
    distances=(8, 56),
    window: int | None = None,
    batch_size: int = 64,
    seed: int = 0,
    head: int | None = None,
    window_layers=None,
) -> dict:
    """``model`` at ``length`` tokens (any length for the schemes without a table; at most the trained one for
    ``"learned"``, which raises past it). For each distance: 08's sweep rows (:func:`~.distance.sweep_batch`: random
    tokens whose last 8 copy the tokens ``distance`` back) at this length; ``"loss"``, the model's mean copy loss on
    the scored predictions; ``"proportional"`` and ``"recency"``, the count-proportional and the recency-weighted
    one-token copiers' on the same ones (:func:`~.distance.proportional_copier_losses`,
    :func:`~.distance.recency_copier_losses`: two copiers that see only the current token, neither the best such a
    copier can do; the count-proportional one grows with the length, as the current token has occurred before by
    chance more often). ``"previous"``: layer 0's previous-token head's (``head``, :func:`previous_head` unless
    given) weight on the token just before, per row ``1 .. length - 1``, mean over the rows of the first distance;
    ``"far"``: the same head's weight on keys ``context_length`` or more back, per row. ``window``: passed to the
    model (each query reads only its last ``window`` keys), in the layers ``window_layers`` names (every layer unless
    given)."""
    _checks.positive_int("length", length)
    distances = [_checks.positive_int("distance", d) for d in distances]
    if not distances:
        raise ValueError("distances must name at least one distance")
    c = model.config
    head = previous_head(model) if head is None else _checks.int_range("head", head, 0, c.num_heads - 1)
    long = dataclasses.replace(induction.InductionConfig(), vocab_size=c.vocab_size, context_length=length)
    rows = torch.arange(length - SWEEP_LENGTH, length - 1)  # the scored predictions
    model.eval()
    out = {"length": length, "distance": distances, "loss": [], "proportional": [], "recency": [], "head": head}
    for k, d in enumerate(distances):
        ids = sweep_batch(batch_size, long, d, SWEEP_LENGTH, seed)
        logits, w = model(ids, return_attn_weights=True, window=window, window_layers=window_layers)
        # logits (B, T, V), w (B, L, nh, T, T)
        loss = F.cross_entropy(logits[:, rows].transpose(1, 2).double(), ids[:, rows + 1], reduction="none")
        out["loss"].append(float(loss.mean()))
        out["proportional"].append(float(proportional_copier_losses(ids)[:, rows].nanmean()))
        out["recency"].append(float(recency_copier_losses(ids)[:, rows].nanmean()))
        if k == 0:
            w0 = w[:, 0, head]  # (B, T, T)
            i = torch.arange(1, length)
            out["previous"] = w0[:, i, i - 1].mean(dim=0)  # (T - 1,)
            back = torch.arange(length)[:, None] - torch.arange(length)[None, :]
            out["far"] = (w0 * (back >= c.context_length)).sum(dim=-1).mean(dim=0)[1:]  # (T - 1,)
    return out


def row_means(per_row: torch.Tensor, block: int) -> list[float]:
    """The mean of ``per_row`` (rows ``1 ..``) over the blocks of rows ``1 .. block - 1``,
    ``block .. 2 block - 1``, ..."""
    values = torch.cat([torch.tensor([float("nan")]), per_row.float()])  # index = row
    return [float(values[max(1, s) : s + block].mean()) for s in range(0, len(values), block)]


def measure_all(models: dict, lengths=LENGTHS, distances=DISTANCES, window_schemes=("rope", "sinusoidal")) -> dict:
    """:func:`probe` of every model (``{scheme: model}``) at every length it can run (``"learned"``: its trained
    length only; ``None`` where it cannot run), and, for ``window_schemes``, at the longest length with a window
    of the trained length. Returns ``{"probes": {scheme: {length: probe or None}}, "window": {scheme: probe},
    "heads": {scheme: head}}``."""
    out = {"probes": {}, "window": {}, "heads": {}}
    for scheme, model in models.items():
        head = previous_head(model)
        out["heads"][scheme] = head
        trained = model.config.context_length
        out["probes"][scheme] = {
            t: None if scheme == "learned" and t > trained else probe(model, t, distances, head=head) for t in lengths
        }
        if scheme in window_schemes:
            out["window"][scheme] = probe(model, max(lengths), distances, window=trained, head=head)
    return out


def claims(measured: dict, uniform: float) -> dict:
    """What notebook 09 says about :func:`measure_all`'s result (lengths 64, 128 and 256; distances 8 and 56), as
    booleans, each with a margin a rerun on another machine keeps."""
    p, w = measured["probes"], measured["window"]
    learned, sin, rope, none = p["learned"], p["sinusoidal"], p["rope"], p["none"]
    sin_rows, rope_rows = row_means(sin[256]["previous"], 64), row_means(rope[256]["previous"], 64)
    rope_far = row_means(rope[256]["far"], 64)
    none_rows = row_means(none[256]["previous"], 64)
    return {
        "learned: copies 8 back below 2.0 at 64 tokens; it cannot run at 128 or 256": learned[64]["loss"][0] < 2.0
        and learned[128] is None
        and learned[256] is None,
        "sinusoidal: copies 8 back below 2.0 at 64 tokens, above the uniform guess at 128 and 256": sin[64]["loss"][0]
        < 2.0
        and min(sin[128]["loss"] + sin[256]["loss"]) > uniform,
        "sinusoidal: previous-token weight above 0.3 on rows 1-63, below 0.1 on rows 64-255": sin_rows[0] > 0.3
        and max(sin_rows[1:]) < 0.1,
        "rope: copies 8 back below 1.5 at 64 and at 128 tokens, above 2.5 at 256": rope[64]["loss"][0] < 1.5
        and rope[128]["loss"][0] < 1.5
        and rope[256]["loss"][0] > 2.5,
        "rope: previous-token weight above 0.8 on rows 1-127, below 0.7 on rows 192-255": min(rope_rows[:2]) > 0.8
        and rope_rows[3] < 0.7,
        "rope: on rows 192-255 its previous-token head puts more than 0.3 on keys 64 or more back": rope_far[3] > 0.3,
        "rope, a 64-key window, 256 tokens: copies 8 back below 1.5, previous-token weight above 0.8 on rows 64-255": w[
            "rope"
        ]["loss"][0]
        < 1.5
        and min(row_means(w["rope"]["previous"], 64)[1:]) > 0.8,
        "sinusoidal, the same window: copies 8 back still above 3.0": w["sinusoidal"]["loss"][0] > 3.0,
        "none: copies 8 back above 3.5 at every length, previous-token weight below 0.2 on every block of rows": min(
            none[t]["loss"][0] for t in none
        )
        > 3.5
        and max(none_rows) < 0.2,
    }
