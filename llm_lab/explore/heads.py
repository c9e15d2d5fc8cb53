"""Attention heads that do something you can name: hand-built position heads and measures of what a head does.

A head's job is read off its attention weights. Every measure here takes weights of shape ``(B, nh, T, T)``
(B batch, nh heads, T tokens; row ``i`` holds what token ``i`` attends to) and returns one number per head,
shape ``(nh,)``: the mean weight the head puts where its name says it should look. Compare it with
:func:`uniform_weights`, the score of a head that spreads its weight evenly over the visible tokens.

The hand-built heads work on token embeddings with a one-hot position code appended (:func:`with_positions`):
queries and keys read only the position part, values only the token part. See :func:`position_head_projections`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import NamedTuple

import torch
from torch import nn

from .. import _checks
from ..attention import CausalAttention
from ..multihead import MultiHeadAttention
from ..resources import TRAINED_HEADS, load_text, verified_path
from ..tokenizer import gpt2_tokenizer

TARGETS = ("previous", "first")


def with_positions(x: torch.Tensor) -> torch.Tensor:
    """Append a one-hot position code to every token: ``(B, T, d) -> (B, T, d + T)``.

    Token ``i`` gets ``e_i`` (1 at index ``d + i``, 0 elsewhere in the code), so a linear map can read "where am I"
    separately from "what am I".
    """
    _checks.tensor("x", x)
    if x.dim() != 3 or not x.is_floating_point():
        raise ValueError(
            f"x must be a floating-point (batch, num_tokens, d) tensor of embeddings, got {x.dim()}-D shape "
            f"{tuple(x.shape)} with dtype {x.dtype}; for one sequence use x.unsqueeze(0)"
        )
    b, num_tokens, _ = x.shape
    code = torch.eye(num_tokens, dtype=x.dtype, device=x.device).expand(b, num_tokens, num_tokens)
    return torch.cat([x, code], dim=-1)


class HeadProjections(NamedTuple):
    """The three weight matrices of one head, in ``nn.Linear`` layout ``(d_out, d_in)``."""

    W_query: torch.Tensor
    W_key: torch.Tensor
    W_value: torch.Tensor


def position_head_projections(d_token: int, context_length: int, target: str = "previous", strength: float = 10.0):
    """Weights of a head that finds a token by its position, for inputs made by :func:`with_positions`.

    ``d_in = d_out = d_token + context_length``. The key of token ``j`` is its own position code ``e_j``.
    The query of token ``i`` is ``c * e_t`` for the position ``t`` it looks for: ``t = i - 1`` for
    ``target="previous"``, ``t = 0`` for ``target="first"``. So the score of key ``j`` is ``c`` when
    ``j == t`` and 0 otherwise; with ``c = strength * sqrt(d_out)`` the scaled score is ``strength`` and the
    softmax puts ``e**strength / (e**strength + i)`` on the target (0.9995 for ``strength=10`` and 12 tokens).
    Token 0 has no previous token: its query is zero and it keeps all its weight on itself, the only token
    it sees. The value is the token part unchanged, so the head outputs the embedding of the token it found.

    Returns :class:`HeadProjections` ``(W_query, W_key, W_value)``, each ``(d_out, d_in)``.
    """
    d_token = _checks.positive_int("d_token", d_token)
    context_length = _checks.positive_int("context_length", context_length)
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not 0 < strength < math.inf:
        raise ValueError(f"strength must be a positive finite number (the target's scaled score), got {strength!r}")
    d = d_token + context_length
    pos = torch.arange(context_length)
    W_key = torch.zeros(d, d)
    W_key[d_token + pos, d_token + pos] = 1.0  # key of token j: its position code e_j
    W_query = torch.zeros(d, d)
    looks_for = (pos - 1) if target == "previous" else torch.zeros_like(pos)
    rows = pos >= 1  # token 0 looks for nothing: zero query, it attends to itself
    W_query[d_token + looks_for[rows], d_token + pos[rows]] = strength * math.sqrt(d)
    W_value = torch.zeros(d, d)
    W_value[:d_token, :d_token] = torch.eye(d_token)  # copy the token part, drop the position code
    return HeadProjections(W_query, W_key, W_value)


def hand_built_head(d_token: int, context_length: int, target: str = "previous", strength: float = 10.0):
    """A :class:`~llm_lab.CausalAttention` head holding :func:`position_head_projections` (no dropout).

    ``forward(with_positions(x))``: ``(B, T, d_token + T) -> (B, T, d_token + T)``; the first ``d_token``
    features of token ``i`` are (almost exactly) the embedding of the token the head looks for.
    """
    projections = position_head_projections(d_token, context_length, target, strength)
    d = d_token + context_length
    head = CausalAttention(d, d, context_length, dropout=0.0)
    with torch.no_grad():
        for name, weight in projections._asdict().items():
            getattr(head, name).weight.copy_(weight)
    return head.eval()


# ---- measures: what does a head do? -------------------------------------------------------------------


def _weights(attn_weights, min_tokens: int = 1) -> int:
    num_tokens = _checks.square_scores("attn_weights", attn_weights)
    if attn_weights.dim() != 4:
        raise ValueError(
            "attn_weights must have shape (batch, num_heads, num_tokens, num_tokens), got "
            f"{tuple(attn_weights.shape)}; for one head use w.unsqueeze(1), for one sequence w.unsqueeze(0)"
        )
    if num_tokens < min_tokens:
        raise ValueError(f"this measure needs at least {min_tokens} tokens, got num_tokens={num_tokens}")
    return num_tokens


def _ids(token_ids, attn_weights) -> torch.Tensor:
    _checks.tensor("token_ids", token_ids)
    b, _, num_tokens, _ = attn_weights.shape
    if token_ids.shape != (b, num_tokens) or token_ids.is_floating_point() or token_ids.dtype == torch.bool:
        raise ValueError(
            f"token_ids must be an integer tensor of shape (batch, num_tokens) = {(b, num_tokens)} matching "
            f"attn_weights {tuple(attn_weights.shape)}, got shape {tuple(token_ids.shape)} and dtype {token_ids.dtype}"
        )
    return token_ids.to(attn_weights.device)


def previous_token_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on token ``i - 1``, over rows ``i >= 2`` and the batch: ``(B, nh, T, T) -> (nh,)``.

    Rows 0 and 1 are left out: row 0 sees only itself, and in row 1 the previous token is also the first.
    """
    num_tokens = _weights(attn_weights, min_tokens=3)
    rows = torch.arange(2, num_tokens, device=attn_weights.device)
    return attn_weights[:, :, rows, rows - 1].mean(dim=(0, 2))


def first_token_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on token 0, over rows ``i >= 2`` and the batch: ``(B, nh, T, T) -> (nh,)``."""
    _weights(attn_weights, min_tokens=3)
    return attn_weights[:, :, 2:, 0].mean(dim=(0, 2))


def current_token_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight of each token on itself, over rows ``i >= 1`` and the batch: ``(B, nh, T, T) -> (nh,)``."""
    num_tokens = _weights(attn_weights, min_tokens=2)
    rows = torch.arange(1, num_tokens, device=attn_weights.device)
    return attn_weights[:, :, rows, rows].mean(dim=(0, 2))


def _masked_score(attn_weights: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over the rows that have a target of the weight on the targets; targets: bool (B, T, T)."""
    rows = targets.any(dim=-1)  # (B, T): rows where the measure is defined
    if not rows.any():
        return torch.full(attn_weights.shape[1:2], float("nan"), device=attn_weights.device)
    per_row = (attn_weights * targets[:, None]).sum(dim=-1)  # (B, nh, T)
    return (per_row * rows[:, None]).sum(dim=(0, 2)) / rows.sum()


def same_token_score(attn_weights: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Weight on earlier occurrences of the current token: ``(B, nh, T, T), (B, T) -> (nh,)``.

    Averaged over the rows whose token occurred before in the window (nan if none does).
    """
    _weights(attn_weights)
    return _masked_score(attn_weights, _same_token_targets(_ids(token_ids, attn_weights)))


def _earlier(num_tokens: int, device) -> torch.Tensor:
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device).tril(diagonal=-1)


def _same_token_targets(ids: torch.Tensor) -> torch.Tensor:
    """Bool ``(B, T, T)``: key ``j < i`` holds the same token as query ``i``."""
    return (ids[:, :, None] == ids[:, None, :]) & _earlier(ids.shape[1], ids.device)


def _induction_targets(ids: torch.Tensor) -> torch.Tensor:
    """Bool ``(B, T, T)``: key ``j < i`` follows an earlier copy of query ``i``'s token."""
    b, num_tokens = ids.shape
    follows = torch.zeros(b, num_tokens, num_tokens, dtype=torch.bool, device=ids.device)
    follows[:, :, 1:] = ids[:, :, None] == ids[:, None, :-1]  # key j follows a copy of token i
    return follows & _earlier(num_tokens, ids.device)


def induction_score(attn_weights: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Weight on the tokens that followed an earlier occurrence of the current token.

    If token ``i`` is "Gisburn" and "Gisburn" came before at ``j - 1``, an induction head at ``i`` looks at
    ``j`` (what came next last time), the basis of copying a repeated phrase. ``(B, nh, T, T), (B, T) -> (nh,)``,
    averaged over the rows that have such a ``j < i`` (nan if none does).
    """
    _weights(attn_weights)
    return _masked_score(attn_weights, _induction_targets(_ids(token_ids, attn_weights)))


def uniform_weights(batch: int, num_heads: int, num_tokens: int) -> torch.Tensor:
    """The weights of heads that attend evenly to every visible token: ``(B, nh, T, T)``, row ``i`` = ``1/(i+1)``."""
    for name, value in (("batch", batch), ("num_heads", num_heads), ("num_tokens", num_tokens)):
        _checks.positive_int(name, value)
    rows = torch.ones(num_tokens, num_tokens).tril()
    return (rows / rows.sum(dim=-1, keepdim=True)).expand(batch, num_heads, num_tokens, num_tokens).clone()


MEASURES = {
    "previous token": previous_token_score,
    "first token": first_token_score,
    "current token": current_token_score,
    "same token": same_token_score,
    "induction": induction_score,
}
NEEDS_IDS = ("same token", "induction")


def head_scores(attn_weights: torch.Tensor, token_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Every measure in :data:`MEASURES` (those needing ``token_ids`` only when given): name -> ``(nh,)``."""
    return {
        name: (fn(attn_weights, token_ids) if name in NEEDS_IDS else fn(attn_weights))
        for name, fn in MEASURES.items()
        if token_ids is not None or name not in NEEDS_IDS
    }


def _position_targets(num_tokens: int) -> dict[str, torch.Tensor]:
    """Bool ``(1, T, T)`` targets of the position measures, on the rows each measure averages over."""
    rows = torch.arange(num_tokens)
    targets = {
        name: torch.zeros(1, num_tokens, num_tokens, dtype=torch.bool)
        for name in ("previous token", "first token", "current token")
    }
    targets["previous token"][0, rows[2:], rows[2:] - 1] = True
    targets["first token"][0, 2:, 0] = True
    targets["current token"][0, rows[1:], rows[1:]] = True
    return targets


def _even_fraction(targets: torch.Tensor) -> Fraction | float:
    """What evenly spread weights (``1/(i+1)`` on each key of row ``i``) score on bool targets ``(B, T, T)``.

    An exact fraction: the mean over the rows that have a target of ``hits / (i + 1)``. Computed in floats,
    such a baseline can sit exactly on a rounding boundary (``19/80 = 0.2375``), where the last printed digit
    would depend on the summation order of the device.
    """
    rows = int(targets.any(dim=-1).sum())
    if rows == 0:
        return float("nan")
    hits = targets.sum(dim=(0, 2)).tolist()  # (T,): targets of query row i, over the batch
    return sum((Fraction(int(n), i + 1) for i, n in enumerate(hits)), Fraction(0)) / rows


def _even_scores(attn_weights: torch.Tensor, token_ids: torch.Tensor | None) -> dict[str, Fraction | float]:
    """The measures of one head that spreads its weight evenly, on the same tokens, as exact fractions."""
    num_tokens = attn_weights.shape[-1]
    targets = _position_targets(num_tokens)
    if token_ids is not None:
        ids = token_ids.cpu()
        targets["same token"], targets["induction"] = _same_token_targets(ids), _induction_targets(ids)
    return {name: _even_fraction(targets[name]) for name in MEASURES if token_ids is not None or name not in NEEDS_IDS}


def _fixed(value, decimals: int) -> str:
    """``value`` with ``decimals`` digits; a Fraction is rounded exactly (half to even), not through a float."""
    if isinstance(value, Fraction):
        value = float(round(value, decimals))  # a multiple of 10**-decimals: its float prints back exactly
    return f"{value:.{decimals}f}"


def head_report(attn_weights: torch.Tensor, token_ids: torch.Tensor | None = None, head_names=None, decimals: int = 3):
    """A text table: one row per head, one column per measure, and a last row for evenly spread weights.

    ``attn_weights``: ``(B, nh, T, T)``; ``token_ids``: ``(B, T)`` or None (then the two measures that need
    tokens are left out); ``head_names``: nh labels (default ``head 0``, ``head 1``, ...). Numbers are rounded
    to ``decimals`` on the CPU.
    """
    scores = head_scores(attn_weights, token_ids)  # checks the shapes
    num_heads = attn_weights.shape[1]
    names = [f"head {h}" for h in range(num_heads)] if head_names is None else [str(n) for n in head_names]
    if len(names) != num_heads:
        raise ValueError(f"head_names has {len(names)} labels for {num_heads} heads")
    rows = [(names[h], [float(s[h].cpu()) for s in scores.values()]) for h in range(num_heads)]
    rows.append(("spread evenly", list(_even_scores(attn_weights, token_ids).values())))
    width = max(len(label) for label, _ in rows) + 2
    lines = [" " * width + "".join(f"{m:>16}" for m in scores)]
    lines += [f"{label:<{width}}" + "".join(f"{_fixed(v, decimals):>16}" for v in values) for label, values in rows]
    return "\n".join(lines)


def head_roles(attn_weights: torch.Tensor, token_ids: torch.Tensor | None = None, min_ratio: float = 3.0) -> list:
    """Name each head by the measure on which it beats evenly spread weights the most (score / even score).

    A head whose best ratio is below ``min_ratio`` is called ``"spread out"``. ``(B, nh, T, T)`` -> nh names.
    """
    scores = head_scores(attn_weights, token_ids)
    even = _even_scores(attn_weights, token_ids)
    names = []
    for h in range(attn_weights.shape[1]):
        ratios = {m: float(s[h].cpu()) / float(even[m]) for m, s in scores.items() if not s[h].isnan()}
        best = max(ratios, key=ratios.get)
        names.append(best if ratios[best] >= min_ratio else "spread out")
    return names


# ---- a tiny model trained on The Verdict (weights in data/, made by `make train`) ----------------------


@dataclass(frozen=True)
class TinyConfig:
    """Sizes of :class:`TinyAttentionLM`; ``vocab_size`` counts the GPT-2 ids that occur in The Verdict."""

    vocab_size: int
    context_length: int = 32
    d_model: int = 128
    num_heads: int = 8
    num_layers: int = 2

    def __post_init__(self):
        for name, value in asdict(self).items():
            _checks.positive_int(name, value)


class TinyAttentionLM(nn.Module):
    """An attention-only language model: embeddings, ``num_layers`` x (LayerNorm, :class:`~llm_lab.MultiHeadAttention`,
    residual add), LayerNorm, a linear map to the vocabulary. No feed-forward block: the heads are the only place
    where one token reads another. Token and position embeddings are added, as in the series (and GPT-2).

    ``forward(ids)``: ids ``(B, T)`` in the model's own vocabulary -> logits ``(B, T, V)``; with
    ``return_attn_weights=True`` also a list of ``num_layers`` weight tensors ``(B, nh, T, T)``.
    """

    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        d, ctx = config.d_model, config.context_length
        self.tok_emb = nn.Embedding(config.vocab_size, d)
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(config.num_layers))
        self.attn = nn.ModuleList(
            MultiHeadAttention(d, d, ctx, 0.0, config.num_heads) for _ in range(config.num_layers)
        )
        self.final_norm = nn.LayerNorm(d)
        self.out_head = nn.Linear(d, config.vocab_size, bias=False)
        self.pos_emb = nn.Embedding(ctx, d)

    def forward(self, ids: torch.Tensor, return_attn_weights: bool = False):
        _checks.flag("return_attn_weights", return_attn_weights)
        _check_local_ids(ids, self.config)
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(ids.shape[1], device=ids.device))  # (B, T, d)
        weights = []
        for norm, attn in zip(self.norms, self.attn, strict=True):
            out, w = attn(norm(x), return_attn_weights=True)
            x = x + out  # the residual stream: each layer adds what its heads found
            weights.append(w)  # (B, nh, T, T)
        logits = self.out_head(self.final_norm(x))  # (B, T, V)
        return (logits, weights) if return_attn_weights else logits


def _check_local_ids(ids, config: TinyConfig) -> None:
    _checks.token_ids(
        ids,
        config.vocab_size,
        config.context_length,
        hint="turn GPT-2 ids into model ids with TrainedHeads.encode or .to_local",
    )


@dataclass(frozen=True)
class TrainedHeads:
    """What :func:`load_trained` returns: the model (eval mode, CPU) and how to feed it.

    ``vocab``: ``(V,)`` GPT-2 ids; model id ``k`` stands for GPT-2 id ``vocab[k]``. ``losses``: training loss per
    step ``(steps,)``. ``heldout_start``: index of the first token of The Verdict never used in training.
    ``roles``: ``"layer.head" -> "what it does"``, as measured when the file was made. ``settings``: training settings.
    """

    model: TinyAttentionLM
    vocab: torch.Tensor
    losses: torch.Tensor
    heldout_start: int
    roles: dict
    settings: dict

    def to_local(self, gpt2_ids) -> torch.Tensor:
        """GPT-2 ids (any shape) -> model ids; a clear error for ids that never occur in The Verdict."""
        gpt2_ids = torch.as_tensor(gpt2_ids)
        local = torch.searchsorted(self.vocab, gpt2_ids.clamp(min=0))
        known = (local < len(self.vocab)) & (self.vocab[local.clamp(max=len(self.vocab) - 1)] == gpt2_ids)
        if not known.all():
            unknown = sorted(set(gpt2_ids[~known].tolist()))[:5]
            raise ValueError(
                f"GPT-2 ids {unknown} do not occur in The Verdict, so this model has no embedding for them; "
                f"it knows only the {len(self.vocab)} ids of the story"
            )
        return local

    def encode(self, text: str) -> torch.Tensor:
        """Text -> model ids ``(1, T)`` through the GPT-2 tokenizer."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.to_local(gpt2_tokenizer().encode(text)).unsqueeze(0)

    def tokens(self, ids: torch.Tensor) -> list:
        """Model ids ``(T,)`` or ``(B, T)`` -> the decoded token strings (nested the same way)."""
        ids = torch.as_tensor(ids)
        if ids.dim() == 2:
            return [self.tokens(row) for row in ids]
        return [gpt2_tokenizer().decode([int(self.vocab[i])]) for i in ids.tolist()]

    def heldout_windows(self, num_tokens: int | None = None) -> torch.Tensor:
        """Non-overlapping windows ``(N, T)`` of model ids from the part of The Verdict not used in training."""
        num_tokens = self.model.config.context_length if num_tokens is None else num_tokens
        probe = torch.zeros(1, _checks.positive_int("num_tokens", num_tokens), dtype=torch.long)
        _check_local_ids(probe, self.model.config)  # the same length limits as the model
        ids = self.to_local(gpt2_tokenizer().encode(load_text("the-verdict"))[self.heldout_start :])
        n = len(ids) // num_tokens
        return ids[: n * num_tokens].view(n, num_tokens)


def load_trained(path=None) -> TrainedHeads:
    """Load the shipped model trained on The Verdict (checksum verified), or a file written by
    ``tools/authoring/train.py``."""
    if path is None:
        path = verified_path(*TRAINED_HEADS)
    saved = torch.load(path, map_location="cpu", weights_only=True)
    with torch.random.fork_rng(devices=[]):  # the random init is overwritten: leave the caller's RNG alone
        model = TinyAttentionLM(TinyConfig(**saved["config"]))
    model.load_state_dict(saved["state_dict"])
    return TrainedHeads(
        model=model.eval(),
        vocab=saved["vocab"],
        losses=saved["losses"],
        heldout_start=int(saved["heldout_start"]),
        roles=dict(saved["roles"]),
        settings=dict(saved["settings"]),
    )
