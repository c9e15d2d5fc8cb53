"""Notebook 03's exercise (dropout on attention weights): planted mistakes (its solution, `dropout`, is in
tests/_exercise_solutions.py: the attention classes of 04 and 05 use it).

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""

import pytest
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


# ---- "by hand": torch's own dropout, by any route, is named once the values are right -------------------------


def _with(dropout_fn):
    def fn(x, p, training=True):
        return dropout_fn(x, p, training)

    return fn


def _module(x, p, training):
    layer = torch.nn.Dropout(p)
    return layer.train(training)(x)


BUILTIN = {
    "F.dropout": lambda x, p, training: F.dropout(x, p, training),
    "nn.Dropout": _module,
    "torch.dropout": lambda x, p, training: torch.dropout(x, p, training),
    "native_dropout": lambda x, p, training: torch.native_dropout(x, p, training)[0] if training else x,
    "aten overload": lambda x, p, training: torch.ops.aten.native_dropout.default(x, p, training)[0] if training else x,
}


@pytest.mark.parametrize("name", list(BUILTIN))
def test_torchs_own_dropout_is_named(name):
    from llm_lab import exercises as ex

    result = ex.grade("dropout", _with(BUILTIN[name]))
    assert (result.status, result.hint) == ("fail", "dropout_builtin"), result.message
    assert "by hand" in result.message


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, p, training=True: x * torch.bernoulli(torch.full_like(x, 1 - p)) / (1 - p) if training and p else x,
        lambda x, p, training=True: torch.where(torch.rand(x.shape) < p, 0.0, x / (1 - p)) if training and p else x,
    ],
    ids=["bernoulli", "where-rand"],
)
def test_dropout_by_hand_in_other_styles_passes(fn):
    from llm_lab import exercises as ex

    result = ex.grade("dropout", fn)
    assert result.passed, result.message
