"""Notebook 08's exercises (the induction score from tokens, finding the induction head): solutions pass,
planted mistakes are named, in both languages and through the grading protocol."""

import numpy as np
import pytest
import torch

from llm_lab import exercises as ex
from llm_lab import induction


def induction_score_from_tokens(attn_weights, token_ids):
    t = token_ids.shape[0]
    targets = torch.zeros(t, t, dtype=torch.bool)
    targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]
    targets &= torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)
    rows = targets.any(dim=-1)
    return (attn_weights * targets).sum(dim=-1)[..., rows].mean(dim=-1)


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


def find_induction_head(attn_weights):
    t = attn_weights.shape[-1]
    rows = torch.arange(t // 2, t)
    scores = attn_weights[..., rows, rows - t // 2 + 1].mean(dim=-1)
    return divmod(int(scores.argmax()), attn_weights.shape[1])


def finder_factory(key_offset=1, swap=False, every_row=False):
    def find(attn_weights):
        t = attn_weights.shape[-1]
        if every_row:  # the previous-token score: key i - 1 on every row
            rows = torch.arange(1, t)
            scores = attn_weights[..., rows, rows - 1].mean(dim=-1)
        else:
            rows = torch.arange(t // 2, t)
            scores = attn_weights[..., rows, rows - t // 2 + key_offset].mean(dim=-1)
        layer, head = divmod(int(scores.argmax()), attn_weights.shape[1])
        return (head, layer) if swap else (layer, head)

    return find


SOLUTIONS = {"induction_score": induction_score_from_tokens, "find_induction_head": find_induction_head}
PLANTED_ALL = [
    ("induction_score", score_factory(same_token=True), "same_token_not_next"),
    ("induction_score", score_factory(current=True), "current_included"),
    ("induction_score", score_factory(all_rows=True), "rows_without_target"),
    ("find_induction_head", finder_factory(every_row=True), "picked_previous"),
    ("find_induction_head", finder_factory(key_offset=0), "picked_duplicate"),
    ("find_induction_head", finder_factory(swap=True), "layer_head_swapped"),
    ("find_induction_head", lambda w: int(find_induction_head(w)[1]), "not_layer_head"),
    ("find_induction_head", lambda w: (9, 0), "not_a_head"),
    ("find_induction_head", lambda w: (0, 0) if find_induction_head(w) != (0, 0) else (0, 1), None),
]
PLANTED = [p for p in PLANTED_ALL if p[2] is not None]  # what tests/test_exercises.py checks: a named hint


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_solutions_pass(name):
    result = ex.grade(name, SOLUTIONS[name])
    assert result.passed, result.message


@pytest.mark.parametrize(("name", "fn", "hint"), PLANTED_ALL, ids=[f"{n}-{h}" for n, _, h in PLANTED_ALL])
def test_planted_mistakes_are_named(name, fn, hint):
    result = ex.grade(name, fn)
    assert result.status == "fail", result.message
    if hint is not None:
        assert result.hint == hint, result.message
    else:  # a fixed head, whatever the model: no kind explains it, so none is named
        assert result.hint == "wrong_head", result.message
    zh = ex.grade(name, fn, lang="zh")
    assert zh.hint == result.hint and zh.message != result.message


def test_find_head_accepts_tensors_and_checkers_only_see_tensors():
    seen = []

    def spy(attn_weights):
        seen.append(type(attn_weights))
        layer, head = find_induction_head(attn_weights)
        return torch.tensor([layer, head])

    assert ex.grade("find_induction_head", spy).passed
    assert set(seen) == {torch.Tensor}


def test_the_lesson_score_equals_the_token_score_on_the_probe():
    """On a probe of distinct tokens the token-based score (exercise 2) is the lesson's position-based one."""
    t = 16
    half = torch.randperm(40, generator=torch.Generator().manual_seed(0))[: t // 2]
    ids = torch.cat([half, half])
    w = torch.softmax(torch.randn(2, 3, t, t).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), -torch.inf), -1)
    assert torch.allclose(induction_score_from_tokens(w, ids), induction.induction_scores(w))


@pytest.mark.parametrize(("name", "fn", "hint"), PLANTED, ids=[f"{n}-{h}" for n, _, h in PLANTED])
def test_planted_mistakes_get_the_same_verdict_through_the_grading_protocol(name, fn, hint):
    """The checkers see the learner's function only through tensors and plain data (grading's kernel proxies)."""
    from test_remote import remote_grade

    remote = remote_grade(name, fn)
    assert (remote.status, remote.hint) == ("fail", hint), remote.message


# ---- llm_lab's explorers compute the answers: handing them in is the reference ------------------------------


def test_llm_labs_induction_scores_are_references():
    from llm_lab.explore import heads
    from llm_lab.explore import induction as explore_induction

    def via_explorer(attn_weights, token_ids):
        return torch.stack([heads.induction_score(w[None], token_ids[None]) for w in attn_weights])

    def via_probe_scores(attn_weights):
        scores = explore_induction.induction_scores(attn_weights)
        return divmod(int(scores.argmax()), attn_weights.shape[1])

    assert ex.grade("induction_score", via_explorer).status == "reference"
    assert ex.grade("find_induction_head", via_probe_scores).status == "reference"


# ---- the pair may come as numpy ints; a decoding slip is named as one, a kind only when it is one ----------------


@pytest.mark.parametrize("fn", [
    lambda w: tuple(np.int64(i) for i in find_induction_head(w)),
    lambda w: np.array(find_induction_head(w)),
    lambda w: np.unravel_index(int(w[..., torch.arange(w.shape[-1] // 2, w.shape[-1]),
                                        torch.arange(w.shape[-1] // 2, w.shape[-1]) - w.shape[-1] // 2 + 1]
                                    .mean(-1).argmax()), w.shape[:2]),
], ids=["numpy-int64", "numpy-array", "unravel_index"])
def test_a_pair_of_numpy_ints_is_a_layer_and_head(fn):
    result = ex.grade("find_induction_head", fn)
    assert result.passed, result.message


def _decoded(how):
    def find(attn_weights):
        t = attn_weights.shape[-1]
        rows = torch.arange(t // 2, t)
        flat = int(attn_weights[..., rows, rows - t // 2 + 1].mean(dim=-1).argmax())
        if how == "one_based":
            layer, head = divmod(flat, attn_weights.shape[1])
            return layer + 1, head + 1
        return divmod(flat, attn_weights.shape[0])  # by the number of layers

    return find


@pytest.mark.parametrize(("how", "hint"), [("one_based", "index_one_based"), ("layers", "divmod_wrong_base")])
def test_a_right_score_decoded_wrong_is_named_as_such(how, hint):
    result = ex.grade("find_induction_head", _decoded(how))
    assert (result.status, result.hint) == ("fail", hint), result.message
    assert "kind" not in result.message
