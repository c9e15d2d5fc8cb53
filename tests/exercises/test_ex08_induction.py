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
    """The checker's models are built so that the answer, the head after it, head 0 and the four decoys are seven
    different heads: each mistake is told apart on every input, public or secret (the checker's own draws)."""
    from llm_lab.exercises import _ex08_induction as m
    from llm_lab.exercises._shared import gen, secret_inputs

    for secret in (None, *range(40)):
        with secret_inputs(secret):
            g = gen(8008)
            for layers, heads, t, where in m.ABLATION_MODELS:
                runs, (layer, head), roles = m._runs(layers, heads, t, g, where)
                assert layer == layers - 1 if where == "last" else 1 <= layer < layers - 1
                answers = {None: m.needed_head(runs, layer, head)}
                answers.update({k: m.needed_head(runs, layer, head, mistake=k) for k in m._ABLATION_MISTAKES})
                assert answers[None] == roles["needed"] != 0
                unchanged = {0}  # every other head is the same in every run: its drops are 0, their argmax 0
                ignored = {answers["layer_one_used"], answers["last_layer_used"]} - {answers[None]}
                assert ignored == unchanged, (secret, answers)
                told = [v for k, v in answers.items() if k not in ("layer_one_used", "last_layer_used")]
                assert len(set(told)) == len(told) and 0 not in told, (secret, answers)
                assert (runs[1:, 0] == runs[0, 0]).all()  # zero ablation leaves layer 0's own patterns alone


@pytest.mark.parametrize("fixed", ["layer_one", "last_layer"])
def test_code_that_ignores_layer_fails_in_the_learners_check_and_every_graded_secret(fixed):
    """Hard-coding layer 1 or the last layer passed the learner's check (two of three models had
    2 layers) and about 2 in 3 graded secrets."""
    from solutions_ex08_induction import ablation_factory

    fn = ablation_factory(fixed)
    for secret in (None, *range(30)):
        result = ex.grade("find_by_ablation", fn, secret=secret)
        assert (result.status, result.hint) == ("fail", "layer_ignored"), (secret, result.message)
        assert ex.grade("find_by_ablation", find_by_ablation, secret=secret).passed


def test_the_copy_key_is_named_for_what_it_is():
    """Scoring key i - T/2 (the copy) was named least_drop, whose fix the code already follows."""
    from solutions_ex08_induction import ablation_factory

    for secret in (None, 1, 2, 3):
        result = ex.grade("find_by_ablation", ablation_factory("copy_key"), secret=secret)
        assert result.hint == "copy_key_scored", result.message


def test_the_lesson_score_equals_the_token_score_on_the_probe():
    """On a probe of distinct tokens the token-based score (exercise 2) is the lesson's position-based one."""
    t = 16
    half = torch.randperm(40, generator=torch.Generator().manual_seed(0))[: t // 2]
    ids = torch.cat([half, half])
    w = torch.softmax(torch.randn(2, 3, t, t).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), -torch.inf), -1)
    assert torch.allclose(induction_score_from_tokens(w, ids), induction.induction_scores(w))


def test_the_probe_formula_on_any_text_is_named_only_when_it_gives_every_case():
    from solutions_ex08_induction import probe_formula, score_by_rows

    for secret in (None, 1, 2):
        result = ex.grade("induction_score", probe_formula, secret=secret)
        assert (result.status, result.hint) == ("fail", "probe_offset_used"), result.message
        assert ex.grade("induction_score", score_by_rows, secret=secret).passed

    def probe_formula_on_one_length(attn_weights, token_ids):  # right elsewhere: not the probe formula's answers
        use = probe_formula if token_ids.shape[0] == 10 else induction_score_from_tokens
        return use(attn_weights, token_ids)

    result = ex.grade("induction_score", probe_formula_on_one_length)
    assert result.status == "fail" and result.hint != "probe_offset_used", result.message


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


# ---- only the stated score finds the head: the ablated runs also reshape the weight outside the target --------


def _whole_pattern_change(runs, layer, head):
    """The largest L1 change of the asked head's whole pattern."""
    return int((runs[1:, layer, head] - runs[0, layer, head]).abs().sum(dim=(-1, -2)).argmax())


def _last_row_only(runs, layer, head):
    """The drop of the last row's target weight instead of the mean over rows i >= T/2."""
    t = runs.shape[-1]
    s = runs[:, layer, head, t - 1, t - 1 - t // 2 + 1]
    return int((s[0] - s[1:]).argmax())


def _first_half_included(runs, layer, head):
    """Every row i >= 1 scored, its key i - T/2 + 1 clamped at 0 (the first half's rows read key 0)."""
    t = runs.shape[-1]
    rows = torch.arange(1, t)
    s = runs[:, layer, head, rows, (rows - t // 2 + 1).clamp(min=0)].mean(-1)
    return int((s[0] - s[1:]).argmax())


OFF_SCORE = [_whole_pattern_change, _last_row_only, _first_half_included]


@pytest.mark.parametrize("fn", OFF_SCORE, ids=[f.__name__.strip("_") for f in OFF_SCORE])
def test_a_measure_other_than_the_stated_score_misses_the_needed_head(fn):
    """An ablated run changed only the asked head's target weight (and its copy key), so any measure that rises
    with it (the whole pattern's change, the last row, rows of the first half included) found the head and
    passed. Now every ablated run also reshapes the weight outside the target: such a measure is wrong on every
    model, public or secret, and is not given the name of a mistake it did not make."""
    from llm_lab.exercises import _ex08_induction as m
    from llm_lab.exercises._shared import gen, secret_inputs

    for secret in (None, *range(30)):
        with secret_inputs(secret):
            g = gen(8008)
            for turn, (layers, heads, t, where) in enumerate(m.ABLATION_MODELS):
                runs, (layer, head), roles = m._runs(layers, heads, t, g, where, turn=turn)
                assert fn(runs, layer, head) != roles["needed"] == m.needed_head(runs, layer, head), (secret, turn)
    for secret in (None, 3, 7):
        result = ex.grade("find_by_ablation", fn, secret=secret)
        assert (result.status, result.hint) == ("fail", "wrong_layer0_head"), (secret, result.message)
