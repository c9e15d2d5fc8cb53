"""Notebook 03's exercise (dropout on attention weights): torch's own dropout is named, dropout by hand in other
styles passes, a hard-coded rate is named (its solutions and planted mistakes: solutions_ex03_dropout.py)."""

import pytest
import torch
import torch.nn.functional as F
from _exercise_solutions import dropout

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
    # torch's dropout only where it matters: on inputs larger than a few elements, the small ones left alone
    "F.dropout on large inputs only": lambda x, p, training: F.dropout(x, p, training) if x.numel() > 6 else x,
    "F.dropout for some p only": lambda x, p, training: F.dropout(x, p, training) if p in (0.2, 0.5, 0.7) else x,
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


def test_hard_coded_dropout_rate_is_named_in_the_function_exercise():
    from llm_lab import exercises as ex

    result = ex.grade("dropout", lambda x, p, training=True: dropout(x, 0.5, training))
    assert result.hint == "dropout_rate_wrong" and "p=0.2" in result.message
