"""Checks run at once keep their records apart (llm_lab/exercises/_harness.py): the grader checks several
submissions at once, one per worker thread (``make grade --jobs N``), each against its own kernel. Here the
verdicts of many honest submissions graded at once are compared with each graded alone (the kernels: another
process). Notebook 07 is the case that fell: its cached attention may call SDPA, its blocked attention may not,
and a shared record of what a call ran made honest blocked attention "use SDPA" beside a neighbour's cached
attention (scores 5,5,5,5,5,2,2,5,5,5 for ten honest submissions at once)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from pathlib import Path

import torch
import torch.nn.functional as F
from solutions_ex07_tiled import tiled_attention

from llm_lab import exercises as ex
from llm_lab.exercises.grading import proxies


def chunk_attention(queries, keys, values, window):
    """Notebook 07's own solution: SDPA with the band as its mask (allowed in this exercise)."""
    q_len, k_len = queries.shape[-2], keys.shape[-2]
    future = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
    too_old = torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=~(future | too_old))


SERVER = """
import base64, json, sys
sys.path[:0] = {paths!r}
from llm_lab.exercises.grading import answering
from test_concurrent_checks import EXERCISES, printing
for i in range({n}):
    exercise, fn = EXERCISES[i % 2]
    answering.capture(f"student{{i}}_{{exercise}}", lambda fn=fn, i=i, e=exercise: printing(fn, f"student{{i}}_{{e}}"))
print("ready", flush=True)
for line in sys.stdin:
    answering.serve(line.strip())
"""


class Kernels:
    """The students' kernels: another process (as a sandboxed kernel is) answering the real protocol
    (``answering.serve``), one request at a time, as each student's kernel does; student ``i``'s solution is
    captured there under ``student{i}_{exercise}`` and prints that tag on every call."""

    def __init__(self, n: int):
        here = Path(__file__).resolve().parent
        code = SERVER.format(paths=[str(here), str(here.parent)], n=n)
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline() == "ready\n"
        self.lock = threading.Lock()
        self.count = 0

    def send(self, request: dict, timeout: float):
        with self.lock:
            self.count += 1
            nonce = f"NONCE{self.count} "
            payload = base64.b64encode(json.dumps({**request, "nonce": nonce}).encode()).decode()
            self.process.stdin.write(payload + "\n")
            self.process.stdin.flush()
            while not (line := self.process.stdout.readline()).startswith(nonce):
                assert line, "the kernel process ended"
        return json.loads(base64.b64decode(line[len(nonce) :]))

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def printing(fn, tag: str):
    """``fn`` that prints ``tag`` on every call: whose output a verdict shows."""

    def solution(*args):
        print(tag)
        return fn(*args)

    return solution


# notebook 07's two checked exercises: the one that may call SDPA and the one that may not
EXERCISES = (("cached_attention", chunk_attention), ("tiled_attention", tiled_attention))


def grade_remote(kernels: Kernels, i: int, start: threading.Barrier | None = None):
    """Student ``i``'s exercise graded as the grader does, on a proxy of the object in the kernel process."""
    exercise = EXERCISES[i % 2][0]
    link = proxies.KernelLink(kernels.send)
    link.exercise = exercise
    obj = link.lookup(f"student{i}_{exercise}")
    if start is not None:
        start.wait()
    return ex.grade(exercise, obj, timeout=120, secret=1234)


def at_once(jobs: list) -> list:
    """Each ``job(start)`` in a thread of its own, all begun together; their results in order."""
    start = threading.Barrier(len(jobs))
    results: list = [None] * len(jobs)

    def run(i):
        results[i] = jobs[i](start)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return results


def summary(result):
    return result.status, result.hint


def test_honest_submissions_graded_at_once_get_what_each_gets_alone():
    n = 8
    kernels = Kernels(n)
    try:
        alone = [summary(grade_remote(kernels, i)) for i in range(n)]
        together = at_once([lambda start, i=i: grade_remote(kernels, i, start) for i in range(n)])
    finally:
        kernels.close()
    assert alone == [("pass", "passed")] * n, alone
    assert [summary(r) for r in together] == alone, [(i, r.status, r.message) for i, r in enumerate(together)]
    tags = [f"student{i}_{EXERCISES[i % 2][0]}" for i in range(n)]
    for tag, result in zip(tags, together, strict=True):  # each verdict shows its own student's output, no other's
        assert tag in result.output and not any(o in result.output for o in tags if o != tag), (tag, result.output)


def test_local_checks_at_once_keep_their_records_apart():
    """The same with the learner's object in this process (a notebook's own check, or grading unsandboxed in
    threads): the observed ops and what each printed stay with their own check."""
    subs = [(f"local{i}", *EXERCISES[i % 2]) for i in range(8)]
    jobs = [
        lambda start, tag=tag, name=name, fn=fn: (start.wait(), ex.grade(name, printing(fn, tag), timeout=120))[1]
        for tag, name, fn in subs
    ]
    together = at_once(jobs)
    assert [summary(r) for r in together] == [("pass", "passed")] * len(subs), [r.message for r in together]
    for (tag, _, _), result in zip(subs, together, strict=True):
        assert tag in result.output and not any(o in result.output for o, _, _ in subs if o != tag), result.output
