"""tools/release/float_nudge.py: the robustness run's perturbation does what make test-perturbed relies on."""

import pytest
import torch
import torch.nn.functional as F

from tools.release import float_nudge


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

    def each_op():
        return {
            "matmul": x @ x.transpose(-2, -1),
            "softmax": x.softmax(-1),
            "sum": x.sum(-1),
            "sdpa": F.scaled_dot_product_attention(x, x, x),
            "linear": F.linear(x, w),
        }

    plain = each_op()
    with float_nudge.FloatNudge():
        nudged = each_op()
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


def test_the_flipped_sign_moves_every_value_the_other_way():
    torch.manual_seed(1)
    x = torch.randn(1000)
    up, down = float_nudge.nudge(x, 1), float_nudge.nudge(x, -1)
    assert torch.equal((up - x).sign(), -(down - x).sign())
    assert torch.equal(float_nudge.nudge(torch.arange(5.0), -1), torch.arange(5.0))  # whole numbers stay
    with pytest.raises(ValueError, match="sign must be 1 or -1"):
        float_nudge.FloatNudge(sign=0)


def test_both_signs_find_a_number_on_a_rounding_boundary():
    # 19/80 = 0.2375 computed in float32 is 0.23750001: printed with three decimals it reads 0.238 or 0.237
    # depending on the last bit, which a nudge in one direction keeps and in the other does not
    even = torch.tensor([1 / 3, 1 / 4, 1 / 5, 1 / 6])
    printed = set()
    for sign in (1, -1):
        with float_nudge.FloatNudge(sign=sign):
            printed.add(f"{even.mean().item():.3f}")
    assert printed == {"0.237", "0.238"}


def test_standalone_stages_one_copy_per_sign(tmp_path):
    from tools.release import standalone

    nb = tmp_path / "en" / "04_x.ipynb"
    nb.parent.mkdir()
    nb.write_text("{}")
    staged = standalone.stage([nb], tmp_path / "staged", signs=(1, -1))
    assert [p.parent.name for p in staged] == ["en-04_x+1", "en-04_x-1"]
    assert [(p.parent / standalone.SIGN_FILE).read_text().strip() for p in staged] == ["1", "-1"]
    assert standalone.parse_signs("1,-1") == (1, -1)
    with pytest.raises(Exception, match="--signs takes"):
        standalone.parse_signs("2")


def test_standalone_signs_by_lang_nudges_each_language_the_other_way(tmp_path):
    """test-perturbed runs each instructor notebook once: en nudged up, zh (the same code on the same values) down."""
    from tools.release import standalone

    notebooks = []
    for lang in ("en", "zh"):
        nb = tmp_path / "instructor" / lang / "04_x.ipynb"
        nb.parent.mkdir(parents=True)
        nb.write_text("{}")
        notebooks.append(nb)
    staged = standalone.stage(notebooks, tmp_path / "staged", signs=(1, -1), by_lang=True)
    assert [p.parent.name for p in staged] == ["instructor-en-04_x+1", "instructor-zh-04_x-1"]
    assert [(p.parent / standalone.SIGN_FILE).read_text().strip() for p in staged] == ["1", "-1"]


def test_the_nudge_adds_nothing_autograd_saves():
    # 07 prints exact counts of the activations autograd saves: the nudged run must save the same tensors
    from llm_lab.bench import benchmark

    settings = benchmark.BenchSettings(batch=2, d=32, num_heads=4, lengths=(16,), keys=("manual", "sdpa"))
    plain = benchmark.cpu_saved_bytes(settings, 16)
    with float_nudge.FloatNudge():
        nudged = benchmark.cpu_saved_bytes(settings, 16)
    assert nudged == plain
    assert plain["manual"] > plain["sdpa"] > 0


def test_a_view_result_is_nudged_as_a_copy_and_its_input_stays():
    x = torch.randn(3, 5) + 0.25
    before = x.clone()
    with float_nudge.FloatNudge():
        y = torch.einsum("ij->ji", x)  # a view of x
    assert torch.equal(x, before)  # the argument is untouched
    assert not torch.equal(y, before.T) and torch.allclose(y, before.T, rtol=1e-5)
