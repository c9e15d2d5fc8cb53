"""Notebook 08's exercises (the induction score from tokens, finding the induction head): solutions pass,
planted mistakes are named, in both languages and through the grading protocol (the solutions and planted
mistakes: solutions_ex08_induction.py)."""

import pytest
import torch
from solutions_ex08_induction import PLANTED, PLANTED_ALL, SOLUTIONS, find_by_ablation, induction_score_from_tokens

from llm_lab import exercises as ex
from llm_lab.explore import induction


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
    else:
        assert result.hint is not None, result.message
    zh = ex.grade(name, fn, lang="zh")
    assert zh.hint == result.hint and zh.message != result.message


def test_find_by_ablation_sees_only_tensors_and_ints_and_may_answer_with_a_tensor():
    seen = []

    def spy(runs, layer, head):
        seen.append((type(runs), type(layer), type(head)))
        return torch.tensor(find_by_ablation(runs, layer, head))

    assert ex.grade("find_by_ablation", spy).passed
    assert set(seen) == {(torch.Tensor, int, int)}


def test_every_named_ablation_mistake_gives_its_own_answer_on_every_input():
    """The checker's models are built so that the answer, the head before it in the runs' numbering and the three
    decoys are five different heads: each mistake is told apart on every input, public or secret."""
    from llm_lab.exercises import _ex08_induction as m

    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        runs, (layer, head), roles = m._runs(2 + seed % 2, 5 + seed % 4, 12 + 2 * (seed % 3), g)
        answers = {None: m.needed_head(runs, layer, head)}
        answers.update({k: m.needed_head(runs, layer, head, mistake=k) for k in m._ABLATION_MISTAKES})
        assert answers[None] == roles["needed"]
        assert len(set(answers.values())) == len(answers), (seed, answers)
        assert (runs[1:, 0] == runs[0, 0]).all()  # zero ablation leaves layer 0's own patterns alone


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
    from _remote_loopback import remote_grade

    remote = remote_grade(name, fn)
    assert (remote.status, remote.hint) == ("fail", hint), remote.message


# ---- llm_lab's explorers compute the answers: handing them in is the reference ------------------------------


def test_llm_labs_induction_scores_are_references():
    from llm_lab.explore import heads

    def via_explorer(attn_weights, token_ids):
        return torch.stack([heads.induction_score(w[None], token_ids[None]) for w in attn_weights])

    def via_reference(runs, layer, head):
        from llm_lab.exercises import _ex08_induction

        return _ex08_induction.needed_head(runs, layer, head)

    assert ex.grade("induction_score", via_explorer).status == "reference"
    assert ex.grade("find_by_ablation", via_reference).status == "reference"
