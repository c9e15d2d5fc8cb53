"""Notebook 05's padded-heads exercise (llm_lab/exercises/_ex05_padding.py): its hints and fixes, size errors
that are not the heads axis, llm_lab's helpers (the solution and padded attention with switches:
solutions_ex05_padding.py)."""

import pytest
import torch
from solutions_ex05_padding import padded_with

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


PADDED_HINTS = [
    ("padded_queries_zeroed", padded_with(zero_padded_queries=True)),
    ("padding_wrong_axis", padded_with(mask_index=(slice(None), None, slice(None), None))),
    ("padding_heads_axis", padded_with(mask_index=(slice(None), None, slice(None)))),
    ("diagonal_masked", padded_with(diagonal=0)),
    ("scale_uses_T", padded_with(scale=lambda q: q.shape[-2])),
    ("scale_uses_d_out", padded_with(scale=lambda q: q.shape[1] * q.shape[-1])),
    ("input_modified", padded_with(inplace=True)),
]


@pytest.mark.parametrize(("hint", "fn"), PADDED_HINTS, ids=[h for h, _ in PADDED_HINTS])
def test_padded_mistakes_are_named(hint, fn):
    result = ex.grade("padded_attention", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert ex.evaluate("padded_attention", fn).hint == hint


@pytest.mark.parametrize(
    "fn",
    [padded_with(num_tokens=lambda q: q.shape[1]), padded_with(keys_t=(1, 2))],
    ids=["T-from-the-heads-axis", "keys-transposed-over-heads"],
)
def test_a_size_error_is_not_called_the_heads_axis_unless_it_is(fn):
    result = ex.grade("padded_attention", fn)
    assert (result.status, result.hint) == ("error", "exception"), result.message
    assert "RuntimeError" in result.message


def test_padding_fixes_are_written_for_four_dimensional_scores():
    for hint in ("padding_ignored", "padding_wrong_axis", "padding_heads_axis"):
        fix = ex.REGISTRY["padded_attention"].fixes[hint]
        assert "key_padding_mask[:, None, None, :]" in fix["en"] and "key_padding_mask[:, None, None, :]" in fix["zh"]
        assert "unsqueeze(-2)" not in fix["en"]


def test_internal_helpers_are_references():
    from llm_lab.exercises import _ex05_padding, _shared

    cases = [
        (
            "padded_attention",
            lambda q, k, v, m: _ex05_padding._padded_ref(
                q, k, v, torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).triu(1) | m[:, None, None, :]
            ),
        ),
        (
            "padded_attention",
            lambda q, k, v, m: (
                _shared.softmax_masked(
                    q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5,
                    torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).triu(1) | m[:, None, None, :],
                ).nan_to_num()
                @ v
            ),
        ),
    ]
    for exercise, fn in cases:
        result = ex.grade(exercise, fn)
        assert (result.status, result.score) == ("reference", 0), (exercise, result.message)
