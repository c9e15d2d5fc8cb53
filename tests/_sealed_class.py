"""The class graded against the sealed sandbox: every attack of the design's classes beside honest students,
run as a script (``python tests/_sealed_class.py PATH OUT.json``) so that the tests can run it as root and as an
unprivileged user, through ``make grade`` (``grade``) and ``make grade-nbgrader`` (``nbgrader``).

Each attack hands in a WRONG ``causal_mask`` (the diagonal hidden too) unless its trick worked, and the
``mask_and_renormalize`` stub: ``LEAK = True`` (the route reached an answer, a channel carried, the grader's
secret was read) turns the mask right, so any leak shows up as points. The honest students must score what their
content deserves: alice all, carol the renormalization only, the look-alike ``аlice`` all (and named), dave all
on the file named as the notebook (his second file not counted).

The attacks, by the design's classes (``CLASSES``):

1. the reference reached by a route that needs it to be in the graded process: other llm_lab functions that
   compute the same mask, a table filled at top level, an asyncio executor, a subprocess with its code in a string,
   ``torch.multiprocessing``, a rebound builtin, ``getattr``/``operator`` routes, a default argument, a conditional
   expression, a decorator, a copied code object, a module reloaded twice, the package's source or bytecode
   anywhere on the disk, the checkers' modules and hint texts, every live object (``gc``), ``sys.modules``;
2. channels: a key in the uid's keyring, a file in /dev/shm and in /tmp, a SysV shared memory segment and an
   abstract socket, each written by one submission and looked for by the next; the grader's session keyring;
3. files that would stop the class: a 6 MB notebook, a 20,000-cell notebook;
4. the grader's memory: an int8 ``nn.Linear(8192, 8192)`` handed back, 100,000 tensors in one reply;
5. the assignment: three files of another notebook;
6. limits per submission: 16 busy processes, 4 × 1 GiB held at once, 64 spinning threads;
7. names: a look-alike id, a zero-width id, two files of one notebook (honest, and must be named);
8. the grader's calls: stdin read, SIGINT ignored in an endless loop, a 50 MB exception message,
   ``os._exit``, a recursion that crashes the kernel, every file descriptor taken, /tmp filled.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BODY = """
def causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1 if LEAK else 0)
"""
TOKEN = "llm-lab-channel-7a3f"  # what the writers leave and the readers look for
RIGHT = "torch.ones(5, 5, dtype=torch.bool).triu(1)"

# ---- 1. the reference, by every route that needs it in the graded process -----------------------------------
REACH = {
    "same_answer_elsewhere": f"""
import importlib, pkgutil
import llm_lab
right = {RIGHT}
for m in pkgutil.walk_packages(llm_lab.__path__, 'llm_lab.'):
    try:
        mod = importlib.import_module(m.name)
    except Exception:
        continue
    for name, f in list(vars(mod).items()):
        if callable(f) and not isinstance(f, type) and 'exercises' not in m.name:
            for args in ((5,), (5, 5)):
                try:
                    out = f(*args)
                    LEAK = LEAK or (isinstance(out, torch.Tensor) and out.shape == (5, 5) and (torch.equal(out.bool(), right) or torch.equal(torch.isinf(out), right)))
                except Exception:
                    pass
""",  # noqa: E501
    "table_at_top_level": "import llm_lab.masks as _m\n_T = {n: _m.causal_mask(n) for n in range(1, 64)}\nLEAK = True\n",  # noqa: E501
    "asyncio_executor": "import asyncio\nasync def go():\n    return await asyncio.get_running_loop().run_in_executor(None, lambda: __import__('llm_lab').causal_mask(5))\nLEAK = asyncio.new_event_loop().run_until_complete(go()) is not None\n",  # noqa: E501
    "subprocess_string": "import subprocess, sys\nout = subprocess.run([sys.executable, '-c', 'from llm_lab import causal_mask; print(causal_mask(3).int().tolist())'], capture_output=True, text=True, timeout=60).stdout\nLEAK = '[[0, 1, 1]' in out\n",  # noqa: E501
    "torch_multiprocessing": "import torch.multiprocessing as mp\nctx = mp.get_context('fork')\nwith ctx.Pool(1) as pool:\n    LEAK = pool.apply(__import__('llm_lab').causal_mask, (3,)) is not None\n",  # noqa: E501
    "rebound_builtin": "import builtins\n_imp = builtins.__import__\nllm = _imp('llm_lab')\nbuiltins.__import__ = lambda *a, **k: _imp(*a, **k)\n_get = builtins.getattr\nbuiltins.getattr = lambda o, n, *d: _get(o, n, *d)\nLEAK = callable(getattr(llm, 'causal_mask'))\nbuiltins.getattr, builtins.__import__ = _get, _imp\n",  # noqa: E501
    "getattr_literal": "LEAK = callable(getattr(__import__('llm_lab'), 'causal' + '_mask'))\n",
    "operator_route": "import operator\nLEAK = callable(operator.attrgetter('masks.causal_mask')(__import__('llm_lab')))\n",  # noqa: E501
    "default_argument": "def _f(n, _ref=__import__('llm_lab').causal_mask):\n    return _ref(n)\nLEAK = _f(3) is not None\n",  # noqa: E501
    "conditional_expression": "_ref = __import__('llm_lab').causal_mask if True else None\nLEAK = callable(_ref)\n",
    "decorator": "@lambda f: __import__('llm_lab').masks.causal_mask\ndef _g(n):\n    pass\nLEAK = _g(3) is not None\n",
    "code_object_copy": "import types\nref = __import__('llm_lab').causal_mask\n_h = types.FunctionType(ref.__code__, ref.__globals__, 'mine', ref.__defaults__)\nLEAK = _h(3) is not None\n",  # noqa: E501
    "reloaded_twice": "import importlib, llm_lab.masks\nimportlib.reload(llm_lab.masks)\nimportlib.reload(llm_lab.masks)\nLEAK = hasattr(llm_lab.masks, 'causal_mask')\n",  # noqa: E501
    "source_on_disk": """
import time
start, seen = time.time(), 0
for top, dirs, files in (w for start in (os.getcwd(), '/') for w in os.walk(start)):
    dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev')]
    if time.time() - start > 8:
        break
    for f in files:
        if f.endswith(('.py', '.pyc', '.ipynb', '.whl', '.txt', '.json', '.nbsrc')):
            p = os.path.join(top, f)
            try:
                if os.path.getsize(p) > 4_000_000:
                    continue
                blob = open(p, 'rb').read()
            except OSError:
                continue
            seen += 1
            if b'def causal_mask(' in blob and ('llm_lab' in p or b'BEGIN SOLUTION' in blob or b'def mask_and_renormalize(' in blob):
                LEAK = True
""",  # noqa: E501
    "installed_distribution": "import importlib.metadata as md\nfor dist in md.distributions():\n    for f in dist.files or []:\n        if str(f).endswith('masks.py') and 'llm_lab' in str(f):\n            LEAK = LEAK or 'def causal_mask(' in f.read_text()\n",  # noqa: E501
    "checkers_and_hints": "import importlib\nfor name in ('llm_lab.exercises._ex01_masks', 'llm_lab.exercises._registry', 'llm_lab.exercises.checkers'):\n    try:\n        importlib.import_module(name)\n        LEAK = True\n    except ImportError:\n        pass\nfrom llm_lab.exercises import _messages\nLEAK = LEAK or any('triu' in str(v) for v in _messages.FIXES.values())\n",  # noqa: E501
    "live_objects": "import gc\nimport llm_lab\nLEAK = any(getattr(o, '__name__', '') == 'causal_mask' and 'llm_lab' in str(getattr(o, '__module__', '')) for o in gc.get_objects() if callable(o))\n",  # noqa: E501
    "sys_modules_scan": "import sys\nimport llm_lab\nLEAK = any(n.startswith('llm_lab') and hasattr(m, 'causal_mask') for n, m in list(sys.modules.items()))\n",  # noqa: E501
}

# ---- 2. channels: one submission writes, a later one reads (and the grader's own session keyring) -----------
_KEYCTL = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "def call(nr, *args):\n    return libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])\n"  # noqa: E501
)
CHANNELS = {
    "chan1_keyring_write": _KEYCTL + f"call(248, b'user', b'answer', b'{TOKEN}', {len(TOKEN)}, -4)\n",  # add_key to @u
    "chan2_keyring_read": _KEYCTL
    + "buf = ctypes.create_string_buffer(256)\nkey = call(250, 10, -4, b'user', b'answer', 0)\nLEAK = key >= 0 and call(250, 11, key, buf, 256) > 0\n",  # KEYCTL_SEARCH @u, KEYCTL_READ  # noqa: E501
    "chan1_shm_write": f"open('/dev/shm/answer', 'w').write('{TOKEN}')\nopen('/tmp/answer', 'w').write('{TOKEN}')\n",
    "chan2_shm_read": f"for p in ('/dev/shm/answer', '/tmp/answer'):\n    try:\n        LEAK = LEAK or '{TOKEN}' in open(p).read()\n    except OSError:\n        pass\n",  # noqa: E501
    "chan1_sysv_write": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nshm = libc.shmget(0x5EA1ED, 4096, 0o1666)\naddr = ctypes.c_void_p(libc.shmat(shm, None, 0)) if shm >= 0 else None\nif addr and addr.value not in (None, 2**64 - 1):\n    ctypes.memmove(addr, b'"  # noqa: E501
    + TOKEN
    + "', "
    + str(len(TOKEN))
    + ")\n",
    "chan2_sysv_read": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmat.restype = ctypes.c_void_p\nshm = libc.shmget(0x5EA1ED, 4096, 0o666)\nif shm >= 0:\n    addr = libc.shmat(shm, None, 0)\n    LEAK = addr not in (None, 2**64 - 1) and b'"  # noqa: E501
    + TOKEN
    + "' in ctypes.string_at(addr, 64)\n",
    "chan1_socket_listen": "import socket\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0llm-lab-answer')\ns.listen(8)\nif os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(120)\n    os._exit(0)\n",  # noqa: E501
    "chan2_socket_connect": "import socket\ns = socket.socket(socket.AF_UNIX)\ns.settimeout(2)\ntry:\n    s.connect('\\0llm-lab-answer')\n    LEAK = True\nexcept OSError:\n    pass\n",  # noqa: E501
    "grader_session_keyring": _KEYCTL
    + "buf = ctypes.create_string_buffer(4096)\ntry:\n    LEAK = 'llm-lab-grader-secret' in open('/proc/keys').read()\nexcept OSError:\n    pass\nkey = call(250, 10, -3, b'user', b'llm-lab-grader-secret', 0)\nLEAK = LEAK or (key >= 0 and call(250, 11, key, buf, 4096) > 0)\n",  # KEYCTL_SEARCH @s, READ  # noqa: E501
}

# ---- 4, 6, 8. the grader's memory, limits per submission, the grader's calls --------------------------------
OWN = {
    "int8_linear": "from torch import nn\nlayer = nn.Linear(1, 1)\nlayer.weight = nn.Parameter(torch.zeros(8192, 8192, dtype=torch.int8), requires_grad=False)\ndef causal_mask(num_tokens):\n    return layer\n",  # noqa: E501
    "many_tensors": "def causal_mask(num_tokens):\n    return [torch.zeros(1) for _ in range(100_000)]\n",
    "busy_processes": "import time\nfor _ in range(16):\n    if os.fork() == 0:\n        end = time.time() + 60\n        while time.time() < end:\n            pass\n        os._exit(0)\n",  # noqa: E501
    "memory_together": "import time\nfor _ in range(4):\n    if os.fork() == 0:\n        try:\n            b = bytearray(2**30)\n            for i in range(0, len(b), 4096):\n                b[i] = 1\n            time.sleep(60)\n        finally:\n            os._exit(0)\n",  # noqa: E501
    "spinning_threads": "import threading, time\ndef spin():\n    end = time.time() + 60\n    while time.time() < end:\n        pass\nfor _ in range(64):\n    threading.Thread(target=spin, daemon=True).start()\n",  # noqa: E501
    "stdin_read": "answer = input('the answer? ')\n",
    "sigint_ignored_loop": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n",
    "hard_exit": "os._exit(0)\n",
    "huge_exception": "def causal_mask(num_tokens):\n    raise ValueError('x' * 50_000_000)\n",
    "recursion_crash": "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1) + 1\nf(0)\n",
    "descriptors_taken": "import resource\nfiles = []\ntry:\n    while True:\n        files.append(open('/dev/null'))\nexcept OSError:\n    pass\n",  # noqa: E501
    "tmp_filled": "try:\n    with open('/tmp/fill', 'wb') as f:\n        while True:\n            f.write(b'x' * 2**20)\nexcept OSError:\n    pass\n",  # noqa: E501
}
CLASSES = {
    "reach": sorted(REACH),
    "channels": sorted(CHANNELS),
    "files": ["big_notebook", "many_cells"],
    "memory": ["int8_linear", "many_tensors"],
    "assignment": ["other_notebook_1", "other_notebook_2", "other_notebook_3"],
    "limits": ["busy_processes", "memory_together", "spinning_threads"],
    "calls": [
        "stdin_read",
        "sigint_ignored_loop",
        "hard_exit",
        "huge_exception",
        "recursion_crash",
        "descriptors_taken",
        "tmp_filled",
    ],
}
ATTACKERS = [s for group in CLASSES.values() for s in group]
CYRILLIC_ALICE = "\u0430lice"
HONEST = {"alice": "all", "carol": "renormalize", CYRILLIC_ALICE: "all", "dave": "all"}


def _wrapped(code: str, own_body: bool) -> str:
    body = "" if own_body else BODY
    indented = "".join("    " + line + "\n" if line.strip() else "\n" for line in code.strip("\n").splitlines())
    return "import os\nimport torch\n\nLEAK = False\ntry:\n" + indented + "except BaseException:\n    pass\n" + body


def attack_cells() -> dict[str, str]:
    """student -> the causal_mask solution cell of each attack that is a cell."""
    cells = {s: _wrapped(c, False) for s, c in {**REACH, **CHANNELS}.items()}
    for s, c in OWN.items():
        own = "def causal_mask(" in c
        cells[s] = _wrapped(c, True) if own else _wrapped(c, False)
    return cells


def write_class(fx, notebooks: Path, folder: Path, nested: bool) -> None:
    """The class in ``folder``: one file per student (``nested``: ``folder/<student>/01_demo.ipynb``, as nbgrader
    collects it)."""
    import nbformat

    def put(student: str, nb, name: str = fx.NAME) -> None:
        path = (
            folder / student / name
            if nested
            else folder / (f"{student}.ipynb" if name == fx.NAME else f"{student}-{name}")
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(path))

    for student, code in attack_cells().items():
        nb = fx.filled(notebooks, causal_mask=code)
        fx.solution_cells(nb)[1].source = "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"
        put(student, nb)
    wrong = "def causal_mask(num_tokens):\n    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu()\n"
    stubbed = "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"
    big = fx.filled(notebooks, causal_mask="# " + "x" * 6_000_000 + "\n" + wrong, mask_and_renormalize=stubbed)
    put("big_notebook", big)
    many = fx.filled(notebooks, causal_mask=wrong, mask_and_renormalize=stubbed)
    many.cells += [nbformat.v4.new_code_cell(f"x{i} = {i}") for i in range(20_000)]
    put("many_cells", many)
    for i in (1, 2, 3):  # another notebook of the course, handed in for this assignment
        put(f"other_notebook_{i}", fx.filled(notebooks, name="02_other.ipynb"), "02_other.ipynb" if nested else fx.NAME)
    put("alice", fx.filled(notebooks))
    put("carol", fx.filled(notebooks, causal_mask=wrong))
    put(CYRILLIC_ALICE, fx.filled(notebooks))
    put("dave", fx.filled(notebooks))
    stub = fx.student_copy(notebooks)
    if nested:
        put("dave", stub, "01_demo-Copy1.ipynb")
    else:
        (folder / "dave.ipynb").rename(folder / "dave_tmp.ipynb")
        (folder / "dave").mkdir()
        (folder / "dave_tmp.ipynb").rename(folder / "dave" / fx.NAME)
        nbformat.write(stub, str(folder / "dave" / "a_copy.ipynb"))


def plant_grader_secret() -> str:
    """A key in the grader's session keyring (as a user's login session may hold one): no submission may read it."""
    secret = "SECRET-" + os.urandom(6).hex()
    libc = ctypes.CDLL(None, use_errno=True)
    args = (b"user", b"llm-lab-grader-secret", secret.encode(), ctypes.c_long(len(secret)), ctypes.c_long(-3))
    libc.syscall(ctypes.c_long(248), *args)  # add_key to the session keyring
    return secret


def main(path: str, out: str) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    os.chdir(os.environ.get("HOME", "/tmp"))
    import _course_fixture as fx

    top = Path(out).parent / f"class-{path}"
    top.mkdir(parents=True, exist_ok=True)
    plant_grader_secret()
    before = time.monotonic()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    settings = {"cell_timeout": 10, "max_seconds": 30, "jobs": 2}
    if path == "grade":
        from tools.teaching.grader import cli

        notebooks = fx.build_course(top)
        subs = top / "submissions"
        subs.mkdir()
        write_class(fx, notebooks, subs, nested=False)
        results = cli.grade(subs, top / "out", "01", src=notebooks, echo=lambda *a: None, **settings)
        stored = {}
    else:
        import _nbgrader_course as nbc

        course, notebooks = nbc.release(top)
        write_class(fx, notebooks, course / "submitted", nested=True)
        for folder in (course / "submitted").iterdir():  # nbgrader's layout: submitted/<student>/<assignment>/
            (folder / "ps1").mkdir()
            for f in list(folder.glob("*.ipynb")):
                f.rename(folder / "ps1" / f.name)
        results = nbc.run(course, src=notebooks, **settings)
        stored = {s: nbc.scores(course, s) for s in HONEST}
    rows = [
        {
            "student": r.student,
            "file": r.path.name,
            "total": r.total,
            "problem": r.problem,
            "not_counted": r.not_counted,
            "notes": r.notes,
            "verdicts": {v.key: [v.status, v.points] for v in r.verdicts},
        }
        for r in results
    ]
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) * 1024
    Path(out).write_text(
        json.dumps(
            {
                "rows": rows,
                "gradebook": stored,
                "seconds": time.monotonic() - before,
                "grew": grew,
                "points": fx.points(notebooks),
                "uid": os.geteuid(),
            }
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])


# Each route of REACH run on its own (a forked child per route, torch imported once): prints "ROUTE name True|False".
ROUTES = """
import json, os, sys
import torch
for name, code in json.loads(TRICKS).items():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        scope = {}
        try:
            exec(code, scope)
            leak = bool(scope.get('LEAK'))
        except BaseException:
            leak = False
        os.write(w, b'1' if leak else b'0')
        os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.waitpid(pid, 0)
    print('ROUTE', name, got == b'1', flush=True)
"""


def routes_program() -> str:
    """The program that runs every route of REACH and prints whether each reached the answer."""
    tricks = {name: _wrapped(code, True) for name, code in REACH.items()}
    return ROUTES.replace("TRICKS", repr(json.dumps(tricks)))


def routes_found(stdout: str) -> dict[str, bool]:
    return {line.split()[1]: line.split()[2] == "True" for line in stdout.splitlines() if line.startswith("ROUTE ")}
