"""Notebook 09's exercises (RoPE from any start, a chunk of new queries with RoPE on a cache): solutions pass,
each planted mistake is named in both languages, and the checkers' references agree with llm_lab's RoPE (the
solutions and planted mistakes: solutions_ex09_positions.py)."""

import pytest
import torch
from solutions_ex09_positions import PLANTED, SOLUTIONS, rope_at

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


def test_llm_labs_rope_handed_in_scores_as_the_reference():
    result = ex.grade(
        "rope_at", lambda x, start, base: positions.apply_rope(x, torch.arange(start, start + x.shape[-2]), base)
    )
    assert result.status == "reference", result.message
