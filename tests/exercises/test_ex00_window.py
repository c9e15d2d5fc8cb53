"""Notebook 00's exercise: sliding-window causal weights. A correct solution in another style passes, and each
planted mistake gets its own hint."""

import pytest
import torch
from solutions_ex00_window import PLANTED, loop, with_neg_inf

from llm_lab import exercises as ex

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


@pytest.mark.parametrize("fn", [loop, with_neg_inf])
def test_correct_solutions_pass(fn):
    assert ex.grade("window_weights", fn).status == "pass"


@pytest.mark.parametrize(("exercise", "fn", "hint"), PLANTED, ids=[h for _, _, h in PLANTED])
def test_planted_mistake_is_named(exercise, fn, hint):
    result = ex.grade("window_weights", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    assert result.fix, "every named mistake has its fix"
    assert ex.grade("window_weights", fn, lang="zh").message != result.message


# ---- "a token must see itself" only when the diagonal alone is wrong ---------------------------------------


def inverted(attn_scores, window):
    t = attn_scores.shape[-1]
    i, j = torch.arange(t).unsqueeze(-1), torch.arange(t)
    visible = (j > i - window) & (j <= i)
    return torch.softmax(attn_scores.masked_fill(visible, NEG_INF), dim=-1).nan_to_num(0.0)


def excludes_only_self(attn_scores, window):
    """The window minus the token itself: keys i - window + 1 .. i - 1."""
    return loop(attn_scores, window, end_of=lambda i, w: i).nan_to_num(0.0)


@pytest.mark.parametrize(
    ("fn", "hint"),
    [(inverted, "window_inverted"), (lambda s, w: torch.zeros_like(s), "wrong_values")],
    ids=["inverted-mask", "zeros-stub"],
)
def test_a_zero_diagonal_is_not_called_self_exclusion_unless_it_is(fn, hint):
    result = ex.grade("window_weights", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    assert "see itself" not in result.message


def test_the_window_without_the_token_itself_is_self_exclusion():
    result = ex.grade("window_weights", excludes_only_self)
    assert (result.status, result.hint) == ("fail", "window_excludes_self"), result.message
