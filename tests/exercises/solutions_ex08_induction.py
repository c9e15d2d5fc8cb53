"""Notebook 08's exercises (the induction score from tokens, finding the induction head): solutions, planted
mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch


def induction_score_from_tokens(attn_weights, token_ids):
    t = token_ids.shape[0]
    targets = torch.zeros(t, t, dtype=torch.bool)
    targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]
    targets &= torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)
    rows = targets.any(dim=-1)
    return (attn_weights * targets).sum(dim=-1)[..., rows].mean(dim=-1)


def probe_formula(attn_weights, token_ids):
    """The lesson's probe formula on any text: key i - T/2 + 1 in the rows i >= T/2, the ids unread."""
    t = token_ids.shape[0]
    rows = torch.arange(t // 2, t)
    return attn_weights[..., rows, rows - t // 2 + 1].mean(dim=-1)


def score_by_rows(attn_weights, token_ids):  # correct: one query at a time, the keys after its earlier copies
    t = token_ids.shape[0]
    per_row = []
    for i in range(t):
        keys = [j for j in range(1, i) if token_ids[j - 1] == token_ids[i]]
        if keys:
            per_row.append(attn_weights[..., i, keys].sum(dim=-1))
    return torch.stack(per_row, dim=-1).mean(dim=-1)


def score_factory(same_token=False, current=False, all_rows=False):
    def score(attn_weights, token_ids):
        t = token_ids.shape[0]
        if same_token:
            targets = token_ids[:, None] == token_ids[None, :]
        else:
            targets = torch.zeros(t, t, dtype=torch.bool)
            targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]
        targets &= torch.ones(t, t, dtype=torch.bool).tril(diagonal=0 if current else -1)
        per_row = (attn_weights * targets).sum(dim=-1)
        return per_row.mean(dim=-1) if all_rows else per_row[..., targets.any(dim=-1)].mean(dim=-1)

    return score


def find_by_ablation(runs, layer, head):
    t = runs.shape[-1]
    keys = torch.arange(t // 2, t) - t // 2 + 1
    scores = torch.stack([run[layer, head, torch.arange(t // 2, t), keys].mean() for run in runs])
    return int(torch.argmin(scores[1:] - scores[0]))  # the most negative change


def ablation_factory(mistake):
    def find(runs, layer, head):
        t = runs.shape[-1]
        rows = torch.arange(t // 2, t)
        if mistake == "pattern":  # the clean run's most previous-token-like layer-0 head
            prev = torch.arange(1, t)
            return int(runs[0, 0, :, prev, prev - 1].mean(-1).argmax())
        if mistake == "strongest":  # explains the strongest induction head instead of the one asked
            ind = runs[0, 1:, :, rows, rows - t // 2 + 1].mean(-1)
            lay, h = divmod(int(ind.argmax()), runs.shape[2])
            layer, head = lay + 1, h
        if mistake == "layer_one":  # `layer` ignored: the lesson's model has its induction heads in layer 1
            layer = 1
        if mistake == "last_layer":  # `layer` ignored: the last layer
            layer = runs.shape[1] - 1
        offset = 0 if mistake == "copy_key" else 1  # 0: key i - T/2, the copy itself
        scores = runs[:, layer, head, rows, rows - t // 2 + offset].mean(-1)
        if mistake == "counted":  # argmax over every run, run 0 included
            return int((scores[0] - scores).argmax())
        if mistake == "least":  # the highest score left after the ablation
            return int(scores[1:].argmax())
        return int((scores[0] - scores[1:]).argmax())

    return find


SOLUTIONS = {"induction_score": induction_score_from_tokens, "find_by_ablation": find_by_ablation}
PLANTED_ALL = [
    ("induction_score", probe_formula, "probe_offset_used"),
    ("induction_score", score_factory(same_token=True), "same_token_not_next"),
    ("induction_score", score_factory(current=True), "current_included"),
    ("induction_score", score_factory(all_rows=True), "rows_without_target"),
    ("find_by_ablation", ablation_factory("pattern"), "picked_by_pattern"),
    ("find_by_ablation", ablation_factory("strongest"), "other_induction_head"),
    ("find_by_ablation", ablation_factory("counted"), "clean_run_counted"),
    ("find_by_ablation", ablation_factory("least"), "least_drop"),
    ("find_by_ablation", ablation_factory("layer_one"), "layer_ignored"),
    ("find_by_ablation", ablation_factory("last_layer"), "layer_ignored"),
    ("find_by_ablation", ablation_factory("copy_key"), "copy_key_scored"),
    ("find_by_ablation", lambda runs, layer, head: float(find_by_ablation(runs, layer, head)), "not_a_head_index"),
    ("find_by_ablation", lambda runs, layer, head: runs.shape[2], "no_such_head"),
    (
        "find_by_ablation",
        lambda runs, layer, head: 0 if find_by_ablation(runs, layer, head) else 1,
        "wrong_layer0_head",
    ),
]
PLANTED = [p for p in PLANTED_ALL if p[2] is not None]
CORRECT_BUT_DIFFERENT = [
    ("induction_score", score_by_rows)
]  # what tests/exercises/test_exercises.py checks: a named hint
