"""The sandbox a submission's kernel runs in while it is graded: Debian's bubblewrap (``bwrap``), not a home-made one.

What the graded code gets (``Box.wrap``):

- **no network**: a network namespace of its own with only a loopback nobody listens on;
- **its own process tree**: a PID namespace (it sees and can signal only its own processes; the grader, the
  other submissions and the machine's other processes are invisible); when its kernel ends, every process it
  started ends too (the namespace's init dies and the kernel kills the rest);
- **a read-only view of what the kernel needs, nothing else, at neutral paths**: ``/usr`` (system libraries,
  fonts), Python's installation at ``/opt/python``, each site-packages folder at ``/opt/site/N`` (an ``llm_lab``
  installed there hidden under an empty tmpfs) and, at ``/course``, the sealed ``llm_lab`` for the assigned
  notebooks (``sealing``: none of their answers, nothing of the later notebooks, none of the checkers, no
  bytecode) and its data; NOT the course checkout (its notebooks hold the answers),
  the other submissions, the gradebook or any home folder, and no path inside names them (the instructor's
  user name, a pyenv under a home folder). ``/proc`` is the sandbox's own, the environment is cleared (no
  instructor variables, tokens or other kernels' connection files);
- **a private writable /tmp** (a tmpfs of ``TMP_BYTES``, the kernel's home and working folder, gone afterwards),
  plus the one folder that holds its connection file and sockets;
- **limits**: as root (CI, a course server) the kernel runs as an unprivileged uid of its own, unique on the
  machine (``Box``; ``sandbox_limits``), with no capabilities, so ``RLIMIT_NPROC`` caps its
  processes (a fork storm stops at ``NPROC`` and cannot starve the other submissions' kernels, nor another
  grader's); where cgroup v2 offers the memory and pids controllers, each sandbox also gets a cgroup of its own
  (``MEMORY_MAX`` for all its processes, its /tmp files and their kernel memory together; ``PIDS``), removed
  afterwards. Every process may map at most ``MEMORY_BYTES`` (an over-limit allocation raises
  ``MemoryError``/``RuntimeError`` in the kernel); files it writes are capped at ``FILE_BYTES`` each; wall time
  is the grader's (it kills the sandbox). ``limits()`` says in one line which of these hold here.

Without root, bubblewrap runs unprivileged in a user namespace; the kernel keeps the instructor's uid inside
the namespaces (it still sees none of the instructor's files), ``RLIMIT_NPROC`` counts all of that user's
processes, so the cap is set to the current count plus ``NPROC``, and there is no cgroup: memory is capped per
process only (docs/instructors.md says what that leaves open).

``available()`` says, in one sentence, what to install when the sandbox cannot run here.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from tools.teaching.grader import sandbox_limits, sandbox_seccomp, sealing

NPROC = 64
MEMORY_BYTES = 6 * 2**30  # address space per process: torch maps ~1.5 GiB at import; a notebook needs < 2 GiB
MEMORY_MAX = sandbox_limits.MEMORY_MAX  # all of one sandbox together, where it has a cgroup
LITERAL_SHELL = sandbox_limits.LITERAL_SHELL
PIDS = NPROC + 8  # processes and threads of one sandbox, where it has a cgroup (bwrap's own two included)
FILE_BYTES = 64 * 2**20
TMP_BYTES = 256 * 2**20
SHM_BYTES = 64 * 2**20  # a private /dev/shm (multiprocessing's semaphores), gone afterwards
TMP_INODES = 10_000  # files and folders in /tmp: a notebook's caches hold a few hundred
MASKED = ("/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug")  # Docker's, that name others
SYSTEM = ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts")
PYTHON, SITE, COURSE = "/opt/python", "/opt/site", "/course"  # where the sandbox sees Python, packages, llm_lab


def _inside(path: str, base: str, inside: str) -> str | None:
    return inside + path[len(base) :] if path == base or path.startswith(base + os.sep) else None


def _assigned(notebooks) -> tuple[str, ...]:
    """The assigned notebooks as a sorted tuple; none named: every notebook with exercises (the strictest seal)."""
    if not notebooks:
        from llm_lab.exercises import REGISTRY

        notebooks = {ex.notebook for ex in REGISTRY.values()}
    return tuple(sorted(set(notebooks)))


def _layout(notebooks=None) -> tuple[list[tuple[str, str]], str, list[str], list[str]]:
    """(binds as (host folder, path inside), the Python executable inside, site folders inside in sys.path order,
    paths inside to hide under an empty tmpfs: an ``llm_lab`` installed in a site folder). A Python under /usr
    stays where it is (it is bound with /usr); one elsewhere (a pyenv in a home folder) is bound at ``PYTHON`` and
    found through ``LD_LIBRARY_PATH``. ``/course`` holds the sealed copy for ``notebooks``."""
    base = os.path.realpath(sys.base_prefix)
    python_at = base if base.startswith("/usr/") else PYTHON
    binds = [] if python_at == base else [(base, PYTHON)]
    exe = os.path.realpath(sys.executable)
    exe_inside = _inside(exe, base, python_at)
    if exe_inside is None:  # an interpreter outside its own prefix: its folder alone
        binds.append((os.path.dirname(exe), PYTHON + "-bin"))
        exe_inside = f"{PYTHON}-bin/{os.path.basename(exe)}"
    sites: list[str] = []
    hidden: list[str] = []
    for p in dict.fromkeys(os.path.realpath(p) for p in sys.path if p and "site-packages" in p and os.path.isdir(p)):
        inside = _inside(p, base, python_at)
        if inside is None:
            inside = f"{SITE}/{len(sites)}"
            binds.append((p, inside))
        sites.append(inside)
        if os.path.isdir(os.path.join(p, "llm_lab")):  # a wheel install: the full package, answers and all
            hidden.append(f"{inside}/llm_lab")
    binds.append((str(_course_copy(_assigned(notebooks))), COURSE))
    return binds, exe_inside, sites, hidden


def _course_copy(notebooks: tuple[str, ...]) -> Path:
    """The sealed copy of ``llm_lab`` and its data for ``notebooks`` in a folder of this grader's own (removed when
    it exits; ``sealing.sealed_copy``): bound as ``COURSE``, so that not even the sandbox's mount table names the
    checkout (or the user it is under)."""
    return sealing.sealed_copy(notebooks)


def read_only_paths(notebooks=None) -> list[str]:
    """What ``wrap`` binds read-only besides /usr and a few /etc files, as the sandbox sees it."""
    return [inside for _, inside in _layout(notebooks)[0]]


def python_argv(code: str, notebooks=None) -> list[str]:
    """The sandbox's Python running ``code``: isolated (``-I -S``), with the sealed ``llm_lab`` for ``notebooks``
    first on its path, then the grader's site-packages folders (their ``.pth`` files read), and ``help`` as
    ``site`` gives it (a learner's ``help(torch.tril)`` runs as it does at home)."""
    _, exe, sites, _ = _layout(notebooks)
    boot = f"import site, sys\nsys.path.insert(0, {COURSE!r})\nfor p in {sites!r}: site.addsitedir(p)\n"
    boot += "site.sethelper()\n"
    return [exe, "-I", "-S", "-c", boot + code]


def kernel_argv(sandboxed: bool = True, notebooks=None) -> list[str]:
    """The kernel command (``{connection_file}`` filled in by jupyter_client) for a kernelspec: the sandbox's
    Python at its neutral paths, with the sealed ``llm_lab`` for ``notebooks``, or (``sandboxed=False``,
    ``--no-sandbox``) the grader's own, with the whole package."""
    if not sandboxed:
        return [sys.executable, "-I", "-m", "ipykernel_launcher", "-f", "{connection_file}", *LITERAL_SHELL]
    return [
        *python_argv(
            "import runpy\nrunpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)", notebooks
        ),
        "-f",
        "{connection_file}",
        *LITERAL_SHELL,
    ]


def available() -> str | None:
    """``None`` when sandboxed grading can run here, else one sentence naming what to install or allow."""
    if not sys.platform.startswith("linux"):
        return (
            f"sandboxed grading needs Linux with bubblewrap (this is {sys.platform}); grade on a Linux machine "
            "or pass --no-sandbox (then every report says the code ran unsandboxed, with your rights)"
        )
    if shutil.which("bwrap") is None:
        return (
            "sandboxed grading needs bubblewrap: install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`, "
            "Fedora: `sudo dnf install bubblewrap`), or pass --no-sandbox to run the submissions unsandboxed"
        )
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "sandboxed grading as root needs setpriv (util-linux): `apt-get install util-linux`"
    if shutil.which("prlimit") is None:
        return "sandboxed grading needs prlimit (util-linux): `apt-get install util-linux`"
    if sandbox_seccomp.program() is None:
        return (
            f"sandboxed grading has a seccomp filter for x86_64 and aarch64 only (this is {platform.machine()}); "
            "grade on one of those, or pass --no-sandbox"
        )
    with Box() as box:
        probe = subprocess.run(box.wrap(["true"], []), capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return (
            "bubblewrap is installed but cannot create a sandbox here "
            f"({' '.join(probe.stderr.split())[:200] or 'exit ' + str(probe.returncode)}); on Ubuntu 24.04+ "
            "allow unprivileged user namespaces for bwrap (AppArmor), or grade as root"
        )
    return None


def limits() -> str:
    """One line: the limits every submission gets here (what the grader prints when it starts)."""
    problem = sandbox_limits.cgroup_problem()
    if problem is None:
        return (
            f"each in a cgroup (v{sandbox_limits.cgroup_version()}) of its own: {MEMORY_MAX / 2**30:g} GiB of "
            f"memory in all (its /tmp files and kernel memory included), {PIDS} processes, one CPU share, its "
            "CPU time judged, and a uid of its own"
        )
    per_uid = "of its own uid" if os.geteuid() == 0 else "of yours, above those running now"
    return (
        f"{problem}: limits per process only ({MEMORY_BYTES / 2**30:g} GiB address space each, "
        f"{NPROC} processes {per_uid}, /tmp {TMP_BYTES // 2**20} MiB)"
    )


def _dirs_to(path: str) -> list[str]:
    """``--dir`` for every parent of ``path`` with mode 0755 (bwrap creates missing parents 0700, which an
    unprivileged kernel cannot cross)."""
    args, parts = [], Path(path).parts[1:-1]
    for i in range(len(parts)):
        args += ["--perms", "0755", "--dir", "/" + "/".join(parts[: i + 1])]
    return args


class Box:
    """What one sandbox holds on the machine while it runs: as root a uid no other sandbox on the machine has
    (whichever grader started it), and a cgroup of its own where cgroup v2 allows; ``close()`` (or leaving the
    ``with`` block) removes the cgroup with anything left in it and lets the uid go."""

    def __init__(self):
        self._lease = sandbox_limits.UidLease() if os.geteuid() == 0 else None
        self.uid = self._lease.uid if self._lease else os.getuid()
        self.cgroup = None
        try:
            if sandbox_limits.cgroup_problem() is None:
                self.cgroup = sandbox_limits.cgroup(MEMORY_MAX, PIDS)
        except BaseException:
            self.close()
            raise

    def wrap(
        self, argv: list[str], writable: list[str], env: dict[str, str] | None = None, notebooks=None
    ) -> list[str]:
        """``wrap`` with this box's uid and cgroup: the first process joins the cgroup, then becomes bwrap."""
        join = self.cgroup.procs if self.cgroup else []
        return wrap(argv, writable, env, uid=self.uid, join=join, notebooks=notebooks)

    def close(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self._lease is not None:
            self._lease.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def wrap(
    argv: list[str],
    writable: list[str],
    env: dict[str, str] | None = None,
    uid: int | None = None,
    join: tuple[Path, ...] | list[Path] = (),
    notebooks=None,
) -> list[str]:
    """The command that runs ``argv`` in the sandbox; ``writable`` folders are bound read-write. As root the code
    runs as ``uid`` (a ``Box``'s, which keeps it unique on the machine), with no capabilities. The launcher
    (``_launcher``) first joins the cgroups whose process files are ``join``, then becomes bwrap. ``/course``
    holds the sealed ``llm_lab`` for the assigned ``notebooks`` (none named: sealed for every notebook); pass
    the same ``notebooks`` to ``python_argv``/``kernel_argv``."""
    root = os.geteuid() == 0
    if root and uid is None:
        raise ValueError("as root, wrap() needs the uid of a Box (sandbox.Box().wrap(...)): a uid of its own")
    binds, exe, _, hidden = _layout(notebooks)
    return [
        *_launcher(join),
        *_namespaces(root),
        *_filesystem(binds, writable, hidden),
        *_environment(binds, env, exe),
        "--",
        *_limits(uid if root else None),
        *argv,
    ]


SECCOMP_FD = 3  # where the launcher hands bwrap the filter


def _launcher(join) -> list[str]:
    """The grader's Python, before bwrap: it joins the cgroups (their process files ``join``), a fresh session
    keyring of its own (not the grader's), and hands bwrap the seccomp filter on ``SECCOMP_FD``."""
    program = sandbox_seccomp.program()
    if program is None:
        raise RuntimeError(available() or "no seccomp filter for this machine")
    keyctl = sandbox_seccomp.DENIED["keyctl"][sandbox_seccomp.ARCHES[platform.machine()][0]]
    return [sys.executable, "-I", "-S", "-c", _LAUNCH, str(keyctl), program.hex(), *map(str, join), "--"]


# joins each cgroup, then a new anonymous session keyring (KEYCTL_JOIN_SESSION_KEYRING with no name), then execs
# bwrap with the filter on SECCOMP_FD (a pipe: nothing on disk)
_LAUNCH = f"""
import ctypes, os, sys
end = sys.argv.index("--")
keyctl, program, *joins = sys.argv[1:end]
for procs in joins:
    with open(procs, "w") as f:
        f.write(str(os.getpid()))
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(ctypes.c_long(int(keyctl)), ctypes.c_long(1), None) < 0:
    sys.exit("the sandbox's session keyring: " + os.strerror(ctypes.get_errno()))
r, w = os.pipe()
os.write(w, bytes.fromhex(program))
os.close(w)
if r != {SECCOMP_FD}:
    os.dup2(r, {SECCOMP_FD})
    os.close(r)
os.set_inheritable({SECCOMP_FD}, True)
os.execvp(sys.argv[end + 1], sys.argv[end + 1 :])
"""


def _namespaces(root: bool) -> list[str]:
    """bwrap and the namespaces it makes: processes, network, IPC, host name, cgroups; a user namespace unless
    running as root; the seccomp filter (``sandbox_seccomp``), applied once its mounts are made."""
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    cmd += ["--seccomp", str(SECCOMP_FD)]
    cmd += ["--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    return cmd if root else [*cmd, "--unshare-user", "--disable-userns"]


def _filesystem(binds: list[tuple[str, str]], writable: list[str], hidden: list[str] = ()) -> list[str]:
    """What the sandbox sees: the system's folders and the layout's binds read-only (the ``hidden`` paths in them
    covered by an empty read-only tmpfs), a private /tmp, its own /proc and /dev, the ``writable`` folders
    read-write."""
    cmd = []
    for target, link in (("usr/lib", "/lib"), ("usr/lib64", "/lib64"), ("usr/bin", "/bin"), ("usr/sbin", "/sbin")):
        cmd += ["--symlink", target, link]
    # the private /tmp first: binds below it (the connection folder is under the grader's /tmp) come after
    cmd += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for path in SYSTEM:
        if os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    for host, inside in binds:
        cmd += [*_dirs_to(inside), "--ro-bind", host, inside]
    for path in hidden:  # an installed llm_lab: only the sealed copy at COURSE may be imported
        cmd += ["--perms", "0555", "--size", "4096", "--tmpfs", path, "--remount-ro", path]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    for path in MASKED:  # the machine's keys, timers and scheduler, by name: hidden, as container runtimes do
        if os.path.exists(path):
            cmd += ["--ro-bind", "/dev/null", path]
    for folder in writable:
        cmd += [*_dirs_to(folder), "--bind", folder, folder]
    return cmd


def _environment(binds: list[tuple[str, str]], env: dict[str, str] | None, exe: str) -> list[str]:
    """A cleared environment with only what the kernel needs (``env`` added), working in /tmp."""
    python_bin = os.path.dirname(exe)
    base_env = {
        "PATH": f"{python_bin}:/usr/bin:/bin",
        "HOME": "/tmp",
        "USER": "learner",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
    }
    if any(inside == PYTHON for _, inside in binds):  # its libpython was linked with the path it came from
        base_env["LD_LIBRARY_PATH"] = f"{PYTHON}/lib"
    cmd = ["--chdir", "/tmp", "--clearenv"]
    for key, value in {**base_env, **(env or {})}.items():
        cmd += ["--setenv", key, value]
    return cmd


def _limits(uid: int | None) -> list[str]:
    """What runs inside before the code: as root (``uid`` given) ``setpriv`` to that uid with no capabilities;
    then ``prlimit``'s caps on processes, address space, file size and core dumps."""
    cmd = []
    if uid is not None:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        cmd += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        nproc = NPROC
    else:
        nproc = NPROC + _processes_of(os.getuid())
    return [*cmd, "prlimit", f"--nproc={nproc}", f"--as={MEMORY_BYTES}", f"--fsize={FILE_BYTES}", "--core=0", "--"]


def _processes_of(uid: int) -> int:
    n = 0
    for pid in os.listdir("/proc"):
        try:
            n += pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid
        except OSError:
            pass
    return n


def prepare(folder: Path, uid: int) -> None:
    """Make ``folder`` (and what is in it) usable by the sandboxed kernel's user ``uid``."""
    if os.geteuid() == 0:
        for p in [folder, *folder.rglob("*")]:
            os.chown(p, uid, uid)
    folder.chmod(0o700)


def seal(folder: Path, outer_pid: int) -> None:
    """Once the kernel has bound its sockets in ``folder`` (and before any submitted code runs), from outside the
    sandbox whose bwrap is ``outer_pid``: ``folder`` becomes read-only inside it (remounted in the sandbox's own
    mount namespace, so the code can neither write to the grader's disk through it nor swap a socket for a link
    to some other socket on the machine, which the grader would follow when it reconnects), and its /tmp (and its
    /dev/shm) holds at most ``TMP_INODES`` files (2,000,000 empty files would hold ~2 GB of the host's kernel
    memory). As root the folder is also made the grader's. Raises ``RuntimeError`` when the sandbox cannot be sealed."""
    if os.geteuid() == 0:
        os.chown(folder, 0, 0)
        folder.chmod(0o755)
    pid = kernel_pid(outer_pid)
    if pid is None:
        raise RuntimeError("the sandbox's kernel was gone before it could be sealed")
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _SEAL, str(pid), f"nr_inodes={TMP_INODES}", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"could not seal the sandbox ({' '.join(done.stderr.split())[-300:]})")


def kernel_pid(outer_pid: int) -> int | None:
    """The sandboxed process of the bwrap ``outer_pid``: bwrap -> bwrap (the namespace's init) -> it."""
    pid = outer_pid
    for _ in range(2):
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if not kids:
            return None
        pid = int(kids[0])
    return pid


# Run in a fresh (single-threaded) Python: join the sandbox's user (without root) and mount namespaces, then
# remount its /tmp (and /dev/shm) with an inode cap and noexec (no file the submission writes is ever mapped as
# code: not a shared object, not a program) and the given folders read-only, keeping each mount's other flags (those a
# user namespace may not drop, bwrap's way).
_SEAL = """
import ctypes, os, sys
pid, tmp_options, *folders = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
mnt = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
owner = libc.ioctl(mnt, 0xB701)  # NS_GET_USERNS: the user namespace that owns the mount namespace
if owner < 0:
    sys.exit(f"NS_GET_USERNS: {os.strerror(ctypes.get_errno())}")
for kind, fd in (("user", owner), ("mnt", mnt)):
    if os.fstat(fd).st_ino != os.stat(f"/proc/self/ns/{kind}").st_ino and libc.setns(fd, 0) != 0:
        sys.exit(f"setns {kind}: {os.strerror(ctypes.get_errno())}")
MS_RDONLY, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 8, 32, 4096
ST_TO_MS = {1: 1, 2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}  # statvfs's ST_RELATIME is not MS_RELATIME
def remount(path, flags, data):
    keep = sum(ms for st, ms in ST_TO_MS.items() if os.statvfs(path).f_flag & st)
    if libc.mount(None, path.encode(), None, MS_REMOUNT | keep | flags, data) != 0:
        sys.exit(f"remount {path}: {os.strerror(ctypes.get_errno())}")
for tmpfs in ("/tmp", "/dev/shm"):
    remount(tmpfs, MS_NOEXEC, tmp_options.encode())
for folder in folders:
    remount(folder, MS_BIND | MS_RDONLY, None)
"""
