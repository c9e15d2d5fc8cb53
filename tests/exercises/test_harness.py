"""The harness that runs the learner's code for llm_lab.exercises' grade() (``_harness``): the time limit, exits and
interrupts, a notebook's own alarm, prints, meta tensors, a notebook's default device and dtype."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from solutions_ex01_masks import causal_mask
from solutions_ex04_causal import CausalByHand
from torch import nn

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("fresh_hints")  # English, no hint shown yet (tests/exercises/conftest.py)


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

    root = Path(__file__).resolve().parents[2]
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


# ---- the watch on llm_lab's references cannot be switched off ---------------------------------------------------


def _packed_by_reference(q, k, doc_ids):
    from llm_lab.exercises import _ex02_softmax as m

    return m.softmax_masked(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, m.packed_hidden(doc_ids))


def _windows_by_reference(ids, max_length, stride):
    from llm_lab.exercises._ex06_data import document_windows_ref

    windows = document_windows_ref(list(ids), max_length, stride)
    return windows[0], windows[1]


def _head_by_reference(runs, layer, head):
    from llm_lab.exercises._ex08_induction import needed_head

    return needed_head(runs, layer, head)


def _padded_by_reference(q, k, v, key_padding_mask):
    from llm_lab.exercises._ex05_padding import _padded_ref

    t = q.shape[-2]
    hidden = torch.ones(t, t, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :]
    return _padded_ref(q, k, v, hidden)


def _switched_off(reference, restore: bool):
    """The reference called with the harness's hooks removed (``restore``: put back before returning)."""

    def learner(*args):
        trace, profile = sys.gettrace(), sys.getprofile()
        sys.settrace(None)
        sys.setprofile(None)
        try:
            return reference(*args)
        finally:
            if restore:
                sys.settrace(trace)
                sys.setprofile(profile)

    return learner


SWITCHED_OFF = [
    ("packed_weights", _packed_by_reference, False),
    ("document_windows", _windows_by_reference, False),
    ("find_by_ablation", _head_by_reference, False),
    ("packed_weights", _packed_by_reference, True),  # the profile hook (every builtin call watched), put back
    ("padded_attention", _padded_by_reference, True),  # an observed call: the trace hook, put back
]


@pytest.mark.parametrize(
    ("name", "reference", "restore"), SWITCHED_OFF, ids=[f"{n}-{'back' if r else 'off'}" for n, _, r in SWITCHED_OFF]
)
def test_code_that_switches_off_the_watch_does_not_pass(name, reference, restore):
    """``sys.settrace(None); sys.setprofile(None)`` in the learner's code removed the hooks that see llm_lab's
    references run: the checker's or the lesson's reference then passed (02 ``packed_hidden``, 06
    ``document_windows_ref``, 08 ``needed_head``). Removing or replacing the hooks is now a named failure, also
    when the code puts them back before it returns."""
    fn = _switched_off(reference, restore)
    for lang in ("en", "zh"):
        result = ex.grade(name, fn, lang=lang)
        assert (result.status, result.hint) == ("fail", "watch_switched_off"), result.message
    assert "sys.set" in result.message


def test_switching_off_the_watch_is_named_through_the_grading_protocol():
    from _remote_loopback import remote_grade

    remote = remote_grade("packed_weights", _switched_off(_packed_by_reference, restore=False))
    assert (remote.status, remote.hint) == ("fail", "watch_switched_off"), remote.message
