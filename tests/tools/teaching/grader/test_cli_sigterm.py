"""make grade stopped by SIGTERM (a scheduler's timeout, ``kill``, a CI job cancelled) or SIGHUP (its terminal or
SSH session closed): the grader ends as after an error, so its temporary folders are removed and the sandboxes it
started are stopped; under ``nohup`` (SIGHUP ignored) it goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[4]
STARTED = 600  # seconds to wait for the submission's kernel to start (12 s alone; make unit runs it alone)
ENDED = 120  # seconds the grader has to end after SIGTERM


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (read from /proc: the sandbox's processes have host ids there too)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
@pytest.mark.alone
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_removes_the_temporary_folders_and_stops_the_kernels(tmp_path, sandbox_required, signum):
    subs, tmp = tmp_path / "submissions", tmp_path / "tmp"
    subs.mkdir()
    tmp.mkdir()
    nb = nbformat.read(str(next((ROOT / "notebooks" / "en").glob("01_*.ipynb"))), as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell("import time\n\ntime.sleep(120)\n"))  # the kernel is busy
    nbformat.write(nb, str(subs / "alice.ipynb"))
    env = {**os.environ, "TMPDIR": str(tmp), "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.teaching.grader", str(subs), "--notebook", "01", "--out", str(tmp_path / "out")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the test can always end what it started
    )
    try:
        deadline, kernel = time.monotonic() + STARTED, set()
        while time.monotonic() < deadline and proc.poll() is None:
            below = descendants(proc.pid)
            kernel = {p for p in below if "ipykernel" in cmdline(p) or "bwrap" in cmdline(p)}
            if kernel and os.listdir(tmp):
                break
            time.sleep(0.5)
        if not kernel:  # say why: the grader's own words if it ended first
            ended = proc.poll() is not None
            said = proc.stdout.read().decode(errors="replace")[-2000:] if ended else "(still running)"
            raise AssertionError(f"the submission's kernel did not start (grader ended: {ended}): {said}")
        time.sleep(2)
        started = descendants(proc.pid)
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=ENDED)
        end = time.monotonic() + 15  # a process killed may take a moment to be gone
        while time.monotonic() < end and [p for p in started if alive(p)]:
            time.sleep(0.5)
        said = out.decode(errors="replace")[-2000:]
        assert sorted(os.listdir(tmp)) == [], said  # TemporaryDirectory's cleanup ran
        left = {p: cmdline(p) for p in started if alive(p)}
        assert left == {}, left
        assert proc.returncode == 128 + signum, said  # ended as SystemExit, not by the signal
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_nohup_keeps_sighup_ignored():
    """Under ``nohup`` SIGHUP is ignored before the grader starts: the grader keeps it so, and goes on."""
    code = (
        "import signal\nfrom tools.teaching.grader import stopping\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\nstopping.on_sigterm()\n"
        "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN,\n"
        "      signal.getsignal(signal.SIGTERM) is stopping._terminated)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "True"], out.stderr
