"""The seccomp filter every sandboxed process runs under (bubblewrap's ``--seccomp FD``), built here as a classic
BPF program: the kernel-wide channels and the kernel's attack surface that container runtimes close (Docker's
default profile, the part of its deny list that applies to a notebook's kernel), nothing torch, NumPy or
ipykernel use.

- **Keyrings** (``keyctl``, ``add_key``, ``request_key``): kernel keyrings are not namespaced; a uid's keyring
  outlives its processes (a submission wrote its answers there, a later one under the same leased uid read
  them) and the grader's session keyring is inherited (the launcher also gives each sandbox a fresh one).
- **New namespaces and mounts** (``unshare``, ``setns``, ``clone``/``clone3`` with namespace flags,
  ``mount``, ``umount2``, ``pivot_root``, the new mount API): bubblewrap has built the sandbox's mounts and
  namespaces before the filter applies.
- **Other processes and the kernel** (``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``, ``bpf``,
  ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, ``personality`` beyond the values Docker allows,
  modules, ``kexec_*``, ``syslog``, clocks, quotas, swap, ``reboot``, ...).

A denied call fails with ``EPERM`` (``clone3`` with ``ENOSYS``, so that the C library falls back to ``clone``,
whose flags the filter can read); a call from another architecture's ABI (i386 or x32 on x86_64) ends the
process. ``program()`` returns the filter's bytes, ``None`` on a machine this table does not cover.
"""

from __future__ import annotations

import errno
import platform
import struct

# from <asm/unistd_64.h> (x86_64) and <asm-generic/unistd.h> (aarch64); None: no such call there
DENIED = {
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "fanotify_init": (300, 262),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "create_module": (174, None),
    "query_module": (178, None),
    "get_kernel_syms": (177, None),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "syslog": (103, 116),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "lookup_dcookie": (212, 18),
    "nfsservctl": (180, 42),
    "vhangup": (153, 58),
    "uselib": (134, None),
    "ustat": (136, None),
    "sysfs": (139, None),
    "_sysctl": (156, None),
    "iopl": (172, None),
    "ioperm": (173, None),
}
CLONE, CLONE3, PERSONALITY = (56, 220), (435, 435), (135, 92)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (Docker's mask)
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # Docker's: Linux, with or without UNAME26, the query
ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}  # AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64
X32_BIT = 0x40000000

LD_W_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, ..., BPF_RET|K
ALLOW, KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low 32 bits on these little-endian machines)


def program(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap reads it (``struct sock_filter`` after ``struct sock_filter``), or ``None``."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        return None
    column, audit_arch = ARCHES[machine]
    denied = sorted({nrs[column] for nrs in DENIED.values() if nrs[column] is not None})
    # each rule: (test on the loaded word, value, what to return when it holds); the returns are appended at the end
    code: list[tuple[int, int, int, int]] = []  # (op, jt, jf, k) with jt/jf as labels resolved below
    rets = {"allow": ALLOW, "eperm": RET_ERRNO | errno.EPERM, "enosys": RET_ERRNO | errno.ENOSYS}
    rets["kill"] = KILL_PROCESS
    labels = list(rets)

    def jump(op, k, target):  # when the test holds go to ``target``, else fall through
        code.append((op, target, None, k))

    code.append((LD_W_ABS, 0, 0, ARCH))
    code.append((JEQ, None, "kill", audit_arch))  # not this ABI: end the process
    code.append((LD_W_ABS, 0, 0, NR))
    if machine == "x86_64":
        jump(JGE, X32_BIT, "kill")
    for nr in denied:
        jump(JEQ, nr, "eperm")
    jump(JEQ, CLONE3[column], "enosys")
    jump(JEQ, CLONE[column], "clone")
    jump(JEQ, PERSONALITY[column], "personality")
    code.append((RET, 0, 0, ALLOW))
    blocks = {"clone": len(code)}
    code.append((LD_W_ABS, 0, 0, ARG0))
    jump(JSET, CLONE_NAMESPACES, "eperm")
    code.append((RET, 0, 0, ALLOW))
    blocks["personality"] = len(code)
    code.append((LD_W_ABS, 0, 0, ARG0))
    for value in PERSONALITIES:
        jump(JEQ, value, "allow")
    code.append((RET, 0, 0, rets["eperm"]))
    for label in labels:
        blocks[label] = len(code)
        code.append((RET, 0, 0, rets[label]))

    return _assembled(code, blocks)


def _assembled(code: list[tuple[int, object, object, int]], blocks: dict[str, int]) -> bytes:
    """``code`` as ``struct sock_filter`` bytes, each jump's label resolved to its distance in ``blocks``."""

    def offset(i, target):  # a label's distance from the instruction after ``i``
        if target is None or isinstance(target, int):
            return 0
        delta = blocks[target] - i - 1
        if not 0 <= delta < 256:
            raise AssertionError(f"seccomp jump too far ({delta})")
        return delta

    return b"".join(struct.pack("=HBBI", op, offset(i, jt), offset(i, jf), k) for i, (op, jt, jf, k) in enumerate(code))


# No new process once the graded kernel has started (a second filter the kernel adds itself, after its warm-up:
# bubblewrap's own exec of the kernel comes first): threads only. What a learner's code would run in another
# process (a subprocess with its code in a string, os.system, a worker) is outside the graded process's watch;
# now it cannot start. From <asm/unistd_64.h> and <asm-generic/unistd.h>, as DENIED.
# memfd_create too: a file in memory that the kernel could map as code (dlopen of /proc/self/fd/N), the one place
# a written file could run natively once /tmp and /dev/shm are noexec (sandbox._SEAL)
NO_PROCESS = {
    "execve": (59, 221),
    "execveat": (322, 281),
    "fork": (57, None),
    "vfork": (58, None),
    "memfd_create": (319, 279),
}
SECCOMP_SYSCALL = (317, 277)
CLONE_THREAD = 0x00010000


def no_processes(machine: str | None = None) -> bytes | None:
    """The filter that denies every new process (``execve``, ``fork``, ``clone`` without ``CLONE_THREAD``) and
    ``memfd_create``, and allows the rest, or ``None`` on a machine this table does not cover."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        return None
    column, audit_arch = ARCHES[machine]
    code: list = [(LD_W_ABS, 0, 0, ARCH), (JEQ, None, "kill", audit_arch), (LD_W_ABS, 0, 0, NR)]
    if machine == "x86_64":
        code.append((JGE, "kill", None, X32_BIT))
    code += [(JEQ, "eperm", None, nrs[column]) for nrs in NO_PROCESS.values() if nrs[column] is not None]
    code += [(JEQ, "enosys", None, CLONE3[column]), (JEQ, "clone", None, CLONE[column]), (RET, 0, 0, ALLOW)]
    blocks = {"clone": len(code)}
    code += [(LD_W_ABS, 0, 0, ARG0), (JSET, "allow", None, CLONE_THREAD), (RET, 0, 0, RET_ERRNO | errno.EPERM)]
    for label, value in (("allow", ALLOW), ("eperm", RET_ERRNO | errno.EPERM), ("enosys", RET_ERRNO | errno.ENOSYS)):
        blocks[label] = len(code)
        code.append((RET, 0, 0, value))
    blocks["kill"] = len(code)
    code.append((RET, 0, 0, KILL_PROCESS))
    return _assembled(code, blocks)


def installer(machine: str | None = None) -> str:
    """Python that applies :func:`no_processes` to the process that runs it and all its threads (``seccomp``
    with ``SECCOMP_FILTER_FLAG_TSYNC``, after ``PR_SET_NO_NEW_PRIVS``), raising OSError if it cannot; it binds no
    name. "" on a machine this table does not cover."""
    machine = machine or platform.machine()
    program = no_processes(machine)
    if program is None:
        return ""
    nr = SECCOMP_SYSCALL[ARCHES[machine][0]]
    return (
        "def _no_processes(program, nr):\n"
        "    import ctypes\n"
        "    class Prog(ctypes.Structure):\n"
        "        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_char_p)]\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS\n"
        "        raise OSError(ctypes.get_errno(), 'no_new_privs')\n"
        "    prog = Prog(len(program) // 8, program)\n"
        "    if libc.syscall(ctypes.c_long(nr), ctypes.c_long(1), ctypes.c_long(1), ctypes.byref(prog)) != 0:\n"
        "        raise OSError(ctypes.get_errno(), 'seccomp')\n"
        f"_no_processes(bytes.fromhex({program.hex()!r}), {nr})\n"
        "del _no_processes\n"
    )
