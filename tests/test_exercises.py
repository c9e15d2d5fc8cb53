"""The exercise checkers: reference solutions pass, stubs are 'not implemented', planted mistakes are named.

Each exercise module ``llm_lab/exercises/_exNN_<concept>.py`` has its test module ``tests/test_exNN_<concept>.py``
holding ``SOLUTIONS`` (exercise -> a correct solution) and ``PLANTED`` ((exercise, wrong code, hint)); they are
found here through the registry, so a new exercise touches its module, its test module and its ``.nbsrc``."""

import importlib

import pytest
import torch
from _exercise_solutions import NEG_INF, dropout  # noqa: F401  (re-exported for the other checker tests)
from torch import nn

import llm_lab
from llm_lab import exercises as ex
from llm_lab.exercises import _messages

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- correct solutions -------------------------------------------------------------------------------------


# ---- every exercise module's tests: SOLUTIONS and PLANTED, found through the registry ------------------------


def _test_module(exercise: str):
    module = ex.REGISTRY[exercise].body.__module__.rsplit(".", 1)[-1]  # "_ex01_masks"
    return importlib.import_module(f"test{module}")  # tests/test_ex01_masks.py


TEST_MODULES = {name: _test_module(name) for name in ex.EXERCISES}
SOLUTIONS = {name: TEST_MODULES[name].SOLUTIONS[name] for name in ex.EXERCISES if name in TEST_MODULES[name].SOLUTIONS}
PLANTED = [p for m in dict.fromkeys(TEST_MODULES.values()) for p in m.PLANTED]
REFERENCES = {
    "causal_mask": llm_lab.causal_mask,
    "renormalize": llm_lab.mask_and_renormalize,
    "causal_attention": llm_lab.CausalAttention,
    "multihead": llm_lab.MultiHeadAttention,
}
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


def stub(*args, **kwargs):
    raise NotImplementedError()


class StubModule(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError()


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
