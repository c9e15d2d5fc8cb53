"""Notebook 09's exercises (ALiBi's bias, a chunk of new queries with RoPE on a cache): solutions pass, each planted
mistake is named in both languages, and the checkers' references agree with llm_lab's ALiBi and RoPE (the solutions
and planted mistakes: solutions_ex09_positions.py)."""

import pytest
import torch
from solutions_ex09_positions import CORRECT_BUT_DIFFERENT, PLANTED, SOLUTIONS, rope_at

from llm_lab import exercises as ex
from llm_lab.exercises import _ex09_positions as m
from llm_lab.explore import positions


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_solutions_pass_on_public_and_secret_inputs(name):
    assert ex.grade(name, SOLUTIONS[name]).passed
    assert ex.grade(name, SOLUTIONS[name], secret=12345).passed


@pytest.mark.parametrize(("name", "fn", "hint"), PLANTED, ids=[f"{n}-{h}" for n, _, h in PLANTED])
def test_planted_mistakes_are_named_in_both_languages(name, fn, hint):
    result = ex.grade(name, fn)
    assert result.status == "fail" and result.hint == hint, result.message
    zh = ex.grade(name, fn, lang="zh")
    assert zh.hint == hint and zh.message != result.message


@pytest.mark.parametrize(("name", "fn"), CORRECT_BUT_DIFFERENT)
def test_a_correct_solution_written_otherwise_passes(name, fn):
    assert ex.grade(name, fn).passed
    assert ex.grade(name, fn, secret=777).passed


def test_the_checkers_alibi_is_llm_labs_alibi():
    for num_heads, t in ((8, 6), (6, 5), (1, 3)):
        torch.testing.assert_close(m.alibi_reference(num_heads, t), positions.alibi_bias(num_heads, t))


def test_llm_labs_alibi_handed_in_or_called_scores_as_the_reference():
    assert ex.grade("alibi_bias", positions.alibi_bias).status == "reference"
    calls = ex.grade(
        "alibi_bias",
        lambda num_heads, T: positions.alibi_slopes(num_heads)[:, None, None] * 0 + m.alibi_reference(num_heads, T),
    )
    assert calls.status == "reference", calls.message


def test_each_alibi_mistake_is_named_only_where_it_differs_from_the_answer():
    """One head: the slopes in either order are the same one slope, so no case of one head can name them."""
    assert torch.equal(m.alibi_reference(1, 5, reverse=True), m.alibi_reference(1, 5))
    assert not torch.equal(m.alibi_reference(4, 5, reverse=True), m.alibi_reference(4, 5))


def test_the_checkers_rope_is_llm_labs_rope_moved_to_start():
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
    for start in (0, 5):
        want = positions.apply_rope(x, positions=torch.arange(start, start + 7))
        assert torch.allclose(m.rope_rotate(x, start), want, atol=1e-5)
        assert torch.allclose(rope_at(x, start, 10000.0), want, atol=1e-5)


def test_the_chunk_reference_is_the_last_rows_of_full_rope_attention():
    """With Tq new queries, the reference equals the last Tq rows of causal attention over the whole sequence with
    RoPE on every query and key: what a model computes without a cache."""
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(3, 2, 9, 8, generator=g).unbind(0)
    full = torch.nn.functional.scaled_dot_product_attention(
        positions.apply_rope(q), positions.apply_rope(k), v, is_causal=True
    )
    assert torch.allclose(m.chunk_attention(q[:, -3:], k, v), full[:, -3:], atol=1e-5)
