"""The observation hook the checkers of 04-07 rely on: ``_observe`` and ``_harness.call(..., observe=True)``."""

import pytest
import torch
import torch.nn.functional as F

from llm_lab.exercises import _harness, _observe
from llm_lab.exercises._core import LearnerError

NEG_INF = float("-inf")




def full_scores(q, k, v, block_size):
    t = q.shape[-2]
    s = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), NEG_INF)
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize(("fn", "fragment"), [
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
    (lambda q, k, v: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
    (lambda q, k, v: torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0],
     "scaled_dot_product"),
    (lambda q, k, v: torch._C._nn.scaled_dot_product_attention(q, k, v, is_causal=True), "scaled_dot_product"),
    (lambda q, k, v: q.view(-1).reshape(q.shape), "torch.Tensor.view"),
    (lambda q, k, v: q.reshape(q.shape).permute(0, 1, 3, 2), "torch.Tensor.permute"),
])
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
        _harness.call(lambda q, k, v, b: torch.stack([q[:, :, :b] @ k[:, :, :b].transpose(-2, -1)]), q, q, q, 8,
                      case="-", observe=True)
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
