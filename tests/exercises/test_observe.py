"""The observation hook the checkers of 04-07 rely on: ``_observe`` and ``_harness.call(..., observe=True)``."""

import pytest
import torch
import torch.nn.functional as F
from solutions_ex07_tiled import full_scores

from llm_lab.exercises import _harness, _observe
from llm_lab.exercises._core import LearnerError

NEG_INF = float("-inf")


@pytest.mark.parametrize(
    ("fn", "fragment"),
    [
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
        (lambda q, k, v: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
        (
            lambda q, k, v: torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0],
            "scaled_dot_product",
        ),
        (lambda q, k, v: torch._C._nn.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
        (lambda q, k, v: q.view(-1).reshape(q.shape), "torch.Tensor.view"),
        (lambda q, k, v: q.reshape(q.shape).permute(0, 1, 3, 2), "torch.Tensor.permute"),
    ],
)
def test_observed_ops_name_what_was_called_on_the_cpu(fn, fragment):
    q = torch.randn(1, 2, 6, 4)
    with torch.no_grad():
        _harness.call(fn, q, q, q, case="-", observe=True)
    record = _harness.last_observed()
    assert set(record) == {"largest", "ops", "marks"} and record["ops"] == sorted(record["ops"])
    assert _observe.called_matching(record, fragment), record["ops"]


def test_observed_largest_tensor_tells_a_t_by_t_matrix_from_blocks():
    q = torch.randn(1, 1, 64, 2)
    with torch.no_grad():
        _harness.call(full_scores, q, q, q, 8, case="-", observe=True)
    assert _harness.last_observed()["largest"] == 64 * 64
    with torch.no_grad():
        _harness.call(
            lambda q, k, v, b: torch.stack([q[:, :, :b] @ k[:, :, :b].transpose(-2, -1)]),
            q,
            q,
            q,
            8,
            case="-",
            observe=True,
        )
    assert _harness.last_observed()["largest"] == 8 * 8


def test_views_do_not_count_as_allocations_and_unobserved_calls_record_nothing():
    x = torch.randn(4, 1)
    with torch.no_grad():
        _harness.call(lambda t: t.expand(4, 1000), x, case="-", observe=True)
    assert _harness.last_observed()["largest"] == 0
    with _harness.checking(None, _harness.Watch()):
        _harness.call(lambda t: t + 1, x, case="-")
        assert _harness.last_observed() is None


def test_observation_of_a_raising_call_is_kept():
    def boom(t):
        t = t @ t.T
        raise ValueError("x")

    with _harness.checking(None, _harness.Watch()):
        with pytest.raises(LearnerError, match="x"):
            _harness.call(boom, torch.randn(5, 2), case="-", observe=True)
        assert _harness.last_observed()["largest"] == 25


# ---- the observer never fails the learner's call; overloads and marks ------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.Tensor([1.0, 2.0]) * 2,
        lambda: torch.LongTensor([1, 2]) + 1,
        lambda: torch.from_numpy(__import__("numpy").arange(3)) + 1,
        lambda: torch.ops.aten.add.Tensor(torch.ones(2), torch.ones(2)),
        lambda: torch.ops.aten.scaled_dot_product_attention.default(
            torch.ones(1, 2, 2), torch.ones(1, 2, 2), torch.ones(1, 2, 2)
        ),
    ],
    ids=["Tensor", "LongTensor", "from_numpy", "aten.add.Tensor", "aten.sdpa.default"],
)
def test_the_observer_never_fails_the_call(make):
    with torch.no_grad():
        want = make()
        got = _harness.call(make, case="-", observe=True)
    assert torch.equal(got, want)


def test_a_callable_the_observer_cannot_name_is_recorded_by_its_type(monkeypatch):
    def unnamable(func):
        raise AttributeError("no name")

    monkeypatch.setattr(_observe, "_name_of", unnamable)
    monkeypatch.setattr(_observe, "_NAMES", {})
    monkeypatch.setattr(_observe, "_KINDS", {})
    with torch.no_grad():
        out = _harness.call(lambda: torch.ones(2).exp(), case="-", observe=True)
    assert torch.equal(out, torch.ones(2).exp())
    assert {"torch.builtin_function_or_method", "torch.method_descriptor"} <= set(_harness.last_observed()["ops"])


def test_an_op_overload_is_named_with_its_operator():
    x = torch.randn(2, 3)
    with torch.no_grad():
        _harness.call(
            lambda: torch.ops.aten.view.default(torch.ops.aten.permute.default(x, [1, 0]).contiguous(), [6]),
            case="-",
            observe=True,
        )
    record = _harness.last_observed()
    assert "torch.ops.aten.view.default" in record["ops"]
    assert _observe.called(record, "view") == "torch.ops.aten.view.default"
    assert _observe.called(record, "permute") == "torch.ops.aten.permute.default"


@pytest.mark.parametrize(
    ("fn", "mark"),
    [
        (lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True), "is_causal=True"),
        (lambda q: F.scaled_dot_product_attention(q, q, q, None, 0.0, True), "is_causal=True"),
        (lambda q: torch.ops.aten.scaled_dot_product_attention.default(q, q, q, None, 0.0, True), "is_causal=True"),
        (lambda q: q.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), NEG_INF), None),
        (lambda q: q.clone().__setitem__((Ellipsis, 0, 1), NEG_INF), "constant:torch.Tensor.__setitem__"),
        (lambda q: q.clone().__setitem__((Ellipsis, 0), q[..., 1] * 2), None),
    ],
    ids=[
        "is_causal-kw",
        "is_causal-positional",
        "is_causal-overload",
        "masked_fill",
        "write-constant",
        "write-computed",
    ],
)
def test_marks_say_what_a_call_did_beyond_its_name(fn, mark):
    with torch.no_grad():
        _harness.call(fn, torch.randn(1, 2, 4, 4), case="-", observe=True)
    marks = _harness.last_observed()["marks"]
    assert marks == ([mark] if mark else [])


def test_plain_calls_are_not_looked_inside_and_others_are():
    q = torch.randn(1, 2, 6, 4)
    with torch.no_grad():
        _harness.call(lambda: torch.softmax(q @ q.transpose(-2, -1), dim=-1), case="-", observe=True)
        plain = _harness.last_observed()["ops"]
        _harness.call(lambda: F.scaled_dot_product_attention(q, q, q), case="-", observe=True)
        composite = _harness.last_observed()["ops"]
    assert not [op for op in plain if op.startswith("aten.")], plain
    assert [op for op in composite if op.startswith("aten.")], composite
