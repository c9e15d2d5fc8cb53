"""Notebook 03's exercise (dropout on attention weights): planted mistakes (its solution, `dropout`, is in
tests/exercises/_exercise_solutions.py: the attention classes of 04 and 05 use it).

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import torch
import torch.nn.functional as F
from _exercise_solutions import dropout


def dropout_factory(scale="ok", eval_off=True, keep_if_below_p=False):
    def fn(x, p, training=True):
        if eval_off and not training:
            return x
        r = torch.rand_like(x)
        keep = r < p if keep_if_below_p else r >= p
        factor = {"ok": 1 / (1 - p) if p < 1 else 0.0, "p": 1 / p if p > 0 else float("inf"), "none": 1.0}[scale]
        return x * keep * factor

    return fn


def dropout_half_rate(x, p, training=True):
    return x * (torch.rand_like(x) >= p / 2) / (1 - p) if training else x


def dropout_bernoulli(x, p, training=True):
    return x * torch.bernoulli(torch.full_like(x, 1 - p)) / (1 - p) if training and p > 0 else x


def dropout_shared_over_batch(x, p, training=True):
    return x * (torch.rand(x.shape[-2:]) >= p) / (1 - p) if training and p > 0 else x


def dropout_nan(x, p, training=True):
    return torch.full_like(x, float("nan")) if training else x


SOLUTIONS = {
    "dropout": dropout,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("dropout", dropout_factory(scale="p"), "dropout_scaled_by_p"),
    ("dropout", dropout_factory(scale="none"), "dropout_not_scaled"),
    ("dropout", dropout_factory(eval_off=False), "dropout_in_eval"),
    ("dropout", dropout_factory(keep_if_below_p=True), "dropout_rate_inverted"),
    ("dropout", dropout_half_rate, "dropout_rate_wrong"),
    ("dropout", lambda x, p, training=True: x, "dropout_not_applied"),
    ("dropout", lambda x, p, training=True: F.dropout(x, p, True), "dropout_in_eval"),
]

CORRECT_BUT_DIFFERENT = [("dropout", dropout_bernoulli)]
# graded: a one-line message naming the hint (independence across batch and heads; NaN called NaN)
ROUND_MISTAKES = [
    ("dropout", dropout_shared_over_batch, "dropout_mask_shared"),
    ("dropout", dropout_nan, "nan_output"),
]
