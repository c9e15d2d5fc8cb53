"""Notebook 04's exercises (the causal attention class, its additive-mask variant): dropout on the raw scores, the
additive mask as a registered buffer, writing into a tensor (the solutions and planted mistakes:
solutions_ex04_causal.py)."""

import pytest
import torch
from _exercise_solutions import NEG_INF, flex
from solutions_ex04_causal import _scores_dropout_class, additive_class

import llm_lab
from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- dropout on the raw scores (04 and 05) --------------------------------------------------------------------


@pytest.mark.parametrize("exercise", ["causal_attention", "multihead"])
def test_dropout_on_the_raw_scores_is_not_called_missing(exercise):
    result = ex.grade(exercise, _scores_dropout_class())
    assert (result.status, result.hint) == ("fail", "dropout_on_scores"), result.message
    assert ex.grade(exercise, flex(place="none")).hint == "dropout_missing"  # no dropout at all: still missing


# ---- exercise 2: an additive mask, registered as a buffer; a 0/1 additive mask ---------------------------------


def test_the_lessons_masked_fill_class_does_not_earn_exercise_2():

    lesson = ex.grade(
        "additive_attention",
        additive_class(mask=lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1), forward="masked_fill"),
    )
    assert (lesson.status, lesson.hint) == ("fail", "additive_uses_masked_fill"), lesson.message
    assert "masked_fill" in lesson.message
    assert ex.grade("additive_attention", additive_class(forward="where")).hint == "additive_uses_masked_fill"
    assert ex.grade("additive_attention", llm_lab.CausalAttention).status == "reference"
    # the same lesson class still passes exercise 4, which is about that class
    assert ex.grade(
        "causal_attention",
        additive_class(mask=lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1), forward="masked_fill"),
    ).passed


@pytest.mark.parametrize(("how", "hint"), [("attribute", "mask_not_buffer"), ("parameter", "mask_is_parameter")])
def test_the_mask_must_be_a_registered_buffer(how, hint):
    result = ex.grade("additive_attention", additive_class(how=how))
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert "register_buffer" in ex.evaluate("additive_attention", additive_class(how=how)).message


@pytest.mark.parametrize(
    "mask",
    [
        None,
        lambda n: torch.triu(torch.full((n, n), -1e9), diagonal=1),
        lambda n: torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), NEG_INF),
    ],
    ids=["-inf", "-1e9", "masked_fill-in-init"],
)
@pytest.mark.parametrize("how", ["buffer", "non-persistent"])
def test_additive_buffers_pass(mask, how):
    result = ex.grade("additive_attention", additive_class(mask=mask, how=how))
    assert result.passed, result.message


@pytest.mark.parametrize(
    "mask",
    [lambda n: torch.triu(torch.ones(n, n), 1), lambda n: torch.tril(torch.ones(n, n))],
    ids=["ones-above", "ones-below"],
)
def test_a_0_1_additive_mask_is_named(mask):
    result = ex.grade("additive_attention", additive_class(mask=mask))
    assert (result.status, result.hint) == ("fail", "additive_mask_01"), result.message
    assert "-inf" in result.fix


def test_a_bool_buffer_added_is_not_additive():
    unused = additive_class(mask=lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1))
    assert ex.grade("additive_attention", unused).hint == "additive_mask_01"  # True + score: adds 1


def test_exercise_2_has_its_own_checker_in_the_notebook():
    from pathlib import Path

    src = (
        Path(__file__).resolve().parents[2] / "notebooks" / "src" / "04_causal_attention_class.exercises.nbsrc"
    ).read_text(encoding="utf-8")
    assert "check_additive_attention(MyCausalAttention)" in src
    assert "check_causal_attention(CausalAttentionFixed)" in src
    assert ex.points("additive_attention") == ex.points("causal_attention") == 2


# ---- writing into a tensor: assembling the output is fine, writing -inf into the scores is a mask ----------------


def _additive_writes(how):
    cls = additive_class()

    class Writes(cls):
        def forward(self, x):
            n = x.shape[1]
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            scores = q @ k.transpose(1, 2)
            hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
            if how == "setitem":
                scores[:, hidden] = NEG_INF
            elif how == "index_put":
                scores = scores.index_put(
                    (torch.arange(x.shape[0])[:, None, None], *hidden.nonzero().T[:, None]), torch.tensor(NEG_INF)
                )
            else:
                scores = scores + self.mask[:n, :n]
            weights = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
            if how != "assemble":
                return weights @ v
            out = torch.zeros(x.shape[0], n, v.shape[-1])
            for i in range(n):
                out[:, i] = (weights[:, i : i + 1] @ v)[:, 0]  # computed values, row by row: no mask
            return out

    return Writes


def test_an_output_assembled_row_by_row_is_not_a_mask():
    result = ex.grade("additive_attention", _additive_writes("assemble"))
    assert result.passed, result.message


@pytest.mark.parametrize("how", ["setitem", "index_put"])
def test_writing_minus_inf_into_the_scores_is_named(how):
    result = ex.grade("additive_attention", _additive_writes(how))
    assert (result.status, result.hint) == ("fail", "additive_uses_masked_fill"), result.message


# ---- the statement rules out torch.where anywhere in forward, and the checker does just that -----


@pytest.mark.parametrize(
    "guard", [lambda w: torch.nan_to_num(w, nan=0.0), lambda w: w.clamp(min=0.0)], ids=["nan_to_num", "clamp"]
)
def test_a_guard_without_where_passes(guard):
    result = ex.grade("additive_attention", additive_class(guard=guard))
    assert result.passed, result.message


def test_a_where_guard_is_named_as_the_statement_says():
    result = ex.grade("additive_attention", additive_class(guard=lambda w: torch.where(w.isnan(), 0.0, w)))
    assert (result.status, result.hint) == ("fail", "additive_uses_masked_fill"), result.message
    assert "torch.where" in result.message and "NaN guard" in result.message


def test_the_statement_rules_out_what_the_checker_rules_out_in_both_languages():
    from pathlib import Path

    from llm_lab.exercises import _ex04_causal

    source = (Path(__file__).parents[2] / "notebooks/src/04_causal_attention_class.exercises.nbsrc").read_text()
    en, zh = source.split("### Exercise 2")[1].split("%% md zh")[:2]
    for op in _ex04_causal.NOT_ADDITIVE_OPS:
        name = op.rstrip("_")
        assert f"`{name}`" in en or f"`torch.{name}`" in en, op
        assert f"`{name}`" in zh or f"`torch.{name}`" in zh, op


# ---- a module whose output does not follow its layers is named, in 04 and 05 ------------------


def _stale_class(stale_values: bool):
    """Copies W_query and W_key (and W_value if ``stale_values``) at construction; dropout on the context vectors."""
    from torch import nn

    class Stale(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads=1):
            super().__init__()
            self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=False) for _ in range(3))
            self.out_proj = nn.Linear(d_out, d_out)
            self.num_heads = num_heads
            self.wq, self.wk, self.wv = (m.weight.detach().clone() for m in (self.W_query, self.W_key, self.W_value))
            self.stale_values = stale_values
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

        def forward(self, x):
            b, t, _ = x.shape
            nh = self.num_heads
            v_w = self.wv if self.stale_values else self.W_value.weight
            q, k, v = ((x @ w.T).view(b, t, nh, -1).transpose(1, 2) for w in (self.wq, self.wk, v_w))
            s = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:t, :t], NEG_INF)
            context = (torch.softmax(s / k.shape[-1] ** 0.5, dim=-1) @ v).transpose(1, 2).reshape(b, t, -1)
            return self.dropout(self.out_proj(context) if self._mha else context)

    return Stale


@pytest.mark.parametrize("stale_values", [True, False], ids=["all-layers-copied", "scores-stale"])
@pytest.mark.parametrize("exercise", ["causal_attention", "multihead"])
def test_a_module_that_copies_its_layers_at_construction_is_named(exercise, stale_values):
    cls = _stale_class(stale_values)
    cls._mha = exercise == "multihead"
    result = ex.grade(exercise, cls)
    assert (result.status, result.hint) == ("fail", "layers_not_followed"), result.message
    assert ex.grade(exercise, cls, lang="zh").message != result.message


# ---- nn.Dropout, then the rows renormalised: named for what the code did ----------------------------------------


class _Renormalized(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (torch.nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3))
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (q @ k.transpose(1, 2)).masked_fill(self.mask[:t, :t], float("-inf")) / k.shape[-1] ** 0.5
        weights = self.dropout(torch.softmax(scores, dim=-1))
        weights = weights / weights.sum(dim=-1, keepdim=True).clamp(min=1e-9)
        return weights @ v


def test_dropout_then_rows_renormalised_is_not_told_to_fix_a_hand_written_scale():
    """It was named dropout_wrong_scale, whose fix is for a hand-written dropout's 1/(1-p); the code used
    nn.Dropout and then made each row sum to 1 again."""
    for lang in ("en", "zh"):
        result = ex.grade("causal_attention", _Renormalized, lang=lang)
        assert (result.status, result.hint) == ("fail", "dropout_renormalized"), result.message
