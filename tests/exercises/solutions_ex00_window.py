"""Notebook 00's exercise (sliding-window causal weights): a correct solution, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py; this exercise's own tests are in test_ex00_window.py."""

import torch
from _exercise_solutions import NEG_INF


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


def window_weights(attn_scores, window):
    weights = torch.zeros_like(attn_scores)
    for i in range(attn_scores.shape[-1]):
        start = max(0, i - window + 1)
        weights[i, start : i + 1] = torch.softmax(attn_scores[i, start : i + 1], dim=0)
    return weights


SOLUTIONS = {"window_weights": window_weights}  # with tests/exercises/test_exercises.py's generic checks
PLANTED = [
    ("window_weights", ignores_window, "window_ignored"),
    ("window_weights", too_wide, "window_too_wide"),
    ("window_weights", too_narrow, "window_too_narrow"),
    ("window_weights", excludes_self, "window_excludes_self"),
    ("window_weights", sees_future, "window_sees_future"),
    ("window_weights", not_renormalized, "window_not_renormalized"),
    ("window_weights", no_mask, "future_open"),
]
