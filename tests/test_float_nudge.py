"""tools/float_nudge.py: the robustness run's perturbation does what make test-perturbed relies on."""

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import float_nudge  # noqa: E402


@pytest.fixture
def nudged():
    mode = float_nudge.FloatNudge()
    with mode:
        yield


def test_results_move_by_at_most_the_relative_nudge(nudged):
    torch.manual_seed(0)
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    got = a @ b
    exact = torch.einsum("ik,kj->ij", a.double(), b.double()).float()
    rel = ((got - exact).abs() / exact.abs().clamp_min(1e-3)).max().item()
    assert 1e-7 < rel < 1e-5


def test_equal_inputs_give_equal_outputs(nudged):
    x = torch.randn(4, 6)
    assert torch.equal(torch.softmax(x, -1), torch.softmax(x.clone(), -1))
    assert torch.equal(F.linear(x, torch.ones(3, 6)), F.linear(x.clone(), torch.ones(3, 6)))


def test_every_listed_op_is_nudged_and_whole_numbers_are_not():
    x = torch.randn(2, 2, 5, 8)
    w = torch.randn(3, 8)
    plain = {
        "matmul": x @ x.transpose(-2, -1), "softmax": x.softmax(-1), "sum": x.sum(-1),
        "sdpa": F.scaled_dot_product_attention(x, x, x), "linear": F.linear(x, w),
    }
    with float_nudge.FloatNudge():
        nudged = {
            "matmul": x @ x.transpose(-2, -1), "softmax": x.softmax(-1), "sum": x.sum(-1),
            "sdpa": F.scaled_dot_product_attention(x, x, x), "linear": F.linear(x, w),
        }
        ones = torch.ones(21).sum()
        doubles = x.double() @ x.double().transpose(-2, -1)
    for name in plain:
        assert not torch.equal(plain[name], nudged[name]), f"{name} was not nudged"
        assert torch.allclose(plain[name], nudged[name], rtol=1e-5, atol=1e-6), name
    assert ones.item() == 21.0  # a sum of small integers is exact on any device
    assert torch.equal(doubles, x.double() @ x.double().transpose(-2, -1))  # float64 untouched


def test_a_check_without_tolerance_for_order_flips_under_the_nudge():
    # the kind of stored output the robustness run exists to catch
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    reference = a @ b
    with float_nudge.FloatNudge():
        again = a @ b
    assert not torch.equal(reference, again)
    assert torch.allclose(reference, again, rtol=1e-5)
