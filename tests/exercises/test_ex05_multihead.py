"""Notebook 05's exercises of llm_lab/exercises/_ex05_multihead.py (a fused qkv split, grouped-query kv heads,
multi-head attention): splits written differently, inputs left alone, llm_lab's helpers (the solutions and planted
mistakes: solutions_ex05_multihead.py)."""

import pytest
import torch
from _exercise_solutions import with_mistake
from solutions_ex05_multihead import (
    MultiHeadAttention,
    _blocks,
    qkv_heads_first,
    qkv_kv_repeated,
    qkv_kv_swapped,
    qkv_lesson_07,
    qkv_thirds,
    split_qkv,
)

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


def test_split_qkv_must_leave_its_input_alone():
    def split_in_place(qkv, nh, n_kv):
        out = tuple(t.clone() for t in split_qkv(qkv, nh, n_kv))
        qkv.zero_()
        return out

    assert ex.grade("split_qkv", split_in_place).hint == "input_modified"


def _split_first(qkv, nh, n_kv):
    b, t, w = qkv.shape
    hs = w // (nh + 2 * n_kv)
    q, k, v = torch.split(qkv, [nh * hs, n_kv * hs, n_kv * hs], dim=2)
    return (
        q.unflatten(-1, (nh, hs)).movedim(2, 1),
        k.unflatten(-1, (n_kv, hs)).movedim(2, 1),
        v.unflatten(-1, (n_kv, hs)).movedim(2, 1),
    )


def _by_index(qkv, nh, n_kv):
    hs = qkv.shape[-1] // (nh + 2 * n_kv)
    starts = (0, nh * hs, (nh + n_kv) * hs)
    return [
        torch.stack([qkv[..., s + h * hs : s + (h + 1) * hs] for h in range(heads)], dim=1)
        for s, heads in zip(starts, (nh, n_kv, n_kv), strict=True)
    ]


@pytest.mark.parametrize("fn", [_split_first, _by_index], ids=["split-unflatten", "index-list"])
def test_correct_splits_written_differently_pass(fn):
    result = ex.grade("split_qkv", fn)
    assert result.passed, result.message


def test_equal_thirds_are_right_only_with_as_many_kv_heads_and_named_where_they_are_fewer():
    qkv = torch.randn(2, 3, 3 * 4)
    assert all(torch.equal(a, b) for a, b in zip(qkv_thirds(qkv, 2, 2), split_qkv(qkv, 2, 2), strict=True))
    result = ex.grade("split_qkv", qkv_thirds)
    assert (result.hint, "num_heads=4, num_kv_heads=2" in result.message) == ("qkv_equal_thirds", True)


def test_the_class_of_exercise_4_as_given_is_named_by_its_merge_then_by_its_scale():
    buggy = with_mistake(MultiHeadAttention, "both_bugs")
    assert ex.grade("multihead", buggy).hint == "merge_features_first"
    assert ex.grade("multihead", with_mistake(MultiHeadAttention, "scale_uses_d_out")).hint == "scale_uses_d_out"


def test_internal_helpers_are_references():
    from llm_lab import MultiHeadAttention
    from llm_lab.exercises import _ex05_multihead

    cases = [
        (
            "split_qkv",
            lambda qkv, nh, n_kv: tuple(
                MultiHeadAttention(8, t.shape[-1], 8, 0.0, h)._split_heads(t, qkv.shape[0], qkv.shape[1])
                for t, h in _blocks(qkv, nh, n_kv)
            ),
        ),
        ("split_qkv", lambda qkv, nh, n_kv: tuple(_ex05_multihead.split(t, h) for t, h in _blocks(qkv, nh, n_kv))),
        ("split_qkv", _ex05_multihead.split_qkv_ref),
    ]
    for exercise, fn in cases:
        result = ex.grade(exercise, fn)
        assert (result.status, result.score) == ("reference", 0), (exercise, result.message)


# ---- a size error is called three equal blocks only when re-running shows three equal blocks ----


def _kv_as_num_heads_of_head_dim(qkv, num_heads, num_kv_heads):
    b, t, w = qkv.shape
    hs = w // (num_heads + 2 * num_kv_heads)
    q, k, v = qkv.split([num_heads * hs, num_kv_heads * hs, num_kv_heads * hs], dim=-1)
    return tuple(x.view(b, t, num_heads, hs).transpose(1, 2) for x in (q, k, v))  # a size error on k, v


def _head_dim_hard_coded(qkv, num_heads, num_kv_heads):
    b, t, _ = qkv.shape
    sizes = [num_heads * 2, num_kv_heads * 2, num_kv_heads * 2]  # head_dim = 2, as in the first cases
    return tuple(
        x.view(b, t, h, 2).transpose(1, 2)
        for x, h in zip(qkv.split(sizes, dim=-1), (num_heads, num_kv_heads, num_kv_heads), strict=True)
    )


@pytest.mark.parametrize("fn", [_kv_as_num_heads_of_head_dim, _head_dim_hard_coded])
def test_a_size_error_that_is_not_three_equal_blocks_shows_torchs_message(fn):
    for secret in (None, 3):
        result = ex.grade("split_qkv", fn, secret=secret)
        assert (result.status, result.hint) == ("error", "exception"), result.message
        assert "RuntimeError" in result.message


@pytest.mark.parametrize("fn", [qkv_thirds, qkv_lesson_07])
def test_three_equal_blocks_are_named_in_public_and_secret_checks(fn):
    for secret in (None, 3, 4):
        assert ex.grade("split_qkv", fn, secret=secret).hint == "qkv_equal_thirds"


# ---- keys and values repeated for the query heads, or swapped: named only on every case ----


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (qkv_kv_repeated(), "kv_heads_repeated"),
        (qkv_kv_repeated(tile=True), "kv_heads_repeated"),
        (qkv_kv_swapped, "keys_values_swapped"),
    ],
    ids=["repeat_interleave", "repeat", "swapped"],
)
def test_repeated_or_swapped_keys_and_values_are_named_in_public_and_secret_checks(fn, hint):
    for secret in (None, 3):
        result = ex.grade("split_qkv", fn, secret=secret)
        assert (result.status, result.hint) == ("fail", hint), result.message


def test_keys_and_values_wrong_on_some_cases_only_are_not_named_so():
    repeated, swapped = qkv_kv_repeated(), qkv_kv_swapped

    def repeated_for_groups_of_two(qkv, nh, n_kv):
        return (repeated if nh == 2 * n_kv else split_qkv)(qkv, nh, n_kv)

    def swapped_when_grouped(qkv, nh, n_kv):
        return (swapped if n_kv < nh else split_qkv)(qkv, nh, n_kv)

    for fn in (repeated_for_groups_of_two, swapped_when_grouped):
        result = ex.grade("split_qkv", fn)
        assert result.status == "fail", result.message
        assert result.hint not in ("kv_heads_repeated", "keys_values_swapped"), result.message
    assert ex.grade("split_qkv", qkv_heads_first).passed


# ---- names that fit every case: the scale by d_in, dropout applied twice -----------------------------------------


class _Heads(torch.nn.Module):
    """Multi-head attention with switches: the scale's width, dropout also on the merged context vectors."""

    scale_by_d_in = False
    dropout_twice = False

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (torch.nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3))
        self.out_proj = torch.nn.Linear(d_out, d_out)
        self.dropout = torch.nn.Dropout(dropout)
        self.num_heads, self.head_dim, self.d_out = num_heads, d_out // num_heads, d_out
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        b, t, d_in = x.shape
        q, k, v = (
            layer(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
            for layer in (self.W_query, self.W_key, self.W_value)
        )
        scale = (d_in if self.scale_by_d_in else self.head_dim) ** 0.5
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:t, :t], float("-inf")) / scale
        context = (self.dropout(torch.softmax(scores, dim=-1)) @ v).transpose(1, 2).reshape(b, t, self.d_out)
        if self.dropout_twice:
            context = self.dropout(context)
        return self.out_proj(context)


def test_a_scale_by_d_in_is_named_for_what_it_is():
    """05's third configuration has d_in = 4 = head_dim ** 2, so a scale by sqrt(d_in) was called "scaled twice",
    although it is right on the two configurations where d_in = head_dim. Its own computation is now a named
    mistake, and a mistake is named only when it gives the learner's output on every case."""
    cls = type("ByDIn", (_Heads,), {"scale_by_d_in": True})
    for lang in ("en", "zh"):
        result = ex.grade("multihead", cls, lang=lang)
        assert (result.status, result.hint) == ("fail", "scale_uses_d_in"), result.message


def test_dropout_on_the_weights_and_again_on_the_context_vectors_is_named_for_that():
    """It was named dropout_on_input, whose fix (dropout on the weights) the code already follows."""
    cls = type("Twice", (_Heads,), {"dropout_twice": True})
    for lang in ("en", "zh"):
        result = ex.grade("multihead", cls, lang=lang)
        assert (result.status, result.hint) == ("fail", "dropout_also_on_output"), result.message
    assert ex.grade("multihead", _Heads).passed
