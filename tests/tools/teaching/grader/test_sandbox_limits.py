"""Limits that hold per submission and across graders (tools/teaching/grader/sandbox.py, sandbox_limits.py).

- Two graders at once on one machine (an instructor grading while CI grades), each with a fork storm in its
  class: every sandbox of both has a uid of its own (each submission writes a file named after its uid, which
  the grader reports), and both finish with every total right.
- Everywhere (root or not): 2,000,000 empty files in /tmp stop at ``TMP_INODES``, and the connection folder is
  read-only once the kernel's sockets are bound (without root, 572 MiB written there once landed on the
  grader's disk; as root the folder was already the grader's).
- Where root has a cgroup per submission (v2, or v1 on a hybrid machine), one submission's processes share one
  memory limit that counts its /tmp files and their kernel memory: 4 processes allocating 2 GiB at once stop
  that submission alone; and one CPU share, its time judged by its own CPU time: 60 busy processes are stopped
  as one once they have used the submission's CPU time, and an honest neighbour graded beside them, its cells
  a second of CPU each with an 8 s limit, keeps every point.
In each, the neighbours are graded normally (and no cgroup is left behind).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import _course_fixture as fx
import nbformat
import pytest

from tools.teaching.grader import cli, sandbox_limits
from tools.teaching.grader import kernel as grader_kernel

pytestmark = pytest.mark.usefixtures("sandbox_required")
ROOT = Path(__file__).resolve().parents[4]
WRONG = "\ndef causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu()\n"
STUB = "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"
# every sandbox of both graders is alive at once: each submission holds its kernel for a while
UID_FILE = "\nimport os as _os, time as _time\nopen(f'/tmp/uid-{_os.getuid()}', 'w').close()\n_time.sleep(15)\n"
FORK_STORM = """
import os, time
open(f'/tmp/uid-{os.getuid()}', 'w').close()
kids = []
try:
    while len(kids) < 2000:
        pid = os.fork()
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        kids.append(pid)
except OSError:
    pass
time.sleep(15)
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
"""
ONE_GRADER = """
import json, sys
from pathlib import Path
from tools.teaching.grader import cli
subs, out, src = map(Path, sys.argv[1:4])
results = cli.grade(
    subs, out, "01", jobs=3, cell_timeout=90, src=src, echo=lambda *a: None, max_seconds=300, run_unvouched=True
)
print("RESULTS " + json.dumps({r.student: [r.total, r.notes, r.problem] for r in results}))
"""


def _class_beside(tmp_path, attackers: dict[str, str]):
    """The fixture course, alice (right) and carol (a wrong mask) handed in beside each attacker (its code in the
    first exercise's cell, the second left as the stub): (the notebooks, the submissions folder, the points)."""
    notebooks = fx.build_course(tmp_path / "course")
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(fx.filled(notebooks), str(subs / "alice.ipynb"))
    nbformat.write(fx.filled(notebooks, causal_mask=WRONG), str(subs / "carol.ipynb"))
    for student, code in attackers.items():
        nb = fx.filled(notebooks, causal_mask=code)
        fx.solution_cells(nb)[1].source = STUB
        nbformat.write(nb, str(subs / f"{student}.ipynb"))
    return notebooks, subs, fx.points(notebooks)


def _graded(subs, out, notebooks, **limits) -> dict:
    """student -> Submission, the class graded with every cell run, those the grader would leave out too
    (``run_unvouched``), and without the graded kernel's own process filter (``Kernel.NO_PROCESSES``: it refuses
    these forks first, test_sandbox_seccomp.py): what is tested is the sandbox's limits on their own."""
    grader_kernel.Kernel.NO_PROCESSES = False
    try:
        grading = cli.grade(subs, out, "01", jobs=2, src=notebooks, echo=lambda *a: None, run_unvouched=True, **limits)
    finally:
        grader_kernel.Kernel.NO_PROCESSES = True
    return {r.student: r for r in grading}


def _class(notebooks: Path, subs: Path, storm: str) -> dict[str, int]:
    pts = fx.points(notebooks)
    subs.mkdir(parents=True)
    expect = {}
    for student, mask, total in (
        ("alice", None, sum(pts.values())),
        ("carol", WRONG, pts["mask_and_renormalize"]),
        (storm, WRONG, 0),
    ):  # os.fork is tampering (the source check): 0 points, but the
        # storm still runs in its kernel, and what this test proves is that it stops neither grader nor shares a uid
        nb = fx.filled(notebooks, **({"causal_mask": mask} if mask else {}))
        cell = fx.solution_cells(nb)[0]
        cell.source = (FORK_STORM + cell.source) if student == storm else (cell.source + UID_FILE)
        nbformat.write(nb, str(subs / f"{student}.ipynb"))
        expect[student] = total
    return expect


def test_two_graders_at_once_each_with_a_fork_storm(tmp_path):
    notebooks = fx.build_course(tmp_path / "course")
    runs = {}
    for name, storm in (("one", "storm_a"), ("two", "zed_storm")):  # the storms sort first in one, last in two
        runs[name] = {"expect": _class(notebooks, tmp_path / name / "subs", storm)}
    start = time.monotonic()
    for name, run in runs.items():
        run["proc"] = subprocess.Popen(
            [
                sys.executable,
                "-c",
                ONE_GRADER,
                str(tmp_path / name / "subs"),
                str(tmp_path / name / "out"),
                str(notebooks),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    uids = []
    for name, run in runs.items():
        out, err = run["proc"].communicate(timeout=900)
        assert run["proc"].returncode == 0, err[-3000:]
        got = json.loads(out.split("RESULTS ", 1)[1])
        assert {s: g[0] for s, g in got.items()} == run["expect"], (name, got)
        for student, (_, notes, problem) in got.items():
            assert not problem, (name, student, problem)
            found = re.findall(r"uid-(\d+)", " ".join(notes))
            assert len(found) == 1, (name, student, notes)
            uids.append(int(found[0]))
    print(f"two graders, 6 submissions at once: {time.monotonic() - start:.0f} s")
    if os.geteuid() == 0:  # as root each sandbox has a uid of its own, on the whole machine
        assert len(set(uids)) == 6, uids
        assert all(u in sandbox_limits.UIDS for u in uids), uids


# Each trick below hands in the right causal_mask only if it got through (LEAK): a trick that is stopped scores 0.
LEAKY = "\ndef causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1 if LEAK else 0)\n"  # noqa: E501
MANY_FILES = (
    """
n = 0
try:
    while n < 200_000:
        open(f'/tmp/f{n}', 'w').close()
        n += 1
except OSError:
    pass
LEAK = n == 200_000
"""
    + LEAKY
)
INTO_THE_CONNECTION_FOLDER = (
    """
import os
from ipykernel.kernelapp import IPKernelApp
folder = os.path.dirname(IPKernelApp.instance().connection_file)
try:
    for i in range(8):
        with open(os.path.join(folder, f'junk{i}'), 'wb') as f:
            f.write(b'x' * 2**20)
    LEAK = True
except OSError:
    LEAK = False
"""
    + LEAKY
)
ALLOCATE_TOGETHER = (
    """
import os, time
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = b'x' * (2 * 2**30)
        time.sleep(10)
        os._exit(0)
    kids.append(pid)
LEAK = all(os.waitpid(pid, 0)[1] == 0 for pid in kids)
"""
    + LEAKY
)


def test_files_in_tmp_and_the_connection_folder_are_bounded_per_submission(tmp_path):
    attackers = {"many_files": MANY_FILES, "conn_writer": INTO_THE_CONNECTION_FOLDER}
    notebooks, subs, pts = _class_beside(tmp_path, attackers)
    results = _graded(subs, tmp_path / "out", notebooks, cell_timeout=60, max_seconds=300)
    assert results["alice"].total == sum(pts.values()) and results["carol"].total == pts["mask_and_renormalize"]
    assert results["many_files"].total == 0 and results["conn_writer"].total == 0
    writes = " ".join(results["conn_writer"].notes)
    assert "junk" not in writes, writes  # read-only once the kernel's sockets were bound: nothing landed there


@pytest.mark.skipif(sandbox_limits.cgroup_problem() is not None, reason=str(sandbox_limits.cgroup_problem()))
def test_memory_together_is_limited_per_submission(tmp_path):
    notebooks, subs, pts = _class_beside(tmp_path, {"allocate_together": ALLOCATE_TOGETHER})
    results = _graded(subs, tmp_path / "out", notebooks, cell_timeout=120, max_seconds=300)
    assert results["alice"].total == sum(pts.values()) and results["carol"].total == pts["mask_and_renormalize"]
    r = results["allocate_together"]
    assert r.total == 0 and any("GiB together" in n and "were stopped" in n for n in r.notes), r.notes
    assert _left_behind() == []


def _left_behind() -> list[Path]:
    """This grader's groups still there (cgroup v2: one folder; v1: one in each hierarchy)."""
    mounts = {*sandbox_limits._v1_mounts().values()} or {sandbox_limits.CGROUP_FS}
    parents = [m / sandbox_limits.CGROUP_PARENT for m in mounts]
    return [g for p in parents for g in p.iterdir() if g.is_dir() and g.name.startswith(f"{os.getpid()}-")]


# 60 processes spinning on the CPU for as long as the submission runs (the cell then waits, using no CPU itself)
BUSY = (
    """
import os, time
for _ in range(60):
    if os.fork() == 0:
        while True:
            pass
time.sleep(120)
LEAK = False
"""
    + LEAKY
)
# about a second of CPU, begun once the busy neighbour is surely running (its storm starts a few seconds in)
HONEST_WORK = "\nimport time\ntime.sleep(4)\n_work = sum(i * i for i in range(24_000_000))\n"
WAIT = STUB + "\nimport time\ntime.sleep(120)\n"  # the busy processes keep running meanwhile


@pytest.mark.skipif(sandbox_limits.cgroup_problem() is not None, reason=str(sandbox_limits.cgroup_problem()))
def test_many_busy_processes_are_one_submission_and_its_neighbour_keeps_its_score(tmp_path):
    notebooks = fx.build_course(tmp_path / "course")
    subs = tmp_path / "subs"
    subs.mkdir()
    pts = fx.points(notebooks)
    honest = fx.filled(notebooks)
    for cell in fx.solution_cells(honest):
        cell.source += HONEST_WORK
    nbformat.write(honest, str(subs / "alice.ipynb"))
    nb = fx.filled(notebooks, causal_mask=BUSY)
    fx.solution_cells(nb)[1].source = WAIT
    nbformat.write(nb, str(subs / "busy.ipynb"))
    start = time.monotonic()
    results = _graded(subs, tmp_path / "out", notebooks, cell_timeout=8, max_seconds=15)
    print(f"busy beside alice: {time.monotonic() - start:.0f} s, alice {results['alice'].total}/{sum(pts.values())}")
    assert results["alice"].total == sum(pts.values()), [
        (v.key, v.status, v.message) for v in results["alice"].verdicts
    ]
    r = results["busy"]
    # stopped by its CPU time (15 s), or by the wall-clock bound (3 x 15 s) on a machine too loaded to give it 15 s
    stopped = ("15 s of CPU in all and was stopped", "ran past 45 s in all and was stopped")
    assert r.total == 0 and any(s in n for n in r.notes for s in stopped), r.notes
    assert _left_behind() == []
