"""Notebook 04's exercises (the causal attention class, its additive-mask variant): solutions.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""

import pytest
import torch
import torch.nn.functional as F
from _exercise_solutions import NEG_INF, with_mistake
from torch import nn

import llm_lab
from llm_lab import exercises as ex


class AdditiveAttention(nn.Module):
    """04 exercise 2: the causal mask stored as an additive float buffer (0 / -inf) and added to the scores."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), NEG_INF), diagonal=1))

    def forward(self, x):
        num_tokens = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2) + self.mask[:num_tokens, :num_tokens]
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return attn_weights @ values


class CausalAttention(nn.Module):
    """A configurable single head; each flag plants one mistake."""

    mistake = None

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout
        self.context_length = context_length
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        m = self.mistake
        b, num_tokens, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        n = self.context_length if m == "mask_wrong_size" else num_tokens
        mask = self.mask.bool()[:n, :n]
        if m == "diagonal_masked":
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool))
        if m != "future_open":
            attn_scores = attn_scores.masked_fill(mask, NEG_INF)
        d_k = keys.shape[-1]
        scale = {"scale_missing": 1.0, "scale_twice": d_k, "scale_uses_d_in": x.shape[-1] ** 0.5}.get(m, d_k**0.5)
        attn_weights = torch.softmax(attn_scores / scale, dim=1 if m == "softmax_dim" else -1)
        if m == "dropout_in_eval":
            attn_weights = F.dropout(attn_weights, self.p)
        elif m != "dropout_missing":
            attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


SOLUTIONS = {
    "additive_attention": AdditiveAttention,
    "causal_attention": CausalAttention,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("causal_attention", with_mistake(CausalAttention, "diagonal_masked"), "diagonal_masked"),
    ("causal_attention", with_mistake(CausalAttention, "future_open"), "future_open"),
    ("causal_attention", with_mistake(CausalAttention, "softmax_dim"), "softmax_dim"),
    ("causal_attention", with_mistake(CausalAttention, "scale_missing"), "scale_missing"),
    ("causal_attention", with_mistake(CausalAttention, "scale_twice"), "scale_twice"),
    ("causal_attention", with_mistake(CausalAttention, "mask_wrong_size"), "mask_wrong_size"),
    ("causal_attention", with_mistake(CausalAttention, "scale_uses_d_in"), "scale_uses_d_in"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_in_eval"), "dropout_in_eval"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_missing"), "dropout_missing"),
]


# ---- dropout on the raw scores (04 and 05) --------------------------------------------------------------------


def _scores_dropout_class():
    from test_exercise_mistakes import Flex

    class ScoresDropout(Flex):
        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = (
                layer(x).view(b, t, self.nh, self.hd).transpose(1, 2)
                for layer in (self.W_query, self.W_key, self.W_value)
            )
            attn_scores = self.dropout(q @ k.transpose(-2, -1))  # before the softmax
            attn_scores = attn_scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), NEG_INF)
            c = (torch.softmax(attn_scores / self.hd**0.5, dim=-1) @ v).transpose(1, 2).reshape(b, t, self.d_out)
            return self.out_proj(c) if self.multi else c

    return ScoresDropout


@pytest.mark.parametrize("exercise", ["causal_attention", "multihead"])
def test_dropout_on_the_raw_scores_is_not_called_missing(exercise):
    result = ex.grade(exercise, _scores_dropout_class())
    assert (result.status, result.hint) == ("fail", "dropout_on_scores"), result.message
    from test_exercise_mistakes import flex

    assert ex.grade(exercise, flex(place="none")).hint == "dropout_missing"  # no dropout at all: still missing


# ---- exercise 2: an additive mask, registered as a buffer; a 0/1 additive mask ---------------------------------


def additive_class(mask=None, how="buffer", forward="add"):
    """04 exercise 2's class with switches: the stored mask (a function of context_length), how it is stored
    (buffer, non-persistent buffer, plain attribute, nn.Parameter), and how forward applies it."""
    from torch import nn

    class Additive(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__()
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.dropout = nn.Dropout(dropout)
            t = (mask or (lambda n: torch.triu(torch.full((n, n), NEG_INF), diagonal=1)))(context_length)
            if how == "attribute":
                self.mask = t
            elif how == "parameter":
                self.mask = nn.Parameter(t, requires_grad=False)
            else:
                self.register_buffer("mask", t, persistent=how != "non-persistent")

        def forward(self, x):
            num_tokens = x.shape[1]
            queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
            attn_scores = queries @ keys.transpose(1, 2)
            m = self.mask[:num_tokens, :num_tokens]
            if forward == "masked_fill":
                attn_scores = attn_scores.masked_fill(m.bool() if m.dtype == torch.bool else m < 0, NEG_INF)
            elif forward == "where":
                attn_scores = torch.where(m < 0, NEG_INF, attn_scores)
            else:
                attn_scores = attn_scores + m
            attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
            return attn_weights @ values

    return Additive


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
        Path(__file__).resolve().parent.parent / "notebooks" / "src" / "04_causal_attention_class.exercises.nbsrc"
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
