"""The exercise checkers: reference solutions pass, stubs are 'not implemented', planted mistakes are named,
correct-but-different solutions pass, dropout is read statistically, the verdicts survive float noise.

Each exercise module ``llm_lab/exercises/_exNN_<concept>.py`` has its solutions module
``tests/exercises/solutions_exNN_<concept>.py`` holding ``SOLUTIONS`` (exercise -> a correct solution), ``PLANTED``
((exercise, wrong code, hint)) and the other tables; they are found through the registry
(tests/exercises/_exercise_tables.py); adding an exercise: docs/architecture.md, "Add an exercise"."""

import pytest
import torch
from _exercise_solutions import NoRescale, StubModule, dropout, flex, stub
from _exercise_tables import CORRECT_BUT_DIFFERENT, PLANTED, ROUND_MISTAKES, SOLUTIONS, TRANSFER_MISTAKES
from torch import nn

from llm_lab import exercises as ex
from llm_lab.exercises import _messages

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)

CHECKERS = {name: getattr(ex, f"check_{name}") for name in ex.EXERCISES}


def test_every_exercise_has_a_solution_here():
    assert set(SOLUTIONS) == set(ex.EXERCISES) == set(CHECKERS)


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_correct_solutions_pass(name, capsys):
    exercise, obj = name, SOLUTIONS[name]
    result = ex.evaluate(exercise, obj)
    assert result.status == "pass", result.message
    assert result.hint == "passed"
    assert CHECKERS[exercise](obj) is None
    out = capsys.readouterr().out
    assert out.startswith("✅ ") and out.count("\n") == 1, out


def test_checkers_leave_the_global_random_stream_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    ex.evaluate("dropout", dropout)
    ex.evaluate("causal_attention", SOLUTIONS["causal_attention"])
    assert torch.equal(torch.rand(3), expected)


def test_passing_output_is_deterministic():
    multihead = SOLUTIONS["multihead"]
    assert ex.evaluate("multihead", multihead) == ex.evaluate("multihead", multihead)


# ---- not implemented ---------------------------------------------------------------------------------------


class HalfStubModule(nn.Module):
    """__init__ done, forward still the stub (nn.Module without forward raises NotImplementedError too)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)


@pytest.mark.parametrize("exercise", ex.EXERCISES)
def test_stub_is_not_implemented(exercise, capsys):
    obj = StubModule if ex.REGISTRY[exercise].takes == "class" else stub
    result = ex.evaluate(exercise, obj)
    assert (result.status, result.hint) == ("todo", "not_implemented")
    CHECKERS[exercise](obj)
    assert capsys.readouterr().out.startswith("🚧 ")


@pytest.mark.parametrize("exercise", ["additive_attention", "causal_attention", "multihead"])
def test_module_without_forward_is_not_implemented(exercise):
    assert ex.evaluate(exercise, HalfStubModule).status == "todo"


# ---- planted mistakes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exercise", "fn", "hint"), PLANTED, ids=[f"{e}-{h}-{i}" for i, (e, _, h) in enumerate(PLANTED)]
)
def test_planted_mistake_is_named(exercise, fn, hint, capsys):
    result = ex.evaluate(exercise, fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    CHECKERS[exercise](fn)
    out = capsys.readouterr().out
    assert out.startswith("❌ ") and out.count("\n") == 1, out
    assert out.startswith(result.line)


# The diagnoses the course promises, each planted above at least once.
PROMISED = {
    "diagonal_masked",
    "future_open",
    "softmax_dim",
    "scale_missing",
    "scale_twice",
    "column_sums",
    "dropout_scaled_by_p",
    "dropout_in_eval",
    "view_without_transpose",
    "out_proj_missing",
    "mask_wrong_size",
}


def test_every_promised_diagnosis_is_planted():
    assert PROMISED <= {hint for _, _, hint in PLANTED}


# ---- every exercise's other graded tables: correct but different, more mistakes, the transfer exercises ----------


@pytest.mark.parametrize(
    ("exercise", "obj"), CORRECT_BUT_DIFFERENT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(CORRECT_BUT_DIFFERENT)]
)
def test_correct_but_different_solutions_pass(exercise, obj):
    result = ex.grade(exercise, obj)
    assert result.status == "pass", result.message


@pytest.mark.parametrize(
    ("exercise", "obj", "hint"), ROUND_MISTAKES, ids=[f"{e}-{h}-{i}" for i, (e, _, h) in enumerate(ROUND_MISTAKES)]
)
def test_round_mistake_is_named(exercise, obj, hint):
    result = ex.grade(exercise, obj)
    assert (result.status, result.hint) == ("fail", hint), result.message
    assert "{" not in result.message and result.message.count("\n") == 0


@pytest.mark.parametrize(
    ("exercise", "fn", "hint"), TRANSFER_MISTAKES, ids=[f"{e}-{h}" for e, _, h in TRANSFER_MISTAKES]
)
def test_transfer_mistake_is_named(exercise, fn, hint):
    result = ex.grade(exercise, fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert ex.evaluate(exercise, fn).hint == hint


# ---- dropout read statistically; float noise of another device -------------------------------------------------


class SeededDropout(NoRescale):
    """A correct dropout drawing from its own stream: the checker's seeds do not decide what it drops."""

    seed = 0

    def forward(self, w):
        if not self.training:
            return w
        g = torch.Generator().manual_seed(self.seed)
        return w * (torch.rand(w.shape, generator=g) >= self.p) / (1 - self.p)


@pytest.mark.parametrize("seed", range(12))
def test_statistical_dropout_checks_pass_any_random_stream(seed):
    """The rate and independence tests hold whatever the draws (false alarm < 1e-6 per test by design)."""
    drop = type("Drop", (SeededDropout,), {"seed": 1000 + seed})
    assert ex.grade("multihead", flex(drop=drop)).passed
    assert ex.grade("causal_attention", flex(drop=drop)).passed

    def my_dropout(x, p, training=True):
        g = torch.Generator().manual_seed(2000 + seed)
        return x * (torch.rand(x.shape, generator=g) >= p) / (1 - p) if training and p > 0 else x

    assert ex.grade("dropout", my_dropout).passed


def test_verdicts_survive_float_noise_of_another_device():
    """Under tools/release/float_nudge.py (every float32 matmul/softmax/sum result moved by 1e-6 relative, as another
    device or library would) correct solutions still pass and the dropout probe still reads its placement."""
    from tools.release import float_nudge

    with float_nudge.FloatNudge():
        for exercise, obj in CORRECT_BUT_DIFFERENT:
            assert ex.grade(exercise, obj).passed, (exercise, ex.grade(exercise, obj).message)
        assert ex.grade("multihead", flex(place="context")).hint == "dropout_on_output"
        assert ex.grade("multihead", flex(place="after")).hint == "dropout_after_out_proj"


# ---- robustness: the checker never raises ------------------------------------------------------------------


def raises_type_error(*args, **kwargs):
    raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")


class RaisingModule(nn.Module):
    def __init__(self, *args):
        super().__init__()
        raise TypeError("boom")


def wrong_shape(*args, **kwargs):
    return torch.zeros(3, 2)


def not_a_tensor(*args, **kwargs):
    return [[0.0, 1.0]]


def returns_none(*args, **kwargs):
    return None


def prints_a_lot(*args, **kwargs):
    print("debug line 1\ndebug line 2")
    return "nope"


@pytest.mark.parametrize("exercise", ex.EXERCISES)
@pytest.mark.parametrize(
    "bad", [raises_type_error, wrong_shape, not_a_tensor, returns_none, prints_a_lot, 42, None, RaisingModule]
)
def test_checker_never_raises(exercise, bad, capsys):
    result = ex.evaluate(exercise, bad)
    assert result.status in ("fail", "error")
    assert result.hint != "checker_error", result.message
    assert CHECKERS[exercise](bad) is None
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("❌ "), out


def test_exception_message_names_type_and_text():
    result = ex.evaluate("causal_mask", raises_type_error)
    assert result.hint == "exception"
    assert "TypeError" in result.message and "unsupported operand" in result.message


def test_wrong_shape_is_reported_with_both_shapes():
    result = ex.evaluate("renormalize", wrong_shape)
    assert result.hint == "wrong_shape"
    assert "(5, 5)" in result.message and "(3, 2)" in result.message


# ---- languages ---------------------------------------------------------------------------------------------


def test_every_message_exists_in_both_languages():
    for hint, texts in _messages.MESSAGES.items():
        assert set(texts) == {"en", "zh"}, hint
        assert texts["en"].strip() and texts["zh"].strip() and texts["en"] != texts["zh"], hint
        assert "{title}" in texts["en"] and "{title}" in texts["zh"], hint
        assert "\n" not in texts["en"] and "\n" not in texts["zh"], hint


@pytest.mark.parametrize(
    ("exercise", "fn", "hint"),
    PLANTED[::3] + [("dropout", dropout, "passed"), ("document_windows", stub, "not_implemented")],
)
def test_messages_switch_language(exercise, fn, hint):
    en = ex.evaluate(exercise, fn)
    ex.set_language("zh")
    zh = ex.evaluate(exercise, fn)
    assert en.hint == zh.hint == hint
    assert en.status == zh.status
    assert en.message and zh.message and en.message != zh.message
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh.message)


def test_set_language_rejects_unknown():
    with pytest.raises(ValueError, match="fr"):
        ex.set_language("fr")
    assert ex.get_language() == "en"


def test_evaluate_rejects_unknown_exercise():
    with pytest.raises(ValueError, match="nope"):
        ex.evaluate("nope", stub)
