"""Notebook 08 (transfer): the induction score from tokens, and finding by ablation the layer-0 head an induction
head depends on.

Both checkers hand the learner's function only tensors and ints (attention patterns ``(L, nh, T, T)``, token ids
``(T,)``, the patterns of several ablation runs ``(R, L, nh, T, T)``) and read back a tensor or an int, through
``_harness.call``.
"""

from __future__ import annotations

import torch

from ._core import Exercise, Fail, as_tensor, compare, same
from ._shared import as_integer, call_unchanged, gen
from ._texts_ex08_induction import _FIXES, _MESSAGES


def _earlier(t: int) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)  # key j < query i


def induction_targets(token_ids: torch.Tensor, *, next_token: bool = True, strictly_earlier: bool = True):
    """bool ``(T, T)``: key ``j`` is an induction target of query ``i`` (``token_ids[j - 1] == token_ids[i]``,
    ``j < i``); the wrong versions: the copy itself (``next_token=False``) or ``j <= i``."""
    t = token_ids.shape[0]
    targets = torch.zeros(t, t, dtype=torch.bool)
    if next_token:
        targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]
    else:
        targets = token_ids[:, None] == token_ids[None, :]
    keep = _earlier(t) if strictly_earlier else torch.ones(t, t, dtype=torch.bool).tril()
    return targets & keep


def token_induction_score(attn_weights: torch.Tensor, token_ids: torch.Tensor, *, all_rows: bool = False, **kw):
    """``(L, nh, T, T), (T,) -> (L, nh)``: the weight on induction targets, averaged over the rows that have one."""
    targets = induction_targets(token_ids, **kw)
    per_row = (attn_weights * targets).sum(dim=-1)  # (L, nh, T)
    rows = torch.ones_like(targets[:, 0]) if all_rows else targets.any(dim=-1)
    return per_row[..., rows].mean(dim=-1)


def probe_offset_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """``(L, nh, T, T) -> (L, nh)``: the lesson's probe formula read on any text, the mean weight of the rows
    ``i >= T/2`` on key ``i - T/2 + 1``, whatever the tokens (right only where the second half repeats the first)."""
    t = attn_weights.shape[-1]
    rows = torch.arange(t // 2, t)
    return attn_weights[..., rows, rows - t // 2 + 1].mean(dim=-1)


def _causal_noise(shape, g: torch.Generator, spread: float = 1.0) -> torch.Tensor:
    t = shape[-1]
    scores = torch.randn(*shape, generator=g) * spread
    scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1)


def _sharpen(noise: torch.Tensor, target: torch.Tensor, strength: float) -> torch.Tensor:
    """Move ``strength`` of each row's weight onto its target keys (bool ``(T, T)``, rows without one unchanged)."""
    has = target.any(dim=-1, keepdim=True)
    onehot = target.float() / target.sum(dim=-1, keepdim=True).clamp(min=1)
    return torch.where(has, (1 - strength) * noise + strength * onehot, noise)


def _score_mistakes(weights, ids) -> list:
    return [
        ("same_token_not_next", lambda: token_induction_score(weights, ids, next_token=False)),
        ("current_included", lambda: token_induction_score(weights, ids, strictly_earlier=False)),
        ("rows_without_target", lambda: token_induction_score(weights, ids, all_rows=True)),
    ]


# named only when the learner's scores are theirs on every case (run in full): (hint, its computation)
SCORE_WHOLE_MISTAKES = (("probe_offset_used", lambda weights, ids: probe_offset_score(weights)),)


def body_induction_score(fn) -> list[str]:
    g = gen(808)
    cases, runs, wrong = [], [], None
    # (layers, heads, T, vocabulary, repeated halves?): a repeated probe, natural-looking text with chance repeats
    for layers, heads, t, vocab, probe in (
        (2, 4, 12, 50, True),
        (1, 2, 10, 4, False),
        (2, 3, 16, 6, False),
        (3, 2, 8, 3, False),
    ):
        if probe:
            half = torch.randperm(vocab, generator=g)[: t // 2]
            ids = torch.cat([half, half])
        else:
            ids = torch.randint(0, vocab, (t,), generator=g)
            ids[t // 2] = ids[1]  # at least one row with an induction target
        weights = _causal_noise((layers, heads, t, t), g, spread=2.0)
        weights[0, 0] = _sharpen(weights[0, 0], induction_targets(ids), 0.8)
        weights[-1, -1] = _sharpen(weights[-1, -1], induction_targets(ids, next_token=False), 0.8)
        case = f"attn_weights.shape={(layers, heads, t, t)}, token_ids={ids.tolist()}"
        try:
            out = as_tensor(call_unchanged(fn, weights, ids, names=("attn_weights", "token_ids"), case=case), case)
        except Fail:
            if wrong is not None:  # an earlier case was wrong: that is said first
                compare(*wrong)
            raise
        want = token_induction_score(weights, ids)
        runs.append((out, weights, ids))
        if wrong is None and not same(out, want):
            wrong = (out, want, case, _score_mistakes(weights, ids))
        cases.append(f"{layers}x{heads} heads, T={t}")
    if wrong is not None:
        for hint, make in SCORE_WHOLE_MISTAKES:
            if all(same(out, make(weights, ids)) for out, weights, ids in runs):
                raise Fail(hint, case=wrong[2])
        compare(*wrong)
    return cases


# ---- which layer-0 head does an induction head depend on? (found by ablation) -----------------------------------


def _pattern(kind: str, t: int, g: torch.Generator, strength: float, noise: torch.Tensor):
    """One head's weights ``(T, T)`` on a probe whose second half repeats its first: ``strength`` of each row's
    weight on the kind's target keys, the rest on ``noise`` (a causal softmax of its own). The asked induction
    head is drawn part by part instead (``_asked_pattern``)."""
    rows = torch.arange(t)
    target = torch.zeros(t, t, dtype=torch.bool)
    if kind == "induction":
        target[rows[t // 2 :], rows[t // 2 :] - t // 2 + 1] = True
    elif kind == "previous":
        target[rows[1:], rows[1:] - 1] = True
    elif kind == "first":
        target[:, 0] = True
    elif kind == "current":
        target[rows, rows] = True
    return _sharpen(noise, target, 0.0 if kind == "spread" else strength)


def _asked_pattern(t: int, target: torch.Tensor, copy: torch.Tensor, first: torch.Tensor, shape: torch.Tensor):
    """The asked head's weights ``(T, T)`` in one run: row ``i >= T/2`` puts ``target[i - T/2]`` on key
    ``i - T/2 + 1`` and ``copy[i - T/2]`` on key ``i - T/2``, row ``0 < i < T/2`` puts ``first[i - 1]`` on key 0;
    the rest of each row is spread over its other keys ``j <= i`` in proportion to ``shape``."""
    rows = torch.arange(t)
    half = rows[t // 2 :]
    fixed = torch.zeros(t, t)
    fixed[half, half - t // 2 + 1] = target
    fixed[half, half - t // 2] = copy
    fixed[1 : t // 2, 0] = first
    held = torch.zeros(t, t, dtype=torch.bool)
    held[half, half - t // 2 + 1] = held[half, half - t // 2] = True
    held[1 : t // 2, 0] = True
    free = torch.ones(t, t, dtype=torch.bool).tril() & ~held
    spread = shape * free
    spread = spread / spread.sum(dim=-1, keepdim=True)
    return fixed + (1 - fixed.sum(dim=-1, keepdim=True)) * spread


def induction_of(weights: torch.Tensor, layer: int, head: int, offset: int = 1) -> torch.Tensor:
    """The induction score of head ``(layer, head)`` in every run: ``(R, L, nh, T, T) -> (R,)``: the mean weight of
    the repeated half's rows ``i`` on key ``i - T/2 + offset`` (1: the token after the copy; 0: the copy)."""
    t = weights.shape[-1]
    rows = torch.arange(t // 2, t)
    return weights[:, layer, head, rows, rows - t // 2 + offset].mean(dim=-1)


def needed_head(runs: torch.Tensor, layer: int, head: int, *, mistake: str | None = None) -> int:
    """The reference: the layer-0 head whose ablation lowers the induction score of ``(layer, head)`` the most.
    ``mistake`` computes one of the named wrong answers instead (``ABLATION_MISTAKES``)."""
    if mistake == "picked_by_pattern":  # the clean run's strongest previous-token head: no ablation read
        t = runs.shape[-1]
        rows = torch.arange(1, t)
        return int(runs[0, 0, :, rows, rows - 1].mean(dim=-1).argmax())
    if mistake == "other_induction_head":  # the strongest induction head of the clean run, not the one asked
        scores = torch.stack(
            [induction_of(runs[:1], lay, h)[0] for lay in range(1, runs.shape[1]) for h in range(runs.shape[2])]
        )
        lay, h = divmod(int(scores.argmax()), runs.shape[2])
        return needed_head(runs, lay + 1, h)
    if mistake == "layer_one_used":  # `layer` ignored: layer 1 (where the lesson's model has its induction heads)
        return needed_head(runs, 1, head)
    if mistake == "last_layer_used":  # `layer` ignored: the last layer
        return needed_head(runs, runs.shape[1] - 1, head)
    scores = induction_of(runs, layer, head, offset=0 if mistake == "copy_key_scored" else 1)  # (1 + nh,)
    if mistake == "clean_run_counted":  # the argmax over all the runs: run 1 + h read as head 1 + h
        return int((scores[0] - scores).argmax())
    if mistake == "least_drop":  # argmax of the ablated score: the head the induction head needs least
        return int(scores[1:].argmax())
    return int((scores[0] - scores[1:]).argmax())


# (mistake, hint): the wrong answers the statement invites, each computed by ``needed_head(..., mistake=...)``;
# both ways of ignoring `layer` get one name
ABLATION_MISTAKES = (
    ("picked_by_pattern", "picked_by_pattern"),
    ("other_induction_head", "other_induction_head"),
    ("layer_one_used", "layer_ignored"),
    ("last_layer_used", "layer_ignored"),
    ("clean_run_counted", "clean_run_counted"),
    ("copy_key_scored", "copy_key_scored"),
    ("least_drop", "least_drop"),
)
_ABLATION_MISTAKES = tuple(m for m, _ in ABLATION_MISTAKES)
# (layers, heads, T, where the asked head sits): a middle layer on some models, the last on others, so code that
# ignores `layer` (layer 1, or the last) is wrong on at least one model whichever layer it reads
ABLATION_MODELS = ((3, 7, 16, "middle"), (3, 8, 12, "last"), (4, 7, 20, "middle"), (4, 8, 14, "last"))
# whose run reshapes the asked head most, one per model in turn: another measure picks it, a named mistake's head
# that differs on each model, so no name fits every input
RESHAPED = ("decoy", "least", "copy", "other")


def _asked_head_runs(t: int, heads: int, g: torch.Generator, drop: dict, roles: dict, reshaped: int) -> list:
    """The parts of the asked head's pattern (``_asked_pattern``) in the clean run, then in the run without each
    layer-0 head ``h``: its score lowered by ``drop[h]``, the rest changed as ``_runs`` says."""
    needed, copy = roles["needed"], roles["copy"]
    # clean: target weights (one per row i >= T/2), copy weights, first-half weights on key 0, the rest's shape
    n = t - t // 2
    target0 = 0.55 + 0.1 * torch.rand(n, generator=g)
    copy0 = 0.3 * (1 - target0)
    first0 = 0.6 + 0.1 * torch.rand(t // 2 - 1, generator=g)
    shape0 = torch.exp(torch.randn(t, t, generator=g))
    drop[needed] = 0.6 * float(target0.mean())
    asked_runs = [(target0, copy0, first0, shape0)]  # run 0, then one per zeroed head
    for off in range(heads):
        wiggle = 0.03 * torch.rand(n, generator=g)
        wiggle[-1] = 0.0
        wiggle[:-1] -= wiggle[:-1].mean()  # moves weight between the rows, the mean kept
        target = target0 - drop[off] + wiggle
        if off == needed:  # the last row keeps nearly all its weight, the other rows lose the more
            target[-1] = target0[-1] - 0.03
            target[:-1] = target0[:-1] - (n * drop[off] - 0.03) / (n - 1) + wiggle[:-1]
        first = first0 + 0.05 * (torch.rand(t // 2 - 1, generator=g) - 0.5)
        shape = shape0 * torch.exp(0.5 * torch.randn(t, t, generator=g))
        if off == reshaped:
            target[-1] -= 0.35
            target[:-1] += 0.35 / (n - 1)
            first = torch.zeros_like(first0)
            shape = shape0 * 1e-3 + torch.eye(t) * 1e3
        asked_runs.append((target, torch.zeros(n) if off == copy else copy0, first, shape))
    return asked_runs


def _runs(layers: int, heads: int, t: int, g: torch.Generator, where: str = "middle", turn: int = 0):
    """Weights ``(1 + nh, L, nh, T, T)`` of one probe: run 0 clean, run ``1 + h`` with layer-0 head ``h`` zeroed
    (zero ablation leaves layer 0's own patterns as they were; the layers above change). Returns the runs, the
    induction head asked about (in a middle layer, or the last: ``where``), and the roles: the head it needs, a
    strong previous-token head it does not need (``decoy``), the head a second, stronger induction head needs
    (``other``), the head it needs least (``least``), the head whose ablation takes its weight off the copy itself
    (``copy``). Head 0 has no role: every head not asked about is the same in every run, so its drops are all 0 and
    their argmax is head 0, the answer of code that reads another layer. Head 0, the roles and ``needed + 1`` are
    seven different heads, so every named mistake gives its own answer.

    Each ablated run also reshapes the asked head outside its score (target moved between rows, mean kept; the
    rest redrawn): the needed head's run spares the last row, and the run of ``reshaped`` (``RESHAPED[turn]``)
    changes the whole pattern, the last row and the first half's rows the most, the mean little."""
    if layers < 3 or heads < 7:
        raise ValueError(f"_runs needs >= 3 layers and >= 7 heads (a middle layer, 7 roles), got {layers}, {heads}")
    needed = int(torch.randint(1, heads - 1, (), generator=g))
    rest = [h for h in torch.randperm(heads, generator=g).tolist() if h not in (0, needed, needed + 1)]
    decoy, other, least, copy = rest[:4]
    roles = {"needed": needed, "decoy": decoy, "other": other, "least": least, "copy": copy}
    reshaped = roles[RESHAPED[turn % len(RESHAPED)]]
    asked_layer = layers - 1 if where == "last" else int(torch.randint(1, layers - 1, (), generator=g))
    asked = (asked_layer, int(torch.randint(0, heads, (), generator=g)))
    second = (asked[0], (asked[1] + 1 + int(torch.randint(0, heads - 1, (), generator=g))) % heads)
    kinds0 = ["previous" if h in (needed, decoy) else ("first", "current", "spread")[h % 3] for h in range(heads)]
    strength0 = {h: 0.45 + 0.1 * float(torch.rand((), generator=g)) for h in range(heads)}
    strength0[decoy] = 0.9
    noise = _causal_noise((layers, heads, t, t), g)
    upper_kinds = {
        (lay, h): ("first", "current", "spread", "previous")[int(torch.randint(0, 4, (), generator=g))]
        for lay in range(1, layers)
        for h in range(heads)
    }
    upper_kinds[asked] = upper_kinds[second] = "induction"
    drop = {h: 0.03 + 0.07 * float(torch.rand((), generator=g)) for h in range(heads)}  # small, for most heads
    drop[least] = 0.0
    drop[other] *= 0.5
    drop[copy] += 0.03  # its run also gives back the weight taken off the copy: the score must still drop
    asked_runs = _asked_head_runs(t, heads, g, drop, roles, reshaped)
    base = {asked: 0.6, second: 0.8}  # the second induction head is the stronger one in the clean run
    runs = []
    for run in range(1 + heads):
        off = run - 1  # the layer-0 head zeroed in this run (-1: none)
        layer_w = [torch.stack([_pattern(kinds0[h], t, g, strength0[h], noise[0, h]) for h in range(heads)])]
        for lay in range(1, layers):
            ws = []
            for h in range(heads):
                if (lay, h) == asked:
                    ws.append(_asked_pattern(t, *asked_runs[run]))
                    continue
                s = base.get((lay, h), 0.5 + 0.1 * (lay + h) / (layers + heads))
                if (lay, h) == second and off >= 0:
                    s = s * 0.1 if off == other else s - 0.05
                ws.append(_pattern(upper_kinds[(lay, h)], t, g, s, noise[lay, h]))
            layer_w.append(torch.stack(ws))
        runs.append(torch.stack(layer_w))
    return torch.stack(runs), asked, {**roles, "reshaped": reshaped}


def _head_index(out, heads: int, case: str) -> int:
    got = as_integer(out)
    if got is None:
        raise Fail("not_a_head_index", got=type(out).__name__, case=case)
    if not 0 <= got < heads:
        raise Fail("no_such_head", got=got, heads=heads, case=case)
    return got


def body_find_by_ablation(fn) -> list[str]:
    g = gen(8008)
    cases, wrong, labels = [], [], []
    for turn, (layers, heads, t, where) in enumerate(ABLATION_MODELS):
        # the roles (the answer among them) are not kept: the answer is computed after the learner's call returns
        runs, (layer, head) = _runs(layers, heads, t, g, where, turn=turn)[:2]
        case = f"runs.shape={tuple(runs.shape)}, layer={layer}, head={head}"
        out = call_unchanged(fn, runs, layer, head, names=("runs", "layer", "head"), case=case)
        got = _head_index(out, heads, case)
        want = needed_head(runs, layer, head)
        if got != want:
            wrong.append(case)
        named = [m for m in _ABLATION_MISTAKES if needed_head(runs, layer, head, mistake=m) == got]
        cases.append((case, got, want, named))
        labels.append(f"{layers}x{heads} heads, T={t}")
    if wrong:
        # a mistake is named only when it gives the learner's answer on every case
        for m, hint in ABLATION_MISTAKES:
            if all(m in named for _, _, _, named in cases):
                case, got, want, _ = next(c for c in cases if c[1] != c[2])
                raise Fail(hint, case=case, got=got, want=want, layer=case.split("layer=")[1].split(",")[0])
        case, got, want, _ = next(c for c in cases if c[1] != c[2])
        raise Fail("wrong_layer0_head", case=case, got=got, want=want)
    return labels


# llm_lab's own ways to the answer (the explorers the lesson uses): handing one in, or calling it, is the reference
_SCORE_REFERENCES = (
    "explore.heads.induction_score",
    "explore.heads.head_scores",
    "explore.heads.head_roles",
    "explore.heads._induction_targets",
    # the average induction_score delegates to, listed by hand: derived from what the listed functions call, the
    # private helpers would bring in ones that other explorers share (`_weights`, the input check of
    # previous_token_score and the rest), making an honest call of those a reference
    "explore.heads._masked_score",
    "explore.induction.induction_scores",  # the lesson's score on a probe: the asked head's score in each run
)

RECORDS = [
    Exercise(
        name="induction_score",
        notebook="08",
        body=body_induction_score,
        points=2,
        takes="function",
        signature="``fn(attn_weights (L, nh, T, T), token_ids (T,)) -> (L, nh)``: the mean weight each head puts on "
        "keys j < i with ``token_ids[j - 1] == token_ids[i]``, over the rows that have such a key.",
        hints=("same_token_not_next", "current_included", "rows_without_target", "probe_offset_used", "input_modified"),
        references=_SCORE_REFERENCES
        + ("exercises._ex08_induction.token_induction_score", "exercises._ex08_induction.induction_targets"),
        messages=_MESSAGES,
        fixes=_FIXES,
    ),
    Exercise(
        name="find_by_ablation",
        notebook="08",
        body=body_find_by_ablation,
        points=2,
        takes="function",
        signature="``fn(runs (1 + nh, L, nh, T, T), layer, head) -> int``: the weights of one probe (second half = "
        "first half), run 0 clean and run ``1 + h`` with layer-0 head ``h`` zeroed; return the layer-0 head whose "
        "ablation lowers the induction score of head ``(layer, head)`` the most.",
        hints=(
            "not_a_head_index",
            "no_such_head",
            "picked_by_pattern",
            "other_induction_head",
            "layer_ignored",
            "clean_run_counted",
            "copy_key_scored",
            "least_drop",
            "wrong_layer0_head",
            "input_modified",
        ),
        references=_SCORE_REFERENCES,
        messages=_MESSAGES,
        fixes=_FIXES,
    ),
]
