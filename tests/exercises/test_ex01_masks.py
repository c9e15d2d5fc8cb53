"""Notebook 01's Exercise 3 (mask-and-renormalize for the rows of the last queries) is transfer: the lesson's own
square answer passes every square case and is rejected, by name, on the first case the lesson never showed."""

import pytest
import torch
from solutions_ex01_masks import renorm_lesson, renorm_top_left, renormalize

from llm_lab import exercises as ex
from llm_lab import mask_and_renormalize
from llm_lab.exercises._ex01_masks import RENORMALIZE_SHAPES

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


def test_the_last_rows_are_the_last_rows_of_the_square_result():
    """What the exercise asks for, measured: on the rows of the last queries, the solution gives the last rows of
    the lesson's square result (the reference, llm_lab.mask_and_renormalize); the lesson's tril does not."""
    w = torch.softmax(torch.randn(6, 6, generator=torch.Generator().manual_seed(0)), dim=-1)
    assert torch.allclose(renormalize(w[4:]), mask_and_renormalize(w)[4:])
    assert not torch.allclose(renorm_top_left(w[4:]), mask_and_renormalize(w)[4:])


@pytest.mark.parametrize(("fn", "hint"), [(renorm_top_left, "mask_top_left"), (renorm_lesson, "mask_square_only")])
def test_the_lessons_tril_product_fails_on_the_first_case_it_never_saw(fn, hint):
    result = ex.grade("renormalize", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    first_rectangular = next(s for s in RENORMALIZE_SHAPES if s[-2] < s[-1])
    assert f"attn_weights.shape={tuple(first_rectangular)}".replace(" ", "") in result.message.replace(" ", "")
    assert result.fix


def test_the_square_cases_alone_would_accept_the_lessons_answer():
    """The rejection comes from the rows of the last queries: with only the square shapes the lesson's answer passes
    (the check can fail only because of the new case)."""
    for shape in (s for s in RENORMALIZE_SHAPES if s[-2] == s[-1]):
        w = torch.softmax(torch.randn(*shape, generator=torch.Generator().manual_seed(1)), dim=-1)
        assert torch.allclose(renorm_lesson(w), renormalize(w))
