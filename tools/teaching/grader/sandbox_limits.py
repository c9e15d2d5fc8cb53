"""Limits per submission that hold machine-wide (used by ``sandbox``, as root).

- **A uid of its own, unique on the machine.** Each sandbox leases a uid from ``UIDS`` by taking an exclusive
  ``flock`` on the file named after it in ``UID_LOCKS`` (a root-owned folder of mode 0700); the lease ends when
  the lock is let go, and a grader that dies lets go of its locks with its file descriptors. Two graders at once
  (an instructor grading while CI grades) therefore never share a uid, and ``RLIMIT_NPROC``, counted per uid
  over the whole machine, caps each submission alone.
- **A cgroup (v2) of its own**, where the machine offers the memory and pids controllers to root:
  ``memory.max`` counts everything the submission makes the kernel hold (its processes' memory together, page
  cache, the files in its tmpfs /tmp, their inodes and dentries, other kernel memory), swap is refused, an
  overrun kills the whole group at once (``memory.oom.group``), and ``pids.max`` caps its processes and threads
  together. The group is emptied (``cgroup.kill``) and removed when the sandbox ends.

``cgroup_problem()`` says in one sentence why there are no cgroups here (then the limits are per process only).
"""

from __future__ import annotations

import fcntl
import functools
import itertools
import os
import signal
import time
from pathlib import Path

UIDS = range(200_000, 300_000)  # no account needed; far above the uids of real users
UID_LOCKS = Path("/run/llm-lab-sandbox-uids")
CGROUP_FS = Path("/sys/fs/cgroup")
MOUNTS = Path("/proc/self/mounts")
CGROUP_PARENT = "llm-lab-grading"  # one folder for every grader's groups: <grader pid>-<n>
MEMORY_MAX = 2 * 2**30  # a notebook's kernel holds < 1 GiB; 2,000,000 empty files in /tmp alone hold ~2 GiB
CONTROLLERS = ("memory", "pids")


def _lock_folder() -> Path:
    UID_LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = UID_LOCKS.lstat()
    if not UID_LOCKS.is_dir() or UID_LOCKS.is_symlink() or st.st_uid != 0 or st.st_mode & 0o077:
        raise RuntimeError(
            f"{UID_LOCKS} must be a folder owned by root with mode 0700 (it holds the sandbox "
            "uids' locks); remove it and grade again"
        )
    return UID_LOCKS


class UidLease:
    """A uid that no other sandbox on this machine holds until ``release()``."""

    def __init__(self):
        folder = _lock_folder()
        for uid in UIDS:
            fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError(f"every sandbox uid ({UIDS.start}-{UIDS.stop - 1}) is in use on this machine")

    def release(self) -> None:
        """Let the uid go once none of its processes is left (a killed sandbox's take a moment to end)."""
        if self._fd is None:
            return
        deadline = time.monotonic() + 5
        while _has_processes(self.uid) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.close(self._fd)
        self._fd = None


def _has_processes(uid: int) -> bool:
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid:
                return True
        except OSError:
            pass
    return False


@functools.cache
def cgroup_problem() -> str | None:
    """``None`` when each sandbox can have a cgroup of its own here, else why not (one sentence)."""
    if os.geteuid() != 0:
        return "grading without root: no cgroup per submission"
    if not any(line.split()[1:3] == [str(CGROUP_FS), "cgroup2"] for line in _read(MOUNTS).splitlines()):
        return f"no cgroup v2 at {CGROUP_FS} (cgroup v1 or hybrid): no cgroup per submission"
    missing = [c for c in CONTROLLERS if c not in _read(CGROUP_FS / "cgroup.controllers").split()]
    if missing:
        return f"cgroup v2 at {CGROUP_FS} offers no {' and '.join(missing)} controller: no cgroup per submission"
    try:
        _parent()
    except OSError as exc:
        return (
            f"cannot delegate {' and '.join(CONTROLLERS)} to {CGROUP_FS / CGROUP_PARENT} "
            f"({exc.strerror or exc}): no cgroup per submission"
        )
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _enable(folder: Path) -> None:
    have = _read(folder / "cgroup.subtree_control").split()
    want = [f"+{c}" for c in CONTROLLERS if c not in have]
    if want:
        (folder / "cgroup.subtree_control").write_text(" ".join(want))


def _parent() -> Path:
    """The folder every sandbox's group lives in, with the controllers enabled for its children; groups left by
    graders that are gone are removed on the way."""
    _enable(CGROUP_FS)
    parent = CGROUP_FS / CGROUP_PARENT
    parent.mkdir(exist_ok=True)
    _enable(parent)
    for group in parent.iterdir():
        owner = group.name.split("-")[0]
        if group.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove(group)
    return parent


_serial = itertools.count()


class Cgroup:
    """One sandbox's cgroup: ``procs`` is the file a process writes its pid to, to join it."""

    def __init__(self, memory: int, pids: int):
        self.path = CGROUP_FS / CGROUP_PARENT / f"{os.getpid()}-{next(_serial)}"
        self.path.mkdir()
        try:
            (self.path / "memory.max").write_text(str(memory))
            (self.path / "pids.max").write_text(str(pids))
            for name, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
                if (self.path / name).exists():  # memory.swap.max is missing where the machine has no swap
                    (self.path / name).write_text(str(value))
        except BaseException:
            _remove(self.path)
            raise
        self.procs = self.path / "cgroup.procs"

    def events(self) -> dict[str, int]:
        """The group's counters: ``memory.events`` (``oom_kill``, ...) and ``pids.events`` (``max``)."""
        found = {}
        for name in ("memory.events", "pids.events"):
            for line in _read(self.path / name).splitlines():
                key, _, value = line.partition(" ")
                if value.strip().isdigit():
                    found[f"{name.split('.')[0]}.{key}"] = int(value)
        return found

    def remove(self) -> None:
        _remove(self.path)


_rmdir = os.rmdir  # a cgroup's folder goes with its interface files in it


def _remove(group: Path) -> None:
    """Kill what is left in ``group``, wait until it is empty, remove it (best effort: never raises)."""
    try:
        (group / "cgroup.kill").write_text("1")
    except OSError:  # a kernel before 5.14: one by one
        for pid in _read(group / "cgroup.procs").split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            _rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)
