"""What grading feeds the checkers: inputs drawn from a secret (``grade(..., secret=...)``, what make grade passes),
so a table of the answers to the public ``check_*`` inputs scores 0 for every exercise, while correct solutions
still pass and the notebooks' own checkers keep their fixed inputs; and no check lets the learner's code work in
another thread or process, where the watch on its calls cannot see (07's blocked attention with plain SDPA in a
thread). Checked here and through the protocol (the kernel's side served in this process)."""

from __future__ import annotations

import hashlib
import threading

import pytest
import torch
import torch.nn.functional as F
from _exercise_tables import SOLUTIONS
from _remote_loopback import loopback
from torch import nn

from llm_lab import exercises as ex
from llm_lab.exercises import _shared
from llm_lab.exercises.grading import answering

SECRETS = (11, 2026)


def _key(args, kwargs, module=None) -> str:
    """What a replay table looks answers up by: a fingerprint of the inputs (and a module's weights and mode, and the
    seed the checker set)."""
    h = hashlib.sha256(str(torch.initial_seed()).encode())

    def feed(v):
        if isinstance(v, torch.Tensor):
            # a fingerprint computed with torch alone (leaving torch inside the call is a named mistake of 07)
            flat = v.detach().cpu().double().flatten()
            mix = float((flat * torch.arange(1, flat.numel() + 1, dtype=torch.float64)).sum())
            h.update(f"{v.dtype}{tuple(v.shape)}{float(flat.sum())!r}{mix!r}".encode())
        elif isinstance(v, (list, tuple)):
            for x in v:
                feed(x)
        elif isinstance(v, dict):
            for k in sorted(v):
                h.update(k.encode())
                feed(v[k])
        elif isinstance(v, nn.Module):
            feed(dict(v.state_dict()))
        else:
            h.update(repr(v).encode())

    feed(list(args))
    feed(kwargs)
    if module is not None:
        feed(dict(module.state_dict()))
        h.update(str(module.training).encode())
    return h.hexdigest()


def _copy(v):
    return (
        v.clone()
        if isinstance(v, torch.Tensor)
        else type(v)(_copy(x) for x in v)
        if isinstance(v, (tuple, list))
        else v
    )


def replay(solution):
    """(recorder, replayer): the recorder runs the correct solution and writes its answers into a table; the
    replayer answers from the table only (a miss: the first answer recorded)."""
    table: dict = {}

    def answer(key):
        return _copy(table.get(key, next(iter(table.values()))))

    if isinstance(solution, type):

        class Recorder(solution):
            def forward(self, *a, **k):
                key, out = _key(a, k, self), super().forward(*a, **k)
                table[key] = _copy(out)
                return out

        class Replayer(solution):
            def forward(self, *a, **k):
                return answer(_key(a, k, self))

        Recorder.__name__ = Replayer.__name__ = solution.__name__
        return Recorder, Replayer

    def recorder(*a, **k):
        out = solution(*a, **k)
        table[_key(a, k)] = _copy(out)
        return out

    return recorder, lambda *a, **k: answer(_key(a, k))


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_a_table_of_the_public_answers_scores_zero(name):
    recorder, replayer = replay(SOLUTIONS[name])
    assert ex.grade(name, recorder).status == "pass"
    assert ex.grade(name, replayer).status == "pass", "the table answers the public check: the attack is real"
    for secret in SECRETS:
        result = ex.grade(name, replayer, secret=secret)
        assert result.status != "pass", (secret, result.message)


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_correct_solutions_pass_on_secret_inputs(name):
    for secret in SECRETS + (7,):
        result = ex.grade(name, SOLUTIONS[name], secret=secret)
        assert result.status == "pass", (secret, result.message)


def test_the_public_checkers_keep_their_fixed_inputs():
    assert _shared.sizes((5, 1, 9, 2), high=16, seed=100) == (5, 1, 9, 2)
    assert torch.equal(
        torch.randn(3, generator=_shared.gen(101)), torch.randn(3, generator=torch.Generator().manual_seed(101))
    )
    with _shared.secret_inputs(SECRETS[0]):
        drawn = _shared.sizes((5, 1, 9, 2), high=16, seed=100)
        secret_values = torch.randn(3, generator=_shared.gen(101))
    assert drawn[0] == 1 and not set(drawn[1:]) & {5, 9, 2} and len(set(drawn)) == 4
    assert not torch.equal(secret_values, torch.randn(3, generator=_shared.gen(101)))
    with _shared.secret_inputs(SECRETS[1]):
        assert not torch.equal(secret_values, torch.randn(3, generator=_shared.gen(101)))


def test_the_secret_is_per_thread():
    """The grader checks several submissions at once, each in its own thread: one check's secret is not another's."""
    seen = {}

    def draw(name, secret):
        with _shared.secret_inputs(secret):
            seen[name] = torch.randn(2, generator=_shared.gen(1))

    with _shared.secret_inputs(5):
        t = threading.Thread(target=draw, args=("other", None))
        t.start()
        t.join()
        mine = torch.randn(2, generator=_shared.gen(1))
    assert torch.equal(seen["other"], torch.randn(2, generator=torch.Generator().manual_seed(1)))
    assert not torch.equal(mine, seen["other"])


def test_a_replay_table_scores_zero_through_the_protocol():
    recorder, replayer = replay(SOLUTIONS["renormalize"])
    ex.grade("renormalize", recorder)
    link = loopback()
    link.exercise = "renormalize"
    answering.capture("renormalize", lambda: replayer)
    proxy = link.lookup("renormalize")
    assert ex.grade("renormalize", proxy, timeout=60).status == "pass"
    assert ex.grade("renormalize", proxy, timeout=60, secret=SECRETS[0]).status == "fail"


# ---- threads and processes ---------------------------------------------------------------------------------


def sdpa_in_a_thread(queries, keys, values, block_size):
    out = []
    worker = threading.Thread(
        target=lambda: out.append(F.scaled_dot_product_attention(queries, keys, values, is_causal=True))
    )
    worker.start()
    worker.join()
    return out[0]


def reference_in_a_thread(num_tokens):
    out = []
    worker = threading.Thread(target=lambda: out.append(__import__("llm_lab").causal_mask(num_tokens)))
    worker.start()
    worker.join()
    return out[0]


@pytest.mark.parametrize(
    ("exercise", "fn"), [("tiled_attention", sdpa_in_a_thread), ("causal_mask", reference_in_a_thread)]
)
def test_a_thread_started_during_a_check_fails_it(exercise, fn):
    local = ex.grade(exercise, fn)
    assert (local.status, local.hint) == ("fail", "thread_started"), local.message
    assert "threading.Thread.start" in local.message or "_thread.start_new_thread" in local.message
    link = loopback()
    link.exercise = exercise
    answering.capture(exercise, lambda: fn)
    remote = ex.grade(exercise, link.lookup(exercise), timeout=60, secret=SECRETS[0])
    assert (remote.status, remote.hint) == ("fail", "thread_started"), remote.message


def test_a_process_started_during_a_check_fails_it():
    def forks(num_tokens):
        import subprocess

        subprocess.run(["true"], check=False)
        return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)

    result = ex.grade("causal_mask", forks)
    assert (result.status, result.hint) == ("fail", "thread_started"), result.message
