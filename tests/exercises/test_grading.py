"""The grading API of llm_lab.exercises: grade(), llm_lab's own reference spotted, fresh() copies a notebook cannot
patch, audit(), two-step hints, the registry (the harness that runs the learner's code: test_harness.py)."""

import functools
import re
import sys
from pathlib import Path

import pytest
import torch
from solutions_ex01_masks import causal_mask
from solutions_ex04_causal import CausalByHand
from torch import nn

import llm_lab
from llm_lab import exercises as ex
from llm_lab.exercises import _messages

# notebooks whose exercises exist (notebooks/src/NN_slug.exercises.nbsrc): the registry's notebook numbers
WITH_EXERCISES = {
    p.name[:2] for p in (Path(__file__).resolve().parents[2] / "notebooks" / "src").glob("[0-9][0-9]_*.exercises.nbsrc")
}


pytestmark = pytest.mark.usefixtures("fresh_hints")  # English, no hint shown yet (tests/exercises/conftest.py)


def mask_with_diagonal(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=0)


# ---- the registry ----------------------------------------------------------------------------------------------


def test_registry_drives_names_checks_and_points():
    assert ex.EXERCISES == tuple(ex.REGISTRY)
    for name, record in ex.REGISTRY.items():
        check = getattr(ex, f"check_{name}")
        assert f"check_{name}" in ex.__all__ and check.__name__ == f"check_{name}"
        doc = " ".join(check.__doc__.split())  # checkers.py wraps the docstring
        assert doc.startswith(f"Notebook {record.notebook}, ") and doc.endswith(" ".join(record.signature.split()))
        assert ex.points(name) == record.points > 0
        assert record.takes in ("function", "class") and record.notebook in WITH_EXERCISES
    assert {record.notebook for record in ex.REGISTRY.values()} <= WITH_EXERCISES


@pytest.mark.parametrize("notebook", sorted(WITH_EXERCISES))
def test_each_notebooks_checker_cells_are_its_registry_records(notebook):
    """The registry and the notebooks agree, with nothing listed by hand: the checker cells of NN's exercises
    source call exactly ``exercises_of(NN)``, in that order, each record in the module named for NN."""
    src = next((Path(__file__).resolve().parents[2] / "notebooks" / "src").glob(f"{notebook}_*.exercises.nbsrc"))
    called = re.findall(r"(?m)^%% code tags=checker\ncheck_(\w+)\(\w+\)$", src.read_text(encoding="utf-8"))
    assert tuple(called) == ex.exercises_of(notebook)
    for name in called:
        module = ex.REGISTRY[name].body.__module__.rsplit(".", 1)[-1]
        assert module.startswith(f"_ex{notebook}_"), f"{name}'s body lives in {module}, not notebook {notebook}'s"


def test_every_hint_of_every_record_has_both_languages():
    for record in ex.REGISTRY.values():
        for hint in record.hints:
            table = record.messages.get(hint) or _messages.MESSAGES.get(hint)
            assert table is not None, (record.name, hint)
            assert set(table) == {"en", "zh"} and "{title}" in table["en"] and "{title}" in table["zh"], hint
        for hint, fix in {**_messages.FIXES, **record.fixes}.items():
            assert set(fix) == {"en", "zh"} and fix["en"] != fix["zh"], hint
    assert set(_messages.FIXES) <= set(_messages.MESSAGES)


def test_grade_rejects_unknown_exercise_and_language():
    with pytest.raises(ValueError, match="nope"):
        ex.grade("nope", causal_mask)
    with pytest.raises(ValueError, match="fr"):
        ex.grade("causal_mask", causal_mask, lang="fr")


def test_grade_result_fields():
    result = ex.grade("causal_mask", mask_with_diagonal, lang="zh")
    assert (result.status, result.hint, result.points, result.score) == ("fail", "diagonal_masked", 1, 0)
    assert "对角线" in result.message and "torch.triu" in result.fix and result.fix not in result.message
    passed = ex.grade("causal_mask", causal_mask)
    assert passed.passed and passed.score == 1 and passed.line.startswith("✅ ")


def test_grade_is_deterministic_and_leaves_torch_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    first = ex.grade("causal_attention", CausalByHand)
    assert first.passed and first == ex.grade("causal_attention", CausalByHand)
    assert ex.grade("dropout", lambda x, p, training=True: x) == ex.grade("dropout", lambda x, p, training=True: x)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads and torch.get_default_dtype() == torch.float32


# ---- two-step hints ---------------------------------------------------------------------------------------------


def test_hint_names_the_concept_first_and_the_fix_when_the_mistake_comes_back(capsys):
    ex.check_causal_mask(mask_with_diagonal)
    first = capsys.readouterr().out
    assert "diagonal" in first and "torch.triu" not in first and "next check shows the fix" in first
    ex.check_causal_mask(mask_with_diagonal)
    second = capsys.readouterr().out
    assert "Fix: Use `torch.triu(..., diagonal=1)`" in second


def test_grade_neither_uses_nor_changes_the_hint_state(capsys):
    for _ in range(3):
        result = ex.grade("causal_mask", mask_with_diagonal)
        assert "torch.triu" not in result.message
    ex.check_causal_mask(mask_with_diagonal)  # still the first time for the learner
    assert "next check shows the fix" in capsys.readouterr().out
    ex.check_causal_mask(mask_with_diagonal)
    capsys.readouterr()
    assert "torch.triu" not in ex.grade("causal_mask", mask_with_diagonal).message


# ---- llm_lab's own reference handed in ------------------------------------------------------------------------------


class SubclassedMHA(llm_lab.MultiHeadAttention):
    pass


class WrapsMHA(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.inner = llm_lab.MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads)
        self.W_query, self.W_key, self.W_value = self.inner.W_query, self.inner.W_key, self.inner.W_value
        self.out_proj = self.inner.out_proj

    def forward(self, x):
        return self.inner(x)


def calls_reference(num_tokens):
    return llm_lab.causal_mask(num_tokens)


REFERENCE_CASES = [
    ("causal_mask", llm_lab.causal_mask),
    ("causal_mask", calls_reference),
    ("causal_mask", functools.partial(llm_lab.causal_mask)),
    ("renormalize", llm_lab.mask_and_renormalize),
    ("causal_softmax", lambda s, m: llm_lab.causal_softmax(s, m)),
    (
        "packed_weights",
        lambda q, k, d: llm_lab.causal_softmax(
            (q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5).masked_fill(d[..., :, None] != d[..., None, :], -torch.inf)
        ),
    ),
    ("causal_attention", llm_lab.CausalAttention),
    ("multihead", llm_lab.MultiHeadAttention),
    ("multihead", llm_lab.FusedMultiHeadAttention),
    ("multihead", SubclassedMHA),
    ("multihead", WrapsMHA),
    (
        "padded_attention",
        lambda q, k, v, m: llm_lab.causal_softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, m[:, None]) @ v,
    ),
]


@pytest.mark.parametrize(
    ("exercise", "obj"), REFERENCE_CASES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(REFERENCE_CASES)]
)
def test_llm_labs_own_reference_gets_status_reference(exercise, obj, capsys):
    result = ex.grade(exercise, obj)
    assert (result.status, result.score) == ("reference", 0), result.message
    assert "llm_lab.MultiHeadAttention" in result.message or "llm_lab." in result.message
    getattr(ex, f"check_{exercise}")(obj)
    assert capsys.readouterr().out.startswith("⚠️ ")


def test_llm_lab_helpers_that_are_not_the_answer_are_allowed():
    assert ex.grade("causal_attention", CausalByHand).passed


# ---- fresh copies and the audit ----------------------------------------------------------------------------------


def test_fresh_copy_is_not_in_sys_modules_and_grades_the_same():
    copy = ex.fresh()
    assert copy.__name__.startswith("_llm_lab_fresh_") and copy.__name__ not in sys.modules
    assert not [k for k in sys.modules if k.startswith(copy.__name__.split(".")[0])]
    mine, theirs = copy.grade("causal_mask", mask_with_diagonal), ex.grade("causal_mask", mask_with_diagonal)
    assert type(mine) is not type(theirs) and vars(mine) == vars(theirs)
    assert copy.grade("causal_mask", llm_lab.causal_mask).status == "reference"
    assert copy.grade("multihead", SubclassedMHA).status == "reference"


def test_fresh_copy_ignores_what_a_notebook_patched(monkeypatch):
    def always_passes(*args, **kwargs):
        print("✅ all correct")

    monkeypatch.setattr(ex, "grade", always_passes)
    monkeypatch.setattr(ex, "evaluate", always_passes)
    monkeypatch.setattr(sys.modules["llm_lab.exercises._registry"], "run_check", always_passes)
    monkeypatch.setattr(sys.modules["llm_lab.exercises._core"], "same", lambda *a, **k: True)
    monkeypatch.setattr(llm_lab.masks, "causal_mask", mask_with_diagonal)  # the reference itself
    copy = ex.fresh()
    result = copy.grade("causal_mask", mask_with_diagonal)
    assert (result.status, result.hint) == ("fail", "diagonal_masked")
    assert copy.grade("causal_mask", causal_mask).passed


def test_audit_names_what_was_tampered_with(monkeypatch):
    copy = ex.fresh()
    clean = {"check_causal_mask": ex.check_causal_mask, "x": 1}
    assert copy.audit(clean) == []

    def check_causal_mask(fn):
        print("✅ correct")

    monkeypatch.setattr(ex, "evaluate", lambda *a, **k: None)
    monkeypatch.setattr(llm_lab.masks, "causal_mask", mask_with_diagonal)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    notes = copy.audit({"check_causal_mask": check_causal_mask, "check_dropout": ex.check_dropout})
    assert any("`check_causal_mask` in the notebook" in n for n in notes)
    assert not any("check_dropout" in n for n in notes)
    assert any("llm_lab.exercises.evaluate" in n for n in notes)
    assert any("llm_lab.masks.causal_mask" in n for n in notes)
    assert any("torch.allclose" in n for n in notes)


def test_audit_spots_a_check_function_swapped_for_another_exercises():
    assert ex.fresh().audit({"check_causal_mask": ex.check_dropout})


def test_audit_spots_patched_re_exports_of_the_package(monkeypatch):
    copy = ex.fresh()
    monkeypatch.setattr(ex, "fresh", lambda: copy)
    monkeypatch.setattr(ex, "grade", lambda *a, **k: None)
    notes = copy.audit({})
    assert "`llm_lab.exercises.fresh` was replaced or patched" in notes
    assert "`llm_lab.exercises.grade` was replaced or patched" in notes
    assert len(notes) == len(set(notes))
