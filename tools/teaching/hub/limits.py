"""Per-learner limits on the local hub: each user's server, and everything it starts, in a cgroup of the user's own.

The ecosystem's way on one machine is The Littlest JupyterHub's ``SystemdSpawner``: a systemd unit per user with
``MemoryMax`` (``c.Spawner.mem_limit``), ``CPUQuota`` (``c.Spawner.cpu_limit``) and ``TasksMax``. It needs systemd
as PID 1. Where systemd is not PID 1 (containers, VMs whose init is something else, and the machine this project is
tested on) there is no unit to put a server in, so ``CgroupSpawner`` does what systemd would: it is JupyterHub's
``LocalProcessSpawner`` (each server a process of its user) that puts the server into a cgroup of the user's own
before it runs, with the limits JupyterHub's own spawner settings name:

- ``c.Spawner.mem_limit`` (e.g. ``"2G"``): the memory of all the user's processes together (server, kernels,
  whatever they fork) and the page cache they bring in. An overrun starts the kernel's OOM killer **inside that
  group only**: it ends the group's largest process (a runaway kernel, which the server restarts; JupyterLab
  says "the kernel appears to have died"); no other user's process is a candidate. No swap.
- ``c.Spawner.cpu_limit`` (e.g. ``1.0``): at most that many cores' worth of CPU time (CFS bandwidth: a quota of
  ``cpu_limit`` x the period), even on an idle machine. Under contention every user's group weighs the same to the
  scheduler (cgroup v1 ``cpu.shares`` 1024, v2 ``cpu.weight`` 100) however many processes it runs: a learner who
  spins every core gets one learner's share, not one share per process.
- ``c.CgroupSpawner.pids_limit`` (default 512): processes and threads together (``pids.max``): a fork bomb stops
  at it, with ``fork()`` failing in that group only.

Groups are ``<cgroup fs>/llm-lab-hub/<user>`` in each of the memory, pids, cpu and cpuacct hierarchies on cgroup
v1 (a hybrid machine: this project's test machine) or one folder on cgroup v2 (memory.max, cpu.max, pids.max,
memory.swap.max = 0), made by the hub (root). When the server stops (the learner, the instructor, the idle culler)
whatever is left in the group (a kernel the server did not stop, a fork bomb's processes) is killed by PID, and
the group removed: its memory goes back to the machine. The cgroup code is the grading sandbox's
(tools/teaching/grader/sandbox_limits.py): the same mounts, the same removal.

Not bounded here: disk (a learner can fill their home: use quotas on /home), disk and network bandwidth, the GPU.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from tools.teaching.grader import sandbox_limits as sl

PARENT = "llm-lab-hub"
CPU_PERIOD_US = 100_000
PIDS_DEFAULT = 512


def problem() -> str | None:
    """Why users cannot have a cgroup each here, or None (the grading sandbox's test: root, a memory and a pids
    controller, and a folder that can be made under them)."""
    return sl.cgroup_problem()


def parse_bytes(text: str | int | None) -> int | None:
    """``"2G"`` -> 2 GiB, as JupyterHub's ``mem_limit`` reads it (K, M, G, T: powers of 1024); None stays None."""
    if text is None or isinstance(text, int):
        return text
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    s = str(text).strip().upper()
    if s[-1:] in units:
        return int(float(s[:-1]) * units[s[-1]])
    if not s.isdigit():
        raise ValueError(f"a memory limit is a number of bytes or one with K, M, G or T after it, not {text!r}")
    return int(s)


class UserGroup:
    """The cgroup (one per hierarchy on v1) of one hub user: made with the limits, joined by the server's process
    before it runs, read for what the limits did, removed (emptied by PID first) when the server stops."""

    def __init__(
        self,
        user: str,
        memory: int | None = None,
        cpu: float | None = None,
        pids: int | None = None,
        create: bool = True,
    ):
        if not user or "/" in user or user.startswith("."):
            raise ValueError(f"a hub user name without '/' and not starting with '.', not {user!r}")
        self.user = user
        self.version = 1 if sl._v1_mounts() else 2
        fs = sl.CGROUP_FS
        if self.version == 1:
            self.by_controller = {c: m / PARENT / user for c, m in sl._v1_mounts().items()}
        else:
            if create:
                sl._enable(fs)
                (fs / PARENT).mkdir(exist_ok=True)
                sl._enable(fs / PARENT)
            self.by_controller = {c: fs / PARENT / user for c in ("memory", "pids", "cpu", "cpuacct")}
        self.paths = list(dict.fromkeys(self.by_controller.values()))
        self.procs = [p / "cgroup.procs" for p in self.paths]
        if not create:  # the group of a running server, to read (``exists``, ``stats``)
            return
        self.remove()  # a group left by a hub that was killed
        try:
            for path in self.paths:
                path.mkdir(parents=True)
            self._limit(memory, cpu, pids)
        except BaseException:
            self.remove()
            raise

    def exists(self) -> bool:
        return any(p.is_dir() for p in self.paths)

    def _limit(self, memory, cpu, pids) -> None:
        mem, pid, cpug = self.by_controller["memory"], self.by_controller["pids"], self.by_controller.get("cpu")
        if self.version == 1:
            if memory:
                (mem / "memory.limit_in_bytes").write_text(str(memory))
                if (mem / "memory.memsw.limit_in_bytes").exists():  # memory and swap together: no swap either
                    (mem / "memory.memsw.limit_in_bytes").write_text(str(memory))
            if cpug is not None and (cpug / "cpu.shares").exists():
                (cpug / "cpu.shares").write_text("1024")
                if cpu:
                    (cpug / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                    (cpug / "cpu.cfs_quota_us").write_text(str(int(cpu * CPU_PERIOD_US)))
        else:
            if memory:
                (mem / "memory.max").write_text(str(memory))
                if (mem / "memory.swap.max").exists():
                    (mem / "memory.swap.max").write_text("0")
            if cpu and (mem / "cpu.max").exists():
                (mem / "cpu.max").write_text(f"{int(cpu * CPU_PERIOD_US)} {CPU_PERIOD_US}")
        (pid / "pids.max").write_text(str(pids) if pids else "max")

    def join(self, pid: int | None = None) -> None:
        """Move ``pid`` (default: the calling process; a preexec_fn runs in the child, still root) into the group."""
        for procs in self.procs:
            procs.write_text(str(pid or os.getpid()))

    def pids(self) -> list[int]:
        return sorted({int(p) for path in self.procs for p in sl._read(path).split()})

    def stats(self) -> dict:
        """What the limits did so far: OOM kills, forks refused at pids.max, CFS periods throttled, CPU seconds,
        memory now and at its peak (the group's, page cache included)."""
        out = {"pids": len(self.pids())}
        mem, pid, cpug = self.by_controller["memory"], self.by_controller["pids"], self.by_controller.get("cpu")
        kv = sl._read
        if self.version == 1:
            for line in kv(mem / "memory.oom_control").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    out["oom_kills"] = int(value)
            out["memory_mib"] = round(int(kv(mem / "memory.usage_in_bytes") or 0) / 2**20, 1)
            out["memory_peak_mib"] = round(int(kv(mem / "memory.max_usage_in_bytes") or 0) / 2**20, 1)
            acct = self.by_controller.get("cpuacct")
            usage = kv(acct / "cpuacct.usage").strip() if acct else ""
            out["cpu_s"] = round(int(usage) / 1e9, 1) if usage.isdigit() else None
        else:
            for line in kv(mem / "memory.events").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    out["oom_kills"] = int(value)
            out["memory_mib"] = round(int(kv(mem / "memory.current") or 0) / 2**20, 1)
            peak = kv(mem / "memory.peak").strip()
            out["memory_peak_mib"] = round(int(peak) / 2**20, 1) if peak.isdigit() else None
            for line in kv(mem / "cpu.stat").splitlines():
                if line.startswith("usage_usec "):
                    out["cpu_s"] = round(int(line.split()[1]) / 1e6, 1)
        for line in kv(pid / "pids.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max":
                out["forks_refused"] = int(value)
        if cpug is not None:
            for line in kv(cpug / "cpu.stat").splitlines():
                key, _, value = line.partition(" ")
                if key in ("nr_throttled", "throttled_time", "throttled_usec"):
                    out[key] = int(value)
        return out

    def remove(self) -> None:
        """Kill by PID whatever is left in the group (a fork bomb's processes too), then remove the group."""
        pids = self.by_controller["pids"] / "pids.max"
        if pids.exists():  # no new process from here on (a fork bomb would refill what is killed)
            try:
                pids.write_text("0")
            except OSError:
                pass
        for path in self.paths:
            if path.is_dir():
                for pid in sl._read(path / "cgroup.procs").split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except OSError:
                        pass
                sl._remove(path)


@contextlib.contextmanager
def server_log(spawner):
    """While ``spawner`` starts its server: the server's stdout and stderr appended to ``spawner.log_dir/<user>.log``
    (the folder made root's, 0700), after a line marking the start; the hub's own log without ``log_dir``."""
    if not spawner.log_dir:
        yield
        return
    folder, before = Path(spawner.log_dir), spawner.popen_kwargs
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (folder / f"{spawner.user.name}.log").open("ab") as log:
        log.write(f"---- the server starts {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n".encode())
        log.flush()
        spawner.popen_kwargs = {**before, "stdout": log, "stderr": subprocess.STDOUT}
        try:
            yield
        finally:  # the server holds its own copy of the file
            spawner.popen_kwargs = before


def spawner_class():
    """``CgroupSpawner``, made on first use (importing jupyterhub only inside the hub's process)."""
    from jupyterhub.spawner import LocalProcessSpawner
    from traitlets import Integer, Unicode

    class CgroupSpawner(LocalProcessSpawner):
        """LocalProcessSpawner whose servers each run in their user's cgroup (``UserGroup``), with
        ``mem_limit``, ``cpu_limit`` and ``pids_limit`` applied; without cgroups here it says why in the hub's
        log and starts the server without them."""

        pids_limit = Integer(PIDS_DEFAULT, help="processes and threads of one user's server together").tag(config=True)
        log_dir = Unicode("", help="each server's stdout and stderr: <log_dir>/<user>.log").tag(config=True)

        group: UserGroup | None = None

        async def start(self):
            why = problem()
            if why:
                self.log.warning("no per-user limits for %s: %s", self.user.name, why)
                self.group = None
            else:
                self.group = UserGroup(self.user.name, self.mem_limit, self.cpu_limit, self.pids_limit)
                self.log.info(
                    "%s's server in cgroup v%d %s: memory %s, cpu %s, pids %s",
                    self.user.name,
                    self.group.version,
                    self.group.paths[0],
                    self.mem_limit,
                    self.cpu_limit,
                    self.pids_limit,
                )
            with server_log(self):
                return await super().start()

        def make_preexec_fn(self, name):
            setuid = super().make_preexec_fn(name)
            group = self.group

            def preexec():
                if group is not None:
                    group.join()  # still root here: join first, then become the user
                setuid()

            return preexec

        async def stop(self, now=False):
            await super().stop(now=now)
            if self.group is not None:
                self.group.remove()
                self.group = None

        async def poll(self):
            status = await super().poll()
            if status is not None and self.group is not None:
                self.group.remove()  # the server died (its kernels and forks may not have)
                self.group = None
            return status

    return CgroupSpawner
