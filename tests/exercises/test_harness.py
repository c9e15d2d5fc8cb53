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
