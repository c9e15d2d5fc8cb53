"""No channel between submissions, nor into the grader's session (tools/teaching/grader/sandbox.py,
sandbox_seccomp.py): the seccomp filter denies the kernel-wide calls (keyrings first), each sandbox has a fresh
session keyring, /proc/keys is hidden, and two submissions run one after the other under the same uid share
nothing: keyrings, /dev/shm, abstract unix sockets, SysV IPC, /tmp. Each check is shown failing outside the
sandbox (the same probes, the same uid, no sandbox): there every channel carries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import _course_fixture as fx
import pytest

from tools.teaching.grader import sandbox, sandbox_seccomp

pytestmark = pytest.mark.usefixtures("sandbox_required")

CALLS = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
N = NUMBERS
out = {
    "keyctl": call(N["keyctl"], 0, -3, 1),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": call(N["add_key"], b"user", b"probe", b"x", 1, -1),  # the thread keyring: gone with it
    "request_key": call(N["request_key"], b"user", b"probe", None, 0),
    "unshare": call(N["unshare"], 0x10000000),  # CLONE_NEWUSER
    "clone_newuser": call(56, 0x10000000 | 17, 0, 0, 0, 0),  # SIGCHLD: a child would exit at once
    "setns": call(N["setns"], 0, 0),
    "mount": call(N["mount"], b"none", b"/tmp", b"tmpfs", 0, None),
    "ptrace": call(N["ptrace"], 16, 1, 0, 0),  # PTRACE_ATTACH to the namespace's init
    "bpf": call(N["bpf"], 0, None, 0),
    "perf_event_open": call(N["perf_event_open"], None, 0, -1, -1, 0),
    "userfaultfd": call(N["userfaultfd"], 0),
    "io_uring_setup": call(N["io_uring_setup"], 1, None),
    "no_randomize": call(135, 0x0040000),  # personality(ADDR_NO_RANDOMIZE)
    "personality_query": call(135, 0xFFFFFFFF),
}
if out["clone_newuser"] == "ok":
    os.wait()
import subprocess, threading
out["subprocess"] = subprocess.run(["echo", "ran"], capture_output=True, text=True).stdout.strip()
box = []
threading.Thread(target=lambda: box.append("ran")).start()
import torch
out["torch"] = float(torch.ones(3).sum()) + len(box)
print("CALLS " + json.dumps(out))
"""
DENIED = {
    "keyctl", "add_key", "request_key", "unshare", "clone_newuser", "setns", "mount", "ptrace", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "no_randomize",
}  # fmt: skip


def _numbers() -> dict[str, int]:
    return {name: nrs[0] for name, nrs in sandbox_seccomp.DENIED.items() if nrs[0] is not None}


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the probe's syscall numbers are x86_64's")
def test_the_filter_denies_kernel_wide_calls_and_keeps_what_a_kernel_needs():
    code = CALLS.replace("NUMBERS", repr(_numbers()))
    with sandbox.Box() as box:
        done = subprocess.run(box.wrap(sandbox.python_argv(code), []), capture_output=True, text=True, timeout=180)
    inside = json.loads(done.stdout.split("CALLS ", 1)[1])
    assert {k: v for k, v in inside.items() if k in DENIED and v != "EPERM"} == {}, inside
    assert inside["personality_query"] == "ok" and inside["subprocess"] == "ran" and inside["torch"] == 4.0
    outside = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    host = json.loads(outside.stdout.split("CALLS ", 1)[1])  # the same calls without the filter: not EPERM
    assert host["keyctl"] == host["add_key"] == host["no_randomize"] == "ok", host


# What one submission leaves behind (WRITE) and what the next one finds (READ): a key in the uid's keyring and
# in its session keyring, a file in /dev/shm and in /tmp, a SysV shared memory segment and message queue, and an
# abstract unix socket held by a process that detached itself.
WRITE = """
import ctypes, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
for ring in (-4, -3):  # the uid's keyring, the session keyring
    libc.syscall(ctypes.c_long(ADD_KEY), b"user", b"llm-lab-answers", b"42", ctypes.c_long(2), ctypes.c_long(ring))
for folder in ("/dev/shm", "/tmp"):
    open(f"{folder}/llm-lab-answers", "w").write("42")
libc.shmget(ctypes.c_int(0x11A3), ctypes.c_size_t(4096), ctypes.c_int(0o1666))  # IPC_CREAT | 0666
libc.msgget(ctypes.c_int(0x11A3), ctypes.c_int(0o1666))
holder = os.fork()
if holder == 0:
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    s = socket.socket(socket.AF_UNIX)
    s.bind("\\0llm-lab-answers")
    s.listen()
    time.sleep(60)
    os._exit(0)
time.sleep(0.5)
print("WROTE", holder)
"""
READ = """
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
found = {}
for name, ring in (("user keyring", -4), ("session keyring", -3)):
    found[name] = libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(10), ctypes.c_long(ring), b"user",
                               b"llm-lab-answers", ctypes.c_long(0)) >= 0  # KEYCTL_SEARCH
for folder in ("/dev/shm", "/tmp"):
    found[folder] = os.path.exists(f"{folder}/llm-lab-answers")
found["sysv shm"] = libc.shmget(ctypes.c_int(0x11A3), ctypes.c_size_t(0), ctypes.c_int(0)) >= 0
found["sysv msg"] = libc.msgget(ctypes.c_int(0x11A3), ctypes.c_int(0)) >= 0
try:
    socket.socket(socket.AF_UNIX).connect("\\0llm-lab-answers")
    found["abstract socket"] = True
except OSError:
    found["abstract socket"] = False
print("FOUND " + json.dumps(found))
"""


def _probe(code: str) -> str:
    nrs = sandbox_seccomp.DENIED
    column = sandbox_seccomp.ARCHES[os.uname().machine][0]
    return code.replace("ADD_KEY", str(nrs["add_key"][column])).replace("KEYCTL", str(nrs["keyctl"][column]))


def _unsandboxed(code: str, uid: int) -> list[str]:
    """The same probe as ``uid`` on the host: no namespaces, no filter (the control)."""
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if os.geteuid() == 0 else []
    return [*drop, sys.executable, "-I", "-S", "-c", code]


def _found(argv: list[str]) -> dict[str, bool]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd="/")
    assert "FOUND " in done.stdout, done.stderr[-2000:]
    return json.loads(done.stdout.split("FOUND ", 1)[1])


def test_two_submissions_in_sequence_under_one_uid_share_nothing():
    with sandbox.Box() as first:
        uid = first.uid
        wrote = subprocess.run(first.wrap(sandbox.python_argv(_probe(WRITE)), []), capture_output=True, text=True)
        assert "WROTE" in wrote.stdout, wrote.stderr[-2000:]
    with sandbox.Box() as second:
        assert second.uid == uid  # the uid is leased again: the channel the red team used
        found = _found(second.wrap(sandbox.python_argv(_probe(READ)), []))
    assert found == dict.fromkeys(found, False) and len(found) == 7, found

    # the control: the same two probes under the same uid without the sandbox find every channel
    holder = None
    try:
        wrote = subprocess.run(_unsandboxed(_probe(WRITE), uid), capture_output=True, text=True, timeout=60, cwd="/")
        assert "WROTE" in wrote.stdout, wrote.stderr[-2000:]
        holder = int(wrote.stdout.split()[1])  # the detached socket holder: ended below, by its id
        control = _found(_unsandboxed(_probe(READ), uid))
    finally:
        if holder:
            os.kill(holder, 9)
        for path in ("/dev/shm/llm-lab-answers", "/tmp/llm-lab-answers"):
            if os.path.exists(path):
                os.remove(path)
        subprocess.run(_unsandboxed(_probe(CLEAN), uid), capture_output=True, timeout=60, cwd="/")
    expect = {"user keyring", "/dev/shm", "/tmp", "sysv shm", "sysv msg", "abstract socket"}
    assert {k for k, v in control.items() if v} >= expect, control


CLEAN = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for ring in (-4, -3):
    key = libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(10), ctypes.c_long(ring), b"user", b"llm-lab-answers",
                       ctypes.c_long(0))
    if key >= 0:
        libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(21), ctypes.c_long(key))  # KEYCTL_INVALIDATE
for get in (libc.shmget, libc.msgget):
    ident = get(ctypes.c_int(0x11A3), *([ctypes.c_size_t(0)] if get is libc.shmget else []), ctypes.c_int(0))
    if ident >= 0:
        (libc.shmctl if get is libc.shmget else libc.msgctl)(ctypes.c_int(ident), ctypes.c_int(0), None)  # IPC_RMID
"""

# The grader's side: a session keyring holding a secret, then one sandbox started from it, whose code tries
# every way to the secret (the session keyring by its special id, /proc/keys) and prints what it got.
GRADER = """
import ctypes, os, subprocess, sys
from tools.teaching.grader import sandbox
libc = ctypes.CDLL(None, use_errno=True)
secret = sys.argv[1].encode()
libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(1), None)  # a session keyring of this grader's own
assert libc.syscall(ctypes.c_long(ADD_KEY), b"user", b"llm-lab-grader-secret", secret, ctypes.c_long(len(secret)),
                    ctypes.c_long(-3)) >= 0, os.strerror(ctypes.get_errno())
steal = sys.argv[2]
print("UNSANDBOXED " + subprocess.run([sys.executable, "-I", "-S", "-c", steal], capture_output=True, text=True).stdout)
with sandbox.Box() as box:
    done = subprocess.run(box.wrap(sandbox.python_argv(steal), []), capture_output=True, text=True, timeout=120)
print("SANDBOXED " + done.stdout + done.stderr)
"""
STEAL = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
key = libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(10), ctypes.c_long(-3), b"user", b"llm-lab-grader-secret",
                   ctypes.c_long(0))
buf = ctypes.create_string_buffer(200)
n = libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(11), ctypes.c_long(key), buf, ctypes.c_long(200))
print("read", buf.raw[: max(n, 0)].decode())  # KEYCTL_READ
try:
    print("proc", open("/proc/keys").read())
except OSError as exc:
    print("proc", exc)
"""


def test_the_graders_session_keyring_is_not_readable_from_a_submission():
    secret = "llm-lab-session-secret-" + os.urandom(6).hex()
    done = subprocess.run(
        [sys.executable, "-c", _probe(GRADER), secret, _probe(STEAL)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=fx.ROOT,
    )
    unsandboxed, _, sandboxed = done.stdout.partition("\nSANDBOXED ")
    assert f"read {secret}" in unsandboxed, done.stdout + done.stderr[-2000:]  # the control: it is there to read
    assert "read " in sandboxed and secret not in sandboxed and "llm-lab-grader-secret" not in sandboxed, sandboxed
