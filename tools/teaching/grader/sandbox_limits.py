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
  together; with the cpu controller (where offered) each group weighs the same to the scheduler however many
  processes it runs. The group is emptied (``cgroup.kill``) and removed when the sandbox ends.
- **Else a cgroup (v1) of its own in each of the memory, pids and cpu hierarchies** (a hybrid machine: the
  container runtimes' way there): ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``: no swap) for
  all its processes and their /tmp files together, ``pids.max``, ``cpu.shares`` (one share per submission, not
  per process); v1 has no ``memory.oom.group``: the grader stops the whole submission once the group's OOM
  killer has acted (``memory.oom_control``'s ``oom_kill``). The groups are emptied and removed when it ends.
- Either way ``cpu_seconds()`` is the CPU time of all of the submission's processes together (``cpu.stat``,
  ``cpuacct.usage``): what its time limits judge.

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

WALL_FACTOR = 3  # where CPU time is judged: a limit of T s of CPU is also one of WALL_FACTOR * T s of wall time

UIDS = range(200_000, 300_000)  # no account needed; far above the uids of real users
UID_LOCKS = Path("/run/llm-lab-sandbox-uids")
CGROUP_FS = Path("/sys/fs/cgroup")
MOUNTS = Path("/proc/self/mounts")
CGROUP_PARENT = "llm-lab-grading"  # one folder for every grader's groups: <grader pid>-<n>
# IPython's prefilter runs a line the grader reads as Python (``run / tmp / x.py``, ``ls``, a Macro's or an
# IPyAutocall's name) as a magic, a shell alias or code held in an object; the grader's reading has no prefilter,
# so the graded kernel turns each of them off (``sandbox.kernel_argv``): a line runs as the Python it reads as
LITERAL_SHELL = (
    "--InteractiveShell.automagic=False",
    "--InteractiveShell.autocall=0",
    "--AliasManager.default_aliases=[]",
    "--MacroChecker.enabled=False",
    "--IPyAutocallChecker.enabled=False",
)
MEMORY_MAX = 2 * 2**30  # a notebook's kernel holds < 1 GiB; 2,000,000 empty files in /tmp alone hold ~2 GiB
CONTROLLERS = ("memory", "pids")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")  # cpu and cpuacct: where mounted (often together)


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
    """``None`` when each sandbox can have a cgroup of its own here (``cgroup_version()``), else why not."""
    if os.geteuid() != 0:
        return "grading without root: no cgroup per submission"
    if not any(line.split()[1:3] == [str(CGROUP_FS), "cgroup2"] for line in _read(MOUNTS).splitlines()):
        return _v1_problem()
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


def cgroup_version() -> int | None:
    """2 or 1: the kind of group each sandbox gets here; ``None``: none (``cgroup_problem()`` says why)."""
    if cgroup_problem() is not None:
        return None
    return 1 if _v1_mounts() else 2


def _v1_mounts() -> dict[str, Path]:
    """The cgroup v1 hierarchies under ``CGROUP_FS``, by controller (none where ``CGROUP_FS`` is cgroup v2)."""
    found = {}
    for line in _read(MOUNTS).splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup" and fields[1].startswith(f"{CGROUP_FS}/"):
            for option in fields[3].split(","):
                if option in V1_CONTROLLERS:
                    found.setdefault(option, Path(fields[1]))
    return found


@functools.cache
def _v1_problem() -> str | None:
    mounts = _v1_mounts()
    missing = [c for c in ("memory", "pids") if c not in mounts]
    if missing:
        return (
            f"no cgroup v2 at {CGROUP_FS} and no cgroup v1 {' or '.join(missing)} hierarchy: no cgroup per submission"
        )
    try:
        for mount in {*mounts.values()}:
            (mount / CGROUP_PARENT).mkdir(exist_ok=True)
            _clean(mount / CGROUP_PARENT)
    except OSError as exc:
        return f"cannot make groups under {CGROUP_FS} (cgroup v1: {exc.strerror or exc}): no cgroup per submission"
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
    if "cpu" not in have and "cpu" in _read(CGROUP_FS / "cgroup.controllers").split():
        try:  # the scheduler's weight per group: where it can be had (a real-time process somewhere refuses it)
            (folder / "cgroup.subtree_control").write_text("+cpu")
        except OSError:
            pass


def _parent() -> Path:
    """The folder every sandbox's group lives in, with the controllers enabled for its children; groups left by
    graders that are gone are removed on the way."""
    _enable(CGROUP_FS)
    parent = CGROUP_FS / CGROUP_PARENT
    parent.mkdir(exist_ok=True)
    _enable(parent)
    _clean(parent)
    return parent


def _clean(parent: Path) -> None:
    """Remove the groups left by graders that are gone."""
    for group in parent.iterdir():
        owner = group.name.split("-")[0]
        if group.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove(group)


_serial = itertools.count()


def cgroup(memory: int, pids: int):
    """A new group of the kind this machine has (``Cgroup`` on cgroup v2, ``CgroupV1`` on v1)."""
    return CgroupV1(memory, pids) if cgroup_version() == 1 else Cgroup(memory, pids)


class Cgroup:
    """One sandbox's cgroup (v2): ``procs`` are the files a process writes its pid to, to join it."""

    version = 2

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
        self.procs = [self.path / "cgroup.procs"]

    def cpu_seconds(self) -> float:
        """The CPU time its processes have used together (those gone included)."""
        for line in _read(self.path / "cpu.stat").splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
        return 0.0

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
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            (group / "cgroup.kill").write_text("1")
        except OSError:  # cgroup v1, or a kernel before 5.14: one by one, until none is left
            for pid in _read(group / "cgroup.procs").split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        try:
            _rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


class CgroupV1:
    """One sandbox's groups on cgroup v1: one in each hierarchy (memory, pids, cpu, cpuacct), the same name."""

    version = 1

    def __init__(self, memory: int, pids: int):
        name = f"{os.getpid()}-{next(_serial)}"
        self.by_controller = {c: m / CGROUP_PARENT / name for c, m in _v1_mounts().items()}
        self.paths = list(dict.fromkeys(self.by_controller.values()))
        try:
            for path in self.paths:
                path.mkdir()
            mem = self.by_controller["memory"]
            (mem / "memory.limit_in_bytes").write_text(str(memory))
            if (mem / "memory.memsw.limit_in_bytes").exists():  # memory and swap together: no swap either
                (mem / "memory.memsw.limit_in_bytes").write_text(str(memory))
            (self.by_controller["pids"] / "pids.max").write_text(str(pids))
            if "cpu" in self.by_controller:
                (self.by_controller["cpu"] / "cpu.shares").write_text("1024")  # one submission: one process's
        except BaseException:
            self.remove()
            raise
        self.procs = [p / "cgroup.procs" for p in self.paths]

    def cpu_seconds(self) -> float:
        usage = _read(self.by_controller["cpuacct"] / "cpuacct.usage") if "cpuacct" in self.by_controller else ""
        return int(usage) / 1e9 if usage.strip().isdigit() else 0.0

    def events(self) -> dict[str, int]:
        """``memory.oom_kill`` (the group's OOM killer has ended a process), ``pids.max``, as on cgroup v2."""
        found = {}
        for line in _read(self.by_controller["memory"] / "memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                found["memory.oom_kill"] = int(value)
        for line in _read(self.by_controller["pids"] / "pids.events").splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                found[f"pids.{key}"] = int(value)
        return found

    def remove(self) -> None:
        for path in self.paths:
            _remove(path)
