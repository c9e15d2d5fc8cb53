"""The second seccomp filter (tools/teaching/grader/sandbox_seccomp.py, ``no_processes``): the graded kernel adds it
to itself after its warm-up, so that no learner code starts another process (a subprocess with its code in a
string, ``os.system`` under a star import, a worker: the sixth red team's route ran ``F.cross_entropy`` in a child
python during the check), nor makes a file in memory that could be mapped as code (``memfd_create``).
Applied here to a child python of the test's own: threads and torch's own threads still
run, a new process does not; before it, the same calls start one (the control)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from tools.teaching.grader import sandbox_seccomp

PROBE = """
import json, os, subprocess, threading, torch
def tries():
    found = {}
    for name, start in (("subprocess", lambda: subprocess.run(["true"]).returncode), ("fork", os.fork),
                        ("system", lambda: os.system("exit 7") >> 8), ("memfd", lambda: os.memfd_create("x"))):
        try:
            pid = start()
            if name == "fork" and pid == 0:
                os._exit(0)
            found[name] = "started"
        except PermissionError:
            found[name] = "refused"
    return found
before = tries()
exec(INSTALL)
seen = []
t = threading.Thread(target=seen.append, args=(1,)); t.start(); t.join()
torch.set_num_threads(2)
product = float((torch.ones(200, 200) @ torch.ones(200, 200)).sum())
print(json.dumps([before, tries(), seen, product, sorted(k for k in globals() if k.startswith("_no"))]))
"""


@pytest.mark.skipif(sandbox_seccomp.no_processes() is None, reason=f"no seccomp table for {platform.machine()}")
def test_no_process_starts_once_the_filter_is_on_and_threads_still_run():
    code = "INSTALL = " + repr(sandbox_seccomp.installer()) + "\n" + PROBE
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after, seen, product, leftover = json.loads(out.stdout.strip().splitlines()[-1])
    assert before == dict.fromkeys(["subprocess", "fork", "system", "memfd"], "started")  # the control
    assert after["subprocess"] == after["fork"] == after["memfd"] == "refused", after
    assert seen == [1] and product == 200 * 200 * 200 and leftover == []


def test_the_filter_is_a_whole_program():
    for machine in sandbox_seccomp.ARCHES:
        program = sandbox_seccomp.no_processes(machine)
        assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 64
    assert sandbox_seccomp.no_processes("sparc") is None and sandbox_seccomp.installer("sparc") == ""
