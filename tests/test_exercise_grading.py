"""The grading API of llm_lab.exercises: grade(), the harness (time limit, interrupts, prints, odd objects),
llm_lab's own reference spotted, fresh() copies a notebook cannot patch, audit(), two-step hints, the registry."""

import functools
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from torch import nn

import llm_lab
from llm_lab import exercises as ex
from llm_lab.exercises import _messages

NEG_INF = float("-inf")
# notebooks whose exercises exist (notebooks/src/NN_slug.exercises.nbsrc): the registry's notebook numbers
WITH_EXERCISES = {
    p.name[:2]
    for p in (Path(__file__).resolve().parent.parent / "notebooks" / "src").glob("[0-9][0-9]_*.exercises.nbsrc")
}


@pytest.fixture(autouse=True)
def english():
    ex.set_language("en")
    ex.reset_hints()
    yield
    ex.set_language("en")
    ex.reset_hints()


def causal_mask(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


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
    src = next((Path(__file__).resolve().parent.parent / "notebooks" / "src").glob(f"{notebook}_*.exercises.nbsrc"))
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


# ---- the harness: time limit, exits, interrupts, prints, odd tensors -----------------------------------------------


def endless(*args, **kwargs):
    while True:
        pass


def stubborn(*args, **kwargs):
    """Swallows the first few interruptions with a bare except, then loops on."""
    for _ in range(3):
        try:
            while True:
                pass
        except BaseException:
            pass
    while True:
        pass


def sleeper(*args, **kwargs):
    time.sleep(60)


@pytest.mark.parametrize("fn", [endless, stubborn, sleeper])
def test_endless_code_gets_its_own_line_within_the_limit(fn):
    start = time.monotonic()
    result = ex.grade("causal_mask", fn, timeout=0.5)
    assert time.monotonic() - start < 3
    assert (result.status, result.hint) == ("timeout", "timeout")
    assert "0.5 s" in result.message and "num_tokens=5" in result.message
    assert result.line.startswith("⏰ ")


NEVER_GIVES_UP = """
import sys, threading, time, torch
from llm_lab import exercises as ex

def work():
    with torch.no_grad():
        return torch.ones(3) + 1

def never_gives_up(num_tokens):
    while True:
        try:
            try:
                work()
            except Exception:  # does not catch the time limit: the outer handler does
                pass
        except BaseException:
            pass

box = {}
start = time.monotonic()
result = ex.grade("causal_mask", never_gives_up, timeout=0.5)
worker = threading.Thread(target=lambda: box.update(r=ex.grade("causal_mask", never_gives_up, timeout=0.5)),
                          daemon=True)
worker.start()
worker.join(10)
print(result.status, box["r"].status if "r" in box else "hung", round(time.monotonic() - start))
"""


def test_a_loop_that_swallows_every_interruption_still_ends_at_the_limit():
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run(
            [sys.executable, "-c", NEVER_GIVES_UP],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the check never ended: the loop swallowed every Deadline")
    status, in_thread, seconds = done.stdout.split()
    assert (status, in_thread) == ("timeout", "timeout"), done.stderr[-2000:]
    assert int(seconds) < 8


def test_time_limit_off_the_main_thread_uses_the_trace_fallback():
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=ex.grade("causal_mask", endless, timeout=0.5)))
    worker.start()
    worker.join(10)
    assert not worker.is_alive()
    assert box["r"].status == "timeout"
    assert ex.grade("causal_mask", causal_mask).passed  # the main-thread alarm is cleaned up


def exits(*args, **kwargs):
    sys.exit(3)


def raises_keyboard_interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_sys_exit_and_a_raised_keyboard_interrupt_are_reported(capsys):
    result = ex.grade("causal_mask", exits)
    assert (result.status, result.hint) == ("error", "system_exit")
    result = ex.grade("renormalize", raises_keyboard_interrupt)
    assert (result.status, result.hint) == ("error", "exception") and "KeyboardInterrupt" in result.message
    ex.check_causal_mask(exits)
    assert capsys.readouterr().out.startswith("❌ ")


def real_ctrl_c(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="POSIX signals")
def test_a_real_ctrl_c_still_stops_the_cell():
    with pytest.raises(KeyboardInterrupt):
        ex.check_causal_mask(real_ctrl_c)
    assert ex.grade("causal_mask", causal_mask).passed  # handlers restored


def meta_mask(num_tokens):
    return torch.empty(num_tokens, num_tokens, dtype=torch.bool, device="meta")


class MetaModule(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
        super().__init__()
        with torch.device("meta"):
            self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out) for _ in range(3))

    def forward(self, x):
        return x


def test_meta_tensors_are_the_learners_not_llm_labs():
    result = ex.grade("causal_mask", meta_mask)
    assert (result.status, result.hint) == ("fail", "meta_tensor")
    result = ex.grade("causal_attention", MetaModule)
    assert (result.status, result.hint) == ("fail", "meta_tensor")
    assert "bug in llm_lab" not in result.message


def test_a_notebooks_default_device_and_dtype_do_not_break_the_check():
    torch.set_default_dtype(torch.float64)
    torch.set_default_device("meta")
    try:
        result = ex.grade("causal_attention", CausalByHand)
    finally:
        torch.set_default_device("cpu")
        torch.set_default_dtype(torch.float32)
    assert result.passed, result.message
    assert torch.get_default_dtype() == torch.float32


class CausalByHand(nn.Module):
    """Uses llm_lab.causal_mask as a helper: allowed, it is not the exercise's answer."""

    def __init__(self, d_in, d_out, context_length, dropout):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=False) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", llm_lab.causal_mask(context_length))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask[:t, :t], NEG_INF)
        return self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)) @ v


def chatty(num_tokens):
    print(f"building a mask of {num_tokens}")
    return causal_mask(num_tokens)


def test_the_learners_prints_are_shown_not_swallowed(capsys):
    result = ex.grade("causal_mask", chatty)
    assert result.passed and result.output.splitlines()[0] == "building a mask of 5"
    ex.check_causal_mask(chatty)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "your code printed:" and lines[1] == "building a mask of 5"
    assert lines[-1].startswith("✅ ")


def test_a_flood_of_prints_is_trimmed():
    def noisy(num_tokens):
        for i in range(1000):
            print(i)
        return causal_mask(num_tokens)

    output = ex.grade("causal_mask", noisy).output
    assert len(output.splitlines()) == 21 and output.endswith("(+3980)")


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


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timers")
def test_a_notebooks_own_alarm_survives_a_check():
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    previous = signal.signal(signal.SIGALRM, lambda *a: None)
    try:
        assert ex.grade("causal_mask", causal_mask).passed
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_budget_spent_by_slow_calls_ends_in_timeout_not_an_error():
    def slow_but_finite(num_tokens):
        time.sleep(0.3)
        return causal_mask(num_tokens)

    result = ex.grade("causal_mask", slow_but_finite, timeout=0.5)  # 4 calls of 0.3 s
    assert (result.status, result.hint) == ("timeout", "timeout"), result.message
