"""Notebook 00's exercise: sliding-window causal weights. A correct solution in another style passes, and each
planted mistake gets its own hint."""

import pytest
import torch

from llm_lab import exercises as ex

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


def loop(attn_scores, window, start_of=lambda i, w: max(0, i - w + 1), end_of=lambda i, w: i + 1):
    weights = torch.zeros_like(attn_scores)
    for i in range(attn_scores.shape[-1]):
        start, end = start_of(i, window), end_of(i, window)
        if end > start:
            weights[i, start:end] = torch.softmax(attn_scores[i, start:end], dim=0)
    return weights


def with_neg_inf(attn_scores, window):
    """A vectorized correct solution: hide the future and the keys older than the window with -inf."""
    t = attn_scores.shape[-1]
    i, j = torch.arange(t).unsqueeze(-1), torch.arange(t)
    hidden = (j > i) | (j <= i - window)
    return torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)


def ignores_window(attn_scores, window):
    return loop(attn_scores, attn_scores.shape[-1])


def too_wide(attn_scores, window):
    return loop(attn_scores, window, start_of=lambda i, w: max(0, i - w))


def too_narrow(attn_scores, window):
    return loop(attn_scores, window, start_of=lambda i, w: max(0, i - w + 2))


def excludes_self(attn_scores, window):
    return loop(attn_scores, window, start_of=lambda i, w: max(0, i - w), end_of=lambda i, w: i)


def sees_future(attn_scores, window):
    t = attn_scores.shape[-1]
    i, j = torch.arange(t).unsqueeze(-1), torch.arange(t)
    return torch.softmax(attn_scores.masked_fill((j - i).abs() >= window, NEG_INF), dim=-1)


def not_renormalized(attn_scores, window):
    causal = loop(attn_scores, attn_scores.shape[-1])
    t = attn_scores.shape[-1]
    i, j = torch.arange(t).unsqueeze(-1), torch.arange(t)
    return causal * (j > i - window)


def no_mask(attn_scores, window):
    return torch.softmax(attn_scores, dim=-1)


@pytest.mark.parametrize("fn", [loop, with_neg_inf])
def test_correct_solutions_pass(fn):
    assert ex.grade("window_weights", fn).status == "pass"


# (exercise, wrong implementation, hint): also checked by tests/test_exercises.py and, through grading's kernel
# proxies, by tests/test_remote.py
def window_weights(attn_scores, window):
    weights = torch.zeros_like(attn_scores)
    for i in range(attn_scores.shape[-1]):
        start = max(0, i - window + 1)
        weights[i, start : i + 1] = torch.softmax(attn_scores[i, start : i + 1], dim=0)
    return weights


SOLUTIONS = {"window_weights": window_weights}  # with tests/test_exercises.py's generic checks
PLANTED = [
    ("window_weights", ignores_window, "window_ignored"),
    ("window_weights", too_wide, "window_too_wide"),
    ("window_weights", too_narrow, "window_too_narrow"),
    ("window_weights", excludes_self, "window_excludes_self"),
    ("window_weights", sees_future, "window_sees_future"),
    ("window_weights", not_renormalized, "window_not_renormalized"),
    ("window_weights", no_mask, "future_open"),
]


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
