"""tools/teaching/grader/sandbox.py: what the grading sandbox binds and limits, and the one sentence when it cannot
run."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _course_fixture as fx
import pytest

from tools.teaching.grader import cli, sandbox, sandbox_limits


def test_without_bubblewrap_grading_stops_with_what_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = sandbox.available()
    assert "bubblewrap" in reason and "apt-get install bubblewrap" in reason and "--no-sandbox" in reason
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}")
    assert cli.main([str(tmp_path / "subs"), "--notebook", "04"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: sandboxed grading needs bubblewrap") and err.count("\n") == 1


def test_the_sandbox_hides_the_course_and_the_network():
    argv = sandbox.wrap(["python"], ["/tmp/somewhere"], uid=os.getuid())
    pairs = [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
    for flag in ("--unshare-net", "--unshare-pid", "--clearenv", "--die-with-parent", "--new-session"):
        assert flag in argv
    venv = sys.prefix + os.sep  # a venv inside the checkout (make setup's .venv) is bound, read-only, at /opt/site
    for source, _ in pairs:  # nothing else of the checkout is bound (llm_lab is a copy of the grader's own)
        inside = source == str(fx.ROOT) or source.startswith(str(fx.ROOT) + os.sep)
        assert not (inside and not source.startswith(venv)), source
    assert [b for b in pairs if b[0] == "/tmp/somewhere"] == [("/tmp/somewhere", "/tmp/somewhere")]
    assert f"--as={sandbox.MEMORY_BYTES}" in argv and any(a.startswith("--nproc=") for a in argv)


def test_python_and_the_course_are_seen_at_neutral_paths():
    argv = sandbox.wrap(["python"], [], uid=os.getuid())
    inside = [argv[i + 2] for i, a in enumerate(argv) if a == "--ro-bind"]
    home = str(Path.home())
    assert all(p.startswith(("/usr", "/etc/", "/opt/", "/course")) or p in sandbox.MASKED for p in inside), inside
    assert not any(home in a or str(fx.ROOT) in a for a in sandbox.kernel_argv()), sandbox.kernel_argv()
    assert sandbox.kernel_argv()[0].startswith(("/usr/", "/opt/python"))


def test_inside_the_sandbox(sandbox_required):
    notebooks, package = str(fx.ROOT / "notebooks"), "/course/llm_lab/__init__.py"
    probe = "\n".join(
        [
            "import os, socket, sys, llm_lab",
            f"print(os.path.exists({notebooks!r}), len([p for p in os.listdir('/proc') if p.isdigit()]) <= 3,"
            " os.environ.get('HOME'))",
            "try:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\nexcept OSError:\n    print('no-net')",
            "open('/tmp/x', 'w').write('x')",
            f"try:\n    open({package!r}, 'a')\nexcept OSError:\n    print('read-only')",
            "print(llm_lab.__file__, sys.executable.startswith(('/usr/', '/opt/python')))",
            "print('MOUNTS', open('/proc/self/mountinfo').read().replace(chr(10), ' '))",
            "print('SEEN', sys.path, sorted(os.environ.items()))",
        ]
    )
    with sandbox.Box() as box:
        out = subprocess.run(box.wrap(sandbox.python_argv(probe), []), capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert " ".join(lines[:3]).split() == ["False", "True", "/tmp", "no-net", "read-only"], out.stderr
    assert lines[3] == "/course/llm_lab/__init__.py True", lines[3]
    mounts, seen = lines[4], lines[5]
    # the checkout is not even named, but for the host path of a venv inside it, which mountinfo shows
    assert str(fx.ROOT) not in mounts.replace(sys.prefix, "<venv>") and "notebooks" not in mounts, mounts
    assert str(Path.home()) not in seen and str(fx.ROOT) not in seen, seen


def test_help_works_in_the_sandbox_as_at_home(sandbox_required):
    """``python -I -S`` has no ``help``; the sandbox's Python gets it from ``site`` (a learner's ``help(...)``
    cell prints the documentation, as at home)."""
    probe = "import contextlib, io\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n    help(len)\n"
    probe += "print('help' in dir(__builtins__), 'Return the number of items' in buf.getvalue())"
    with sandbox.Box() as box:
        out = subprocess.run(box.wrap(sandbox.python_argv(probe), []), capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


def _lease_in_a_new_process() -> int:
    code = "from tools.teaching.grader import sandbox\nprint(sandbox.Box().uid)"
    return int(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=fx.ROOT, timeout=60
        ).stdout
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are leased as root only (without root: your own uid)")
def test_two_graders_never_hold_the_same_uid():
    with sandbox.Box() as first, sandbox.Box() as second:  # one grader, two sandboxes at once
        other = _lease_in_a_new_process()  # another grader on the machine, meanwhile
        assert len({first.uid, second.uid, other}) == 3, (first.uid, second.uid, other)
    with sandbox.Box() as again:  # let go: the lowest uid is free again
        assert again.uid == min(first.uid, second.uid)


def _fake_cgroup_v2(tmp_path, monkeypatch, controllers="cpu memory pids"):
    fs = tmp_path / "cgroup"
    fs.mkdir()
    (fs / "cgroup.controllers").write_text(controllers + "\n")
    (fs / "cgroup.subtree_control").write_text("\n")
    (tmp_path / "mounts").write_text(f"proc /proc proc rw 0 0\ncgroup2 {fs} cgroup2 rw,nosuid 0 0\n")
    monkeypatch.setattr(sandbox_limits, "CGROUP_FS", fs)
    monkeypatch.setattr(sandbox_limits, "MOUNTS", tmp_path / "mounts")
    monkeypatch.setattr(sandbox_limits, "_rmdir", lambda p: shutil.rmtree(p))  # a real group has no files to delete
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox_limits, "UidLease", _FakeLease)
    sandbox_limits.cgroup_problem.cache_clear()
    sandbox_limits._v1_problem.cache_clear()
    return fs


class _FakeLease:
    uid = 201_234

    def release(self):
        pass


def test_with_cgroup_v2_each_sandbox_has_a_group_of_its_own(tmp_path, monkeypatch):
    fs = _fake_cgroup_v2(tmp_path, monkeypatch)
    try:
        assert sandbox_limits.cgroup_problem() is None
        assert "cgroup (v2) of its own" in sandbox.limits() and "2 GiB" in sandbox.limits()
        assert (fs / "llm-lab-grading" / "cgroup.subtree_control").read_text() == "+cpu"  # after +memory +pids
        with sandbox.Box() as box:
            group = box.cgroup.path
            assert (group / "memory.max").read_text() == str(2 * 2**30)
            assert (group / "pids.max").read_text() == str(sandbox.PIDS)
            argv = box.wrap(["true"], [])
            launch = argv[: argv.index("bwrap")]
            assert launch[-2:] == [str(group / "cgroup.procs"), "--"] and f"--reuid={_FakeLease.uid}" in argv
            joined = subprocess.run([*launch, "sh", "-c", "echo $$"], capture_output=True, text=True, timeout=30)
            assert (group / "cgroup.procs").read_text().strip() == joined.stdout.strip()  # the same process
        assert not group.exists() and (fs / "llm-lab-grading").is_dir()  # the group is removed afterwards
    finally:
        sandbox_limits.cgroup_problem.cache_clear()
        sandbox_limits._v1_problem.cache_clear()


@pytest.mark.parametrize("case", ["v1", "no pids"])
def test_without_cgroup_v2_the_limits_are_per_process_and_say_so(tmp_path, monkeypatch, case):
    fs = _fake_cgroup_v2(tmp_path, monkeypatch, controllers="cpu memory")
    if case == "v1":
        (tmp_path / "mounts").write_text(f"cgroup {fs}/memory cgroup rw,memory 0 0\n")
    try:
        problem = sandbox_limits.cgroup_problem()
        assert (
            problem
            == {
                "v1": f"no cgroup v2 at {fs} and no cgroup v1 pids hierarchy: no cgroup per submission",
                "no pids": f"cgroup v2 at {fs} offers no pids controller: no cgroup per submission",
            }[case]
        )
        assert sandbox.limits().startswith(problem + ": limits per process only (6 GiB address space each")
        with sandbox.Box() as box:
            argv = box.wrap(["true"], [])
            assert box.cgroup is None and argv[argv.index("bwrap") - 1] == "--" and "cgroup.procs" not in " ".join(argv)
        assert not (fs / "llm-lab-grading").exists()
    finally:
        sandbox_limits.cgroup_problem.cache_clear()
        sandbox_limits._v1_problem.cache_clear()


def test_once_sealed_the_connection_folder_is_read_only_and_tmp_holds_few_files(sandbox_required, tmp_path):
    conn = tmp_path / "conn"
    conn.mkdir()
    probe = "\n".join(
        [
            "import os, time",
            "time.sleep(6)",
            f"try:\n    open({str(conn / 'after')!r}, 'w')\nexcept OSError as e:\n    print('conn', e.errno)",
            "n = 0",
            "try:\n    while n < 50_000:\n        open(f'/tmp/f{n}', 'w').close()\n        n += 1\n"
            "except OSError as e:\n    print('files', n, e.errno)",
        ]
    )
    with sandbox.Box() as box:
        sandbox.prepare(conn, box.uid)
        proc = subprocess.Popen(box.wrap(sandbox.python_argv(probe), [str(conn)]), stdout=subprocess.PIPE, text=True)
        for _ in range(100):
            pid = sandbox.kernel_pid(proc.pid)
            if pid and os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino:
                break
            time.sleep(0.05)
        sandbox.seal(conn, proc.pid)
        out, _ = proc.communicate(timeout=60)
    assert out.split("\n")[0] == f"conn {errno.EROFS}", out
    made = int(out.split()[3])  # the cap counts the folder itself and the tools' caches too
    assert sandbox.TMP_INODES - 50 < made < sandbox.TMP_INODES and out.split()[4] == str(errno.ENOSPC), out
    assert not (conn / "after").exists()
