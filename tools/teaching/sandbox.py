"""The sandbox a submission's kernel runs in while it is graded: Debian's bubblewrap (``bwrap``), not a home-made one.

What the graded code gets (``kernel_argv``):

- **no network**: a network namespace of its own with only a loopback nobody listens on;
- **its own process tree**: a PID namespace (it sees and can signal only its own processes; the grader, the
  other submissions and the machine's other processes are invisible); when its kernel ends, every process it
  started ends too (the namespace's init dies and the kernel kills the rest);
- **a read-only view of what the kernel needs, nothing else**: ``/usr`` (system libraries, fonts), Python's
  installation, the virtual environment, the ``llm_lab`` package and its data, each bound read-only at the same
  path; NOT the course checkout (its notebooks hold the answers), the other submissions, the gradebook or any
  home folder. ``/proc`` is the sandbox's own, the environment is cleared (no instructor variables, tokens or
  other kernels' connection files);
- **a private writable /tmp** (a tmpfs of ``TMP_BYTES``, the kernel's home and working folder, gone afterwards),
  plus the one folder that holds its connection file and sockets;
- **limits**: as root (CI, a course server) the kernel runs as an unprivileged uid of its own (``new_uid``)
  with no capabilities, so ``RLIMIT_NPROC`` caps its processes (a fork storm stops at ``NPROC`` and cannot
  starve the other submissions' kernels); every process may map
  at most ``MEMORY_BYTES`` (an over-limit allocation raises ``MemoryError``/``RuntimeError`` in the kernel);
  files it writes are capped at ``FILE_BYTES`` each; wall time is the grader's (it kills the sandbox).

Without root, bubblewrap runs unprivileged in a user namespace; the kernel keeps the instructor's uid inside
the namespaces (it still sees none of the instructor's files), and ``RLIMIT_NPROC`` counts all of that user's
processes, so the cap is set to the current count plus ``NPROC``.

``available()`` says, in one sentence, what to install when the sandbox cannot run here.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

# As root, each sandbox gets a uid of its own from this range (no account needed): RLIMIT_NPROC counts a
# uid's processes machine-wide, so with one shared uid a fork storm in one submission would stop the kernels
# of the others from starting.
UIDS = range(200_000, 300_000)
_next_uid = itertools.count()
_uid_lock = threading.Lock()
NPROC = 64
MEMORY_BYTES = 6 * 2**30  # address space per process: torch maps ~1.5 GiB at import; a notebook needs < 2 GiB
FILE_BYTES = 64 * 2**20
TMP_BYTES = 256 * 2**20
SYSTEM = ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts")


def _python_paths() -> list[str]:
    """Folders the kernel's Python needs: its installation, the venv, site-packages, llm_lab and its data."""
    import llm_lab
    import llm_lab.resources

    paths = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths |= {p for p in sys.path if p and os.path.isdir(p) and "site-packages" in p}
    paths.add(str(Path(llm_lab.__file__).resolve().parent))
    paths |= {str(d.resolve()) for d in llm_lab.resources.data_dirs() if d.is_dir()}
    # keep only the outermost folders (a venv inside base_prefix needs no second bind)
    kept: list[str] = []
    for p in sorted(os.path.realpath(p) for p in paths):
        if not any(p == k or p.startswith(k + os.sep) for k in kept):
            kept.append(p)
    return kept


def read_only_paths() -> list[str]:
    """What ``wrap`` binds read-only (besides /usr and a few /etc files), as bound."""
    return [p for p in _python_paths() if os.path.exists(p)]


def available() -> str | None:
    """``None`` when sandboxed grading can run here, else one sentence naming what to install or allow."""
    if not sys.platform.startswith("linux"):
        return (f"sandboxed grading needs Linux with bubblewrap (this is {sys.platform}); grade on a Linux machine "
                "or pass --no-sandbox (then every report says the code ran unsandboxed, with your rights)")
    if shutil.which("bwrap") is None:
        return ("sandboxed grading needs bubblewrap: install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`, "
                "Fedora: `sudo dnf install bubblewrap`), or pass --no-sandbox to run the submissions unsandboxed")
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "sandboxed grading as root needs setpriv (util-linux): `apt-get install util-linux`"
    if shutil.which("prlimit") is None:
        return "sandboxed grading needs prlimit (util-linux): `apt-get install util-linux`"
    probe = subprocess.run([*wrap(["true"], []), ], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return ("bubblewrap is installed but cannot create a sandbox here "
                f"({' '.join(probe.stderr.split())[:200] or 'exit ' + str(probe.returncode)}); on Ubuntu 24.04+ "
                "allow unprivileged user namespaces for bwrap (AppArmor), or grade as root")
    return None


def _dirs_to(path: str) -> list[str]:
    """``--dir`` for every parent of ``path`` with mode 0755 (bwrap creates missing parents 0700, which an
    unprivileged kernel cannot cross)."""
    args, parts = [], Path(path).parts[1:-1]
    for i in range(len(parts)):
        args += ["--perms", "0755", "--dir", "/" + "/".join(parts[: i + 1])]
    return args


def new_uid() -> int:
    """A uid no other sandbox of this grader uses now (as root; the range is 100,000 long)."""
    with _uid_lock:
        return UIDS[next(_next_uid) % len(UIDS)]


def wrap(argv: list[str], writable: list[str], env: dict[str, str] | None = None, uid: int | None = None) -> list[str]:
    """The bwrap command that runs ``argv`` in the sandbox; ``writable`` folders are bound read-write. As root the
    code runs as ``uid`` (default: a fresh one, ``new_uid()``), with no capabilities."""
    root = os.geteuid() == 0
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
           "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not root:
        cmd += ["--unshare-user", "--disable-userns"]
    cmd += ["--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/sbin", "/sbin"]
    # the private /tmp first: binds below it (a checkout or venv under /tmp) must come after, or it hides them
    cmd += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    bound: list[str] = []
    for p in [*SYSTEM, *_python_paths()]:
        if os.path.exists(p) and not any(p == b or p.startswith(b + os.sep) for b in bound):
            if not p.startswith("/usr") and not p.startswith("/etc"):
                cmd += _dirs_to(p)
            cmd += ["--ro-bind", p, p]
            bound.append(p)
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for w in writable:
        cmd += [*_dirs_to(w), "--bind", w, w]
    cmd += ["--chdir", "/tmp", "--clearenv"]
    base_env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": "/tmp", "USER": "learner",
                "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.matplotlib",
                "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    for key, value in {**base_env, **(env or {})}.items():
        cmd += ["--setenv", key, value]
    cmd.append("--")
    if root:
        uid = new_uid() if uid is None else uid
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs"]
        nproc = NPROC
    else:
        nproc = NPROC + _processes_of(os.getuid())
    cmd += ["prlimit", f"--nproc={nproc}", f"--as={MEMORY_BYTES}", f"--fsize={FILE_BYTES}", "--core=0", "--"]
    return cmd + list(argv)


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


def seal(folder: Path) -> None:
    """Once the kernel has bound its sockets in ``folder``: make it the grader's and read-only to the kernel, so
    that the code cannot swap a socket for a link to some other socket on the machine (which the grader would
    follow when it reconnects). As root only: without root the kernel runs as the grader's user and could
    undo it (one more reason to grade as root, or as a dedicated user)."""
    if os.geteuid() == 0:
        os.chown(folder, 0, 0)
        folder.chmod(0o755)


def kernel_argv() -> list[str]:
    """The kernel command (``{connection_file}`` filled in by jupyter_client) for a kernelspec."""
    return [sys.executable, "-I", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
