"""How far back a copy reaches: notebook 08's distance sweep and the source distances of its training data.

Shape names: B batch, T tokens, L layers, nh heads, V vocabulary size.

- :func:`source_distances` is, for every prediction a copier can make, how far back its nearest earlier copy is:
  the histogram of what the training data teaches.
- :func:`longest_stretches` is, for every row, the longest stretch of tokens that repeats one fixed distance back:
  how long the copies the training data shows can be.
- :func:`sweep_batch` holds a repeated segment at the end of the window and moves its source back by ``distance``.
- :func:`sweep` measures a model on those rows at each distance: its copy loss, the losses of two one-token copiers
  on the same predictions, and layer 1's induction score at that distance (its weight on the right key).
- :func:`grid` moves the repeat as well (``sweep_batch(..., end=...)``): the copy loss and the count-proportional
  copier's for
  every distance and every place the repeat ends, so that distance and place are varied one at a time;
  :func:`grid_claims` reads it.
- :func:`window_losses` scores any rows on the predictions the grid scores for a repeat ending at each ``end``;
  :func:`length_claims` compares a repeat longer than any training run with the grid's 8-token repeats there.
- Two copiers that see only the current token, per prediction: :func:`proportional_copier_losses` bets on what
  followed its earlier occurrences in proportion to how often each did (``circuit.proportional_copier_loss`` is its
  mean); :func:`recency_copier_losses` weighs the most recent occurrence most, halving for each older one. Neither
  is the best a one-token copier can do: they are two reference lines.
- :func:`training_point` is one point of the training curve: the probe, the loss split by distance
  (:func:`loss_by_distance`), the in-context-learning score (:func:`icl_score`) and layer 0's previous-token weight;
  :func:`training_claims` reads the order in which they fell.

Every random draw uses its own ``torch.Generator`` seeded from the arguments.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _checks, _old_path
from .copy_data import copyable
from .induction import measure

__all__ = [
    "source_distances",
    "longest_stretches",
    "sweep_batch",
    "sweep",
    "sweep_claims",
    "grid",
    "grid_claims",
    "GRID_DISTANCES",
    "GRID_ENDS",
    "window_losses",
    "length_claims",
    "proportional_copier_losses",
    "recency_copier_losses",
    "loss_by_distance",
    "icl_score",
    "training_point",
    "training_claims",
    "trade_claims",
    "SWEEP_LENGTH",
    "LENGTH_ENDS",
    "LENGTH_DISTANCE",
]

SWEEP_LENGTH = 8
"""Tokens in the repeated segment of :func:`sweep_batch`: the last 8 of the window, so sources reach 56 back."""


def _matches(ids: torch.Tensor) -> torch.Tensor:
    """``(B, i, j)`` bool for ``i, j < T - 1``: ``j < i``, ``ids[j] == ids[i]`` and ``ids[j + 1] == ids[i + 1]``."""
    cur, nxt = ids[:, :-1], ids[:, 1:]
    t = cur.shape[1]
    earlier = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril(-1)
    return (cur[:, :, None] == cur[:, None, :]) & (nxt[:, :, None] == nxt[:, None, :]) & earlier


def source_distances(ids: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` ids -> ``(n,)`` int64: for each of the ``n`` copyable predictions (:func:`copyable`), ``i - j`` for
    the nearest earlier ``j`` whose pair ``(ids[j], ids[j + 1])`` equals ``(ids[i], ids[i + 1])``: how far back the
    copy is."""
    match = _matches(_checks.id_rows(ids))  # (B, i, j)
    t = match.shape[-1]
    i = torch.arange(t, device=ids.device)
    gap = torch.where(match, i[:, None] - i[None, :], torch.full_like(match, t, dtype=torch.long))  # (B, i, j)
    nearest = gap.min(dim=-1).values  # (B, T - 1)
    return nearest[match.any(dim=-1)]


def longest_stretches(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, T)`` ids -> ``(B,)`` int64 lengths and ``(B,)`` int64 distances: for each row, the most consecutive
    positions ``i`` with ``ids[i] == ids[i - d]`` for one ``d``, and that ``d`` (the smallest, on a tie; 0 with the
    length where no token repeats). Chance matches count too: it is what a copier sees, not how the row was made."""
    ids = _checks.id_rows(ids)
    b, t = ids.shape
    i = torch.arange(t, device=ids.device)  # (T,)
    d = torch.arange(1, t, device=ids.device)[:, None]  # (T - 1, 1): every distance
    same = (ids[:, (i - d).clamp(min=0)] == ids[:, None, :]) & (i >= d)  # (B, T - 1, T): ids[i] == ids[i - d]
    breaks = torch.where(same, torch.full_like(same, -1, dtype=torch.long), i.expand_as(same))  # (B, T - 1, T)
    runs = i - breaks.cummax(dim=-1).values  # (B, T - 1, T): the stretch ending at i, at distance d
    per_distance = runs.max(dim=-1).values  # (B, T - 1)
    length, k = per_distance.max(dim=-1)  # (B,), (B,): the first maximum is the smallest distance
    return length, torch.where(length > 0, k + 1, torch.zeros_like(k))


def _earlier(ids: torch.Tensor) -> torch.Tensor:
    """``(B, i, j)`` bool for ``i, j < T - 1``: ``j < i`` and ``ids[j] == ids[i]`` (an earlier occurrence)."""
    cur = ids[:, :-1]
    t = cur.shape[1]
    earlier = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril(-1)
    return (cur[:, :, None] == cur[:, None, :]) & earlier


def _copier_losses(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The loss of a one-token copier that gives each earlier occurrence ``j`` of ``ids[i]`` the bet ``weight``
    ``(B, i, j)`` (zero elsewhere), shared in proportion; ``nan`` where the prediction is not copyable."""
    p = (weight * _matches(ids)).sum(-1) / weight.sum(-1).clamp(min=1e-300)  # (B, T - 1)
    return torch.where(p > 0, -p.log(), torch.full_like(p, float("nan")))


def proportional_copier_losses(ids: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` ids -> ``(B, T - 1)`` float64: at a copyable prediction ``i``, the loss of the count-proportional
    one-token copier: it sees only ``ids[i]`` and bets on the tokens that followed its earlier occurrences, in
    proportion to how often each did (every occurrence counts the same); ``nan`` where the prediction is not
    copyable."""
    ids = _checks.id_rows(ids)
    return _copier_losses(ids, _earlier(ids).double())


def recency_copier_losses(ids: torch.Tensor, decay: float = 0.5) -> torch.Tensor:
    """``(B, T)`` ids -> ``(B, T - 1)`` float64: at a copyable prediction ``i``, the loss of the recency-weighted
    one-token copier: like the count-proportional one it sees only ``ids[i]`` and bets on the tokens that followed
    its earlier occurrences, but the most recent occurrence weighs 1, the one before it ``decay``, the one before
    that ``decay ** 2``, ... (``decay=1`` is the count-proportional copier); ``nan`` where the prediction is not
    copyable."""
    ids = _checks.id_rows(ids)
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1], got {decay!r}")
    seen = _earlier(ids)
    newer = seen.flip(-1).cumsum(-1).flip(-1) - seen.long()  # (B, i, j): occurrences after j and before i
    return _copier_losses(ids, torch.where(seen, torch.tensor(decay, dtype=torch.float64) ** newer, 0.0))


ideal_copier_losses = _old_path.renamed("llm_lab.explore.distance.ideal_copier_losses", proportional_copier_losses)


def sweep_batch(
    batch_size: int, config, distance: int, length: int = SWEEP_LENGTH, seed: int = 0, end: int | None = None
) -> torch.Tensor:
    """``(B, T)`` random tokens (drawn with ``seed``) whose ``length`` tokens ending at position ``end`` (by default
    the last, ``T - 1``) copy the tokens ``distance`` places back: ``ids[i] = ids[i - distance]`` for
    ``end - length < i <= end``, left to right (a distance below ``length`` repeats a short pattern); the tokens
    after ``end`` stay random. The scored predictions are ``i = end - length + 1 .. end - 1``: each one's target is
    a copy. The random tokens depend on ``seed`` alone, so rows for other distances or ends differ only in the copy."""
    _checks.positive_int("batch_size", batch_size)
    t = config.context_length
    _checks.positive_int("length", length)
    if length > t - 1:
        raise ValueError(f"length={length} must be below context_length={t}")
    end = t - 1 if end is None else _checks.int_range("end", end, length, t - 1)
    start = end - length + 1
    _checks.int_range("distance", distance, 1, start)
    ids = torch.randint(0, config.vocab_size, (batch_size, t), generator=torch.Generator().manual_seed(seed))
    for i in range(start, end + 1):
        ids[:, i] = ids[:, i - distance]
    return ids


def _scored(logits: torch.Tensor, ids: torch.Tensor, rows: torch.Tensor) -> dict:
    """The mean loss of ``logits`` ``(B, T, V)`` on the predictions ``rows`` of ``ids`` (``"loss"``), and the two
    one-token copiers' on the same predictions (``"proportional"``, ``"recency"``)."""
    loss = F.cross_entropy(logits[:, rows].transpose(1, 2).double(), ids[:, rows + 1], reduction="none")
    return {
        "loss": float(loss.mean()),
        "proportional": float(proportional_copier_losses(ids)[:, rows].nanmean()),
        "recency": float(recency_copier_losses(ids)[:, rows].nanmean()),
    }


@torch.no_grad()
def sweep(model, distances, batch_size: int = 256, length: int = SWEEP_LENGTH, seed: int = 0) -> dict:
    """``model`` on :func:`sweep_batch` rows at each distance (the same random tokens at every distance, then the
    copy). Returns lists, one entry per distance: ``"loss"``, the model's mean loss on the scored predictions;
    ``"proportional"`` and ``"recency"``, the count-proportional and the recency-weighted one-token copiers' on the
    same predictions (:func:`proportional_copier_losses`, :func:`recency_copier_losses`); ``"weight"``, layer 1's
    induction score at that distance: its weight on the right key (``i - distance + 1``), mean over its heads and
    the scored rows."""
    distances = [_checks.positive_int("distance", d) for d in distances]
    if not distances:
        raise ValueError("distances must name at least one distance")
    t = model.config.context_length
    rows = torch.arange(t - length, t - 1)  # the scored predictions i
    out = {"distance": distances, "loss": [], "proportional": [], "recency": [], "weight": []}
    was_training = model.training
    model.eval()
    try:
        for d in distances:
            ids = sweep_batch(batch_size, model.config, d, length, seed)
            logits, weights = model(ids, return_attn_weights=True)  # (B, T, V), (B, L, nh, T, T)
            for key, value in _scored(logits, ids, rows).items():
                out[key].append(value)
            out["weight"].append(float(weights[:, 1, :, rows, rows - d + 1].mean()))
    finally:
        model.train(was_training)
    return out


def sweep_claims(result: dict) -> dict:
    """What notebook 08 says about a :func:`sweep` result (distances 8 and 56 must be in it), as booleans: near
    copies are cheap, far ones dear, the count-proportional copier flat over the distances measured from 8 on, and
    the recency-weighted copier at least 0.1 below it at every distance measured up to 8 (both copiers see only the
    current token, so beating the count-proportional one does not show that a model sees more)."""
    at = dict(zip(result["distance"], result["loss"], strict=True))
    if 8 not in at or 56 not in at:
        raise ValueError(f"the sweep must include distances 8 and 56, got {result['distance']}")
    flat = [i for d, i in zip(result["distance"], result["proportional"], strict=True) if d >= 8]
    near = [
        (p, r) for d, p, r in zip(result["distance"], result["proportional"], result["recency"], strict=True) if d <= 8
    ]
    return {
        "copy loss below 1.5 at 8 back": at[8] < 1.5,
        "copy loss above 3.0 at 56 back": at[56] > 3.0,
        "count-proportional copier between 0.4 and 0.6 at every distance from 8 on": all(0.4 < i < 0.6 for i in flat),
        "recency-weighted copier at least 0.1 below the count-proportional one at every distance up to 8": all(
            r < p - 0.1 for p, r in near
        ),
    }


@torch.no_grad()
def grid(model, distances, ends, batch_size: int = 256, length: int = SWEEP_LENGTH, seed: int = 0) -> dict:
    """``model`` on :func:`sweep_batch` rows for every ``distance`` and every ``end`` (where the repeat ends): the
    distance and the place of a copy, varied one at a time. Returns ``"distance"``, ``"end"`` and two tables
    ``[distance][end]``: ``"loss"``, the model's mean copy loss on the scored predictions, and ``"proportional"``,
    the count-proportional one-token copier's on the same predictions; ``nan`` where the source would start before
    position 0 (``end - length + 1 < distance``). The same random tokens (``seed``) in every cell, only the copy
    moves."""
    distances = [_checks.positive_int("distance", d) for d in distances]
    t = model.config.context_length
    ends = [_checks.int_range("end", e, length, t - 1) for e in ends]
    if not distances or not ends:
        raise ValueError(f"distances and ends must each name at least one value, got {distances} and {ends}")
    out = {"distance": distances, "end": ends, "loss": [], "proportional": []}
    was_training = model.training
    model.eval()
    try:
        for d in distances:
            losses, copier = [], []
            for e in ends:
                if e - length + 1 < d:  # the source would start before position 0
                    losses.append(float("nan"))
                    copier.append(float("nan"))
                    continue
                rows = torch.arange(e - length + 1, e)  # the scored predictions i
                ids = sweep_batch(batch_size, model.config, d, length, seed, e)
                scored = _scored(model(ids), ids, rows)
                losses.append(scored["loss"])
                copier.append(scored["proportional"])
            out["loss"].append(losses)
            out["proportional"].append(copier)
    finally:
        model.train(was_training)
    return out


GRID_DISTANCES, GRID_ENDS = (8, 16, 32, 48), (27, 35, 43, 51, 59, 63)
"""The grid notebook 08 prints: how far back the source is, and where the 8-token repeat ends (every source that fits
starts at position 4 or later)."""


def grid_claims(result: dict) -> dict:
    """What notebook 08 says about a :func:`grid` result over :data:`GRID_DISTANCES` and :data:`GRID_ENDS`, as
    booleans with margins a rerun on another machine keeps: at a fixed distance a later repeat costs more, at a
    fixed place a further source costs more, and the model's excess over the count-proportional copier grows along
    both."""
    if tuple(result["distance"]) != GRID_DISTANCES or tuple(result["end"]) != GRID_ENDS:
        raise ValueError(
            f"the grid must cover distances {GRID_DISTANCES} and ends {GRID_ENDS}, "
            f"got {result['distance']} and {result['end']}"
        )

    def at(key, d, e):
        return result[key][GRID_DISTANCES.index(d)][GRID_ENDS.index(e)]

    def excess(d, e):
        return at("loss", d, e) - at("proportional", d, e)

    return {
        "16 back: copy loss at least 0.5 higher with the repeat ending at 63 than at 27": at("loss", 16, 63)
        > at("loss", 16, 27) + 0.5,
        "32 back: copy loss at least 0.5 higher with the repeat ending at 63 than at 43": at("loss", 32, 63)
        > at("loss", 32, 43) + 0.5,
        "the repeat ending at 59: copy loss at least 1.0 higher 48 back than 8 back": at("loss", 48, 59)
        > at("loss", 8, 59) + 1.0,
        "the repeat ending at 51: copy loss at least 0.5 higher 32 back than 8 back": at("loss", 32, 51)
        > at("loss", 8, 51) + 0.5,
        "16 back: the excess over the count-proportional copier larger ending at 63 than at 27": excess(16, 63)
        > excess(16, 27),
        "the repeat ending at 59: the excess over the count-proportional copier larger at 48 back than at 8": excess(
            48, 59
        )
        > excess(8, 59),
    }


@torch.no_grad()
def window_losses(model, ids: torch.Tensor, ends, length: int = SWEEP_LENGTH) -> list[float]:
    """``model``'s mean loss on the copyable predictions (``copy_data.copyable``) of ``ids`` ``(B, T)`` at
    ``i = end - length + 1 .. end - 1``, one float per ``end``: the predictions :func:`grid` scores for a repeat
    ending at ``end``, read on other rows (notebook 08: the first probe, whose repeat runs 32 tokens)."""
    ids = _checks.id_rows(ids)
    t = ids.shape[1]
    ends = [_checks.int_range("end", e, length, t - 1) for e in ends]
    if not ends:
        raise ValueError("ends must name at least one place")
    was_training = model.training
    model.eval()
    try:
        logits = model(ids)
    finally:
        model.train(was_training)
    loss = F.cross_entropy(logits[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none")  # (B, T - 1)
    can = copyable(ids)
    out = []
    for e in ends:
        rows = slice(e - length + 1, e)
        scored = can[:, rows]
        if not scored.any():
            raise ValueError(f"ids have no copyable prediction in {e - length + 1} .. {e - 1}")
        out.append(float(loss[:, rows][scored].mean()))
    return out


LENGTH_ENDS, LENGTH_DISTANCE = (51, 59, 63), 32
"""Where :func:`length_claims` compares: the first probe's repeat (positions 32 to 63, copied from 32 back) against
the grid's 8-token repeats from 32 back ending at 51, 59 and 63: predictions 12 to 30 tokens into the probe's
repeat, past the 16 of any planted run from 17 on (and the 21 of the longest stretch in notebook 08's training rows
from 22 on: :func:`longest_stretches`)."""


def length_claims(long_run: list, result: dict, margin: float = 0.2) -> dict:
    """Whether a repeat longer than any training run costs no more than the grid's 8-token repeat at the same place
    and distance: ``long_run`` is :func:`window_losses` at :data:`LENGTH_ENDS` on a repeat from
    :data:`LENGTH_DISTANCE` back, ``result`` a :func:`grid` over :data:`GRID_DISTANCES` and :data:`GRID_ENDS`.
    ``True`` where the long repeat's loss is at most ``margin`` above the grid's."""
    if tuple(result["distance"]) != GRID_DISTANCES or tuple(result["end"]) != GRID_ENDS:
        raise ValueError(f"the grid must cover distances {GRID_DISTANCES} and ends {GRID_ENDS}")
    if len(long_run) != len(LENGTH_ENDS):
        raise ValueError(f"long_run must hold one loss per end {LENGTH_ENDS}, got {len(long_run)}")
    row = result["loss"][GRID_DISTANCES.index(LENGTH_DISTANCE)]
    return {
        f"{LENGTH_DISTANCE} back, predictions {e - SWEEP_LENGTH + 1}-{e - 1}: the 32-token repeat at most {margin} "
        f"above the 8-token one": loss <= row[GRID_ENDS.index(e)] + margin
        for e, loss in zip(LENGTH_ENDS, long_run, strict=True)
    }


NEAR = (2, 7)
"""The distances most training copies come from (:func:`loss_by_distance` splits the loss there)."""


def loss_by_distance(logits: torch.Tensor, ids: torch.Tensor) -> dict:
    """The mean next-token loss of ``logits`` ``(B, T, V)`` on ``ids`` ``(B, T)``, split by the nearest earlier copy
    (:func:`source_distances`): ``"2-7 back"``, ``"8 or more back"`` and ``"not copyable"`` (``nan`` where a group is
    empty; copies 1 back, a token repeated, belong to neither distance group)."""
    ids = _checks.id_rows(ids)
    if logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise ValueError(f"logits must be (B, T, V) for ids {tuple(ids.shape)}, got {tuple(logits.shape)}")
    loss = F.cross_entropy(logits.detach()[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none")
    match = _matches(ids)  # (B, i, j)
    t = match.shape[-1]
    i = torch.arange(t, device=ids.device)
    gap = torch.where(match, i[:, None] - i[None, :], torch.full_like(match, t, dtype=torch.long)).min(dim=-1).values
    groups = {"2-7 back": (gap >= NEAR[0]) & (gap <= NEAR[1]), "8 or more back": (gap > NEAR[1]) & (gap < t)}
    groups["not copyable"] = gap == t
    return {name: float(loss[m].mean()) if m.any() else float("nan") for name, m in groups.items()}


def icl_score(logits: torch.Tensor, ids: torch.Tensor, width: int = 8) -> float:
    """An in-context-learning score adapted from Olsson et al. (2022), who take the loss at token 500 minus the loss
    at token 50 of long contexts; on a short window: the mean loss of the last ``width`` predictions minus that of
    the first ``width`` (negative: the model predicts better late in the context)."""
    ids = _checks.id_rows(ids)
    if logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise ValueError(f"logits must be (B, T, V) for ids {tuple(ids.shape)}, got {tuple(logits.shape)}")
    loss = F.cross_entropy(logits.detach()[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none")
    _checks.int_range("width", width, 1, loss.shape[1] // 2)
    return float(loss[:, -width:].mean() - loss[:, :width].mean())


@torch.no_grad()
def training_point(model, probe: torch.Tensor, held: torch.Tensor) -> dict:
    """One measurement during training, in eval mode (the model's mode is restored): the ``copyable`` and
    ``other`` losses on ``probe`` (a segment told twice), layer 0's strongest ``previous`` -token weight there, and
    on ``held`` ``(B, T)`` rows of the training distribution the loss by distance (:func:`loss_by_distance`) and
    the ``icl`` score (:func:`icl_score`)."""
    m = measure(model, probe)
    was_training = model.training
    model.eval()
    logits = model(_checks.id_rows(held))
    model.train(was_training)
    point = {"copyable": m["copyable"], "other": m["other"], "previous": float(m["previous"][0].max())}
    return {**point, **loss_by_distance(logits, held), "icl": icl_score(logits, held)}


EARLY, LATE = 100, 300
"""The steps :func:`training_claims` compares: the short-range copier is there by ``EARLY``, the circuit by ``LATE``."""


def training_claims(curve: dict, uniform: float) -> dict:
    """Claims about a training curve (``curve["step"]`` and one list per key of :func:`training_point`, measured at
    least at steps ``EARLY`` and ``LATE``) that hold for the default training on every machine, with margins: the
    copies a few tokens back are learned before the induction circuit forms, which then brings the far copies down.
    The in-context-learning score is not among them: on this data it falls in both stages (most rows end inside a
    short pattern, so late predictions are short copies more often than early ones)."""
    at = {step: i for i, step in enumerate(curve["step"])}
    if EARLY not in at or LATE not in at:
        raise ValueError(f"the curve must be measured at steps {EARLY} and {LATE}, got steps {curve['step']}")
    early, late = at[EARLY], at[LATE]
    return {
        f"step {EARLY}: copies 2-7 back at least 0.5 below copies 8+ back": curve["2-7 back"][early]
        < curve["8 or more back"][early] - 0.5,
        f"step {EARLY}: the probe (copies 32 back) still within 0.3 of ln 64": abs(curve["copyable"][early] - uniform)
        < 0.3,
        f"layer 0's previous-token weight below 0.2 at step {EARLY}, above 0.5 at step {LATE}": curve["previous"][early]
        < 0.2
        and curve["previous"][late] > 0.5,
        f"copies 8+ back at least 1.5 lower at step {LATE} than at step {EARLY}": curve["8 or more back"][late]
        < curve["8 or more back"][early] - 1.5,
    }


def trade_claims(default: dict, far: dict, late_default: float, late_far: float) -> dict:
    """What training on data with more far copies traded, from two :func:`sweep` results (the default data's and the
    far data's, each with distances 8 and 48) and the late probe's copyable loss of each model: the far end better,
    the near end and the late probe worse, each by a margin a rerun on another machine keeps."""
    at = {d: i for i, d in enumerate(default["distance"])}
    if 8 not in at or 48 not in at or default["distance"] != far["distance"]:
        raise ValueError("both sweeps must cover the same distances, 8 and 48 among them")
    near, back = at[8], at[48]
    return {
        "more far copies: 48 back at least 0.5 better": far["loss"][back] < default["loss"][back] - 0.5,
        "more far copies: 8 back at least 0.5 worse": far["loss"][near] > default["loss"][near] + 0.5,
        "more far copies: the late probe at least 0.5 worse": late_far > late_default + 0.5,
    }
