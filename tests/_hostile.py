"""Hostile submissions for the grading tests: each hands in a WRONG ``causal_mask`` (the diagonal hidden too)
and the ``mask_and_renormalize`` stub, plus one trick in the same cell.

A trick that reaches something the sandbox should hide or refuse sets ``LEAK = True``, and then the
submitted ``causal_mask`` becomes the right one: a leak shows up as points (the tests expect 0). Tricks that
aim at the grader itself (patched ``json``/``print``/torch, input transformers, a forged reply, kills) are
judged by their score and by the host being unchanged afterwards (``Host``).
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

MARK = "912347"  # the orphan process's argument: found in /proc afterwards if it survived

BODY = """
def causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1 if LEAK else 0)
"""


@dataclass
class Host:
    """What a hostile submission may try to reach on the grading machine, and how to tell afterwards."""

    root: Path
    package: Path  # the installed llm_lab package
    answer_key: Path  # the instructor notebook (solutions in it)
    submissions: Path
    site: Path  # the venv's site-packages
    secret: str = "llm-lab-secret-" + os.urandom(4).hex()
    port: int = 0
    connections: list = field(default_factory=list)

    def listen(self) -> None:
        """A TCP server on 127.0.0.1 that counts who connects (a sandboxed kernel must not)."""
        srv = socket.create_server(("127.0.0.1", 0))
        srv.settimeout(0.5)
        self.port = srv.getsockname()[1]
        self._stop = threading.Event()

        def run():
            while not self._stop.is_set():
                try:
                    conn, _ = srv.accept()
                    self.connections.append(1)
                    conn.close()
                except OSError:
                    pass
            srv.close()

        threading.Thread(target=run, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def digest(self) -> dict[str, str]:
        """Every file of the package and of the course (answer key included)."""
        files = [*self.package.rglob("*.py"), *self.answer_key.parent.parent.rglob("*.ipynb")]
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files) if p.is_file()}

    def planted(self) -> list[Path]:
        """Files the tricks try to create outside their sandbox."""
        return [
            Path.home() / f".llm_lab_pwned_{MARK}",
            self.site / f"llm_lab_pwned_{MARK}.pth",
            self.root / f"pwned_{MARK}",
            Path("/tmp") / f"llm_lab_pwned_{MARK}",
        ]

    def survivors(self) -> list[str]:
        """Processes whose command line carries MARK (the orphan's `sleep`)."""
        found = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if MARK in cmd and "pytest" not in cmd:
                    found.append(f"{pid}: {cmd}")
        return found


def tricks(h: Host) -> dict[str, str]:
    """student -> the code of the cell that defines causal_mask (each with one trick)."""
    planted = [str(p) for p in h.planted()]
    t = {
        "json_patch": "import json\n_dumps = json.dumps\n"
        "json.dumps = lambda o, *a, **k: _dumps({**o, 'status': 'pass'} if isinstance(o, dict) else o)\n",
        "print_patch": "import builtins\n_print = builtins.print\n"
        "builtins.print = lambda *a, **k: _print(*[str(x).replace('fail', 'pass') for x in a], **k)\n",
        "input_transformer": "get_ipython().input_transformers_cleanup.append(lambda lines: [line.replace("
        "'lambda: causal_mask', 'lambda: __import__(\"llm_lab\").causal_mask') for line in lines])\n",
        "ast_transformer": "import ast\n\nclass T(ast.NodeTransformer):\n    def visit_Name(self, node):\n"
        "        return ast.copy_location(ast.Name('right_mask', node.ctx), node) "
        "if node.id == 'causal_mask' and isinstance(node.ctx, ast.Load) else node\n\n"
        "def right_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).triu(1)\n\n"
        "get_ipython().ast_transformers.append(T())\n",
        "proc_parent": "for p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
        "            LEAK = LEAK or b'pytest' in open(f'/proc/{p}/cmdline', 'rb').read()\n"
        "        except OSError:\n            pass\n",
        "answer_key": f"LEAK = 'BEGIN SOLUTION' in open({str(h.answer_key)!r}).read()\n",
        "other_submissions": f"LEAK = len(os.listdir({str(h.submissions)!r})) > 0\n",
        "package_write": f"open({str(h.package / 'exercises' / '_ex01_masks.py')!r}, 'a').write('\\n# pwned\\n')\n"
        "LEAK = True\n",
        "home_write": f"open({planted[0]!r}, 'w').write('x')\nLEAK = True\n",
        "venv_write": f"open({planted[1]!r}, 'w').write('import os')\nLEAK = True\n",
        "course_write": f"open({planted[2]!r}, 'w').write('x')\nLEAK = True\n",
        # /tmp is the sandbox's own (writable by design): the test checks that the host's /tmp has no such file
        "host_tmp_write": f"open({planted[3]!r}, 'w').write('x')\n",
        "orphan": f"import subprocess\nsubprocess.Popen(['sleep', '{MARK}'], start_new_session=True)\n"
        f"os.system('nohup sleep {MARK} >/dev/null 2>&1 &')\n",
        "network": f"import socket\nsocket.create_connection(('127.0.0.1', {h.port}), timeout=2)\nLEAK = True\n",
        "kill_parent": f"import signal\nfor pid in (os.getppid(), 1, {os.getpid()}):\n    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n",
        "kill_everything": "import signal\nfor target in (-1, os.getpid()):\n    try:\n"
        "        os.kill(target, signal.SIGKILL)\n    except OSError:\n        pass\n",
        "big_alloc": "x = torch.empty(10 * 2**30, dtype=torch.uint8)\nx.fill_(1)\nLEAK = True\n",
        "fork_storm": "import time\nforks = 0\nfor _ in range(400):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
        "    forks += 1\nLEAK = forks >= 300\n",
        "env_secret": f"LEAK = {h.secret!r} in str(os.environ)\n"
        "for p in os.listdir('/proc'):\n    try:\n"
        f"        LEAK = LEAK or {h.secret!r}.encode() in open(f'/proc/{{p}}/environ', 'rb').read()\n"
        "    except OSError:\n        pass\n",
        "connection_files": "import glob\nmine = glob.glob('/tmp/llm-lab-grade-*/conn/kernel.json')\n"
        f"LEAK = len(mine) > 1 or bool(glob.glob({str(Path.home())!r} + "
        "'/.local/share/jupyter/runtime/*.json'))\n",
        "socket_swap": "import glob\nsock = sorted(glob.glob('/tmp/llm-lab-grade-*/conn/k-*'))[0]\nos.unlink(sock)\n"
        "os.symlink('/run/some-host.sock', sock)\nLEAK = True\n",
        "torch_patch": "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
        "torch.Tensor.__eq__ = lambda a, b: torch.ones_like(a, dtype=torch.bool)\n",
        "settrace": "import sys\n\ndef _t(frame, event, arg):\n    if event == 'return' and frame.f_code.co_name == 'grade':\n"  # noqa: E501
        "        frame.f_locals['result'] = 'pass'\n    return _t\n\nsys.settrace(_t)\nsys.setprofile(_t)\n",
        "sys_modules": "import sys, types, base64, json\nfake = types.ModuleType('fake')\nfake.capture = lambda k, g: None\n"  # noqa: E501
        "fake.serve = lambda req: print(json.loads(base64.b64decode(req))['nonce'] + base64.b64encode("
        "json.dumps({'object': {'handle': 1, 'kind': 'function', 'callable': True, 'name': 'x'}, "
        "'value': True, 'status': 'pass'}).encode()).decode())\n"
        "sys.modules['llm_lab.exercises.grading.answering'] = fake\n",
        "output_flood": "for _ in range(200):\n    print('x' * 200_000)\n",
        # the grader's own memory: a meta layer costs nothing in the kernel and its full size where it is rebuilt
        "meta_linear": "from torch import nn\n\nclass Big(nn.Module):\n    def __init__(self):\n        super().__init__()\n"  # noqa: E501
        "        self.W = nn.Linear(23170, 23170, device='meta')\n\n"
        "def causal_mask(num_tokens):\n    return Big()\n",
        "comm_flood": "import comm\nc = comm.create_comm(target_name='jupyter.widget', data={'state': {'_model_module': "  # noqa: E501
        "'@jupyter-widgets/base', '_model_module_version': '1.2.0', '_model_name': 'LayoutModel'}, "
        "'buffer_paths': []})\n"
        "for i in range(COMM_MESSAGES):\n    c.send({'state': {f'k{i}': 'y' * 1_000_000}})\n".replace(
            "COMM_MESSAGES", str(COMM_MESSAGES)
        ),
        "display_flood": "from IPython.display import display, update_display\ndisplay('x', display_id='d')\n"
        "for _ in range(100):\n    update_display({'text/plain': 'y' * 2_000_000}, raw=True, display_id='d')\n",
        # what the grader writes: a message that would be Markdown, HTML, a link and reversed text in the report
        "forged_message": "pass\n\ndef causal_mask(num_tokens):\n    raise ValueError(" + repr(FORGED) + ")\n",
        "pickle_reply": "class Evil:\n    def __reduce__(self):\n        return (os.system, ('touch /tmp/pwned',))\n\n"
        "def causal_mask(num_tokens):\n    return Evil()\n",
    }
    own_body = ("pickle_reply", "meta_linear", "forged_message")
    wrapped = {
        name: "import os\nimport torch\n\nLEAK = False\ntry:\n" + _indent(code) + "except Exception:\n"
        "    pass\n" + (BODY if name not in own_body else "")
        for name, code in t.items()
    }
    return {**wrapped, **WHOLE}


# Tricks that hand in llm_lab's own answer by a route the grader's reading of the source once missed, or answer
# from a table of the public checker's answers: each is the whole solution cell (the fixture's course cell imports
# llm_lab's causal_mask and mask_and_renormalize before the exercises, as notebook 01's does). ``STATUS``: the
# verdict each gets; ``ADDED``: a cell the learner added after the solution cell.
_THREADED = (
    "out = []\n    worker = threading.Thread(target=lambda: out.append({}))\n    worker.start()\n"
    "    worker.join()\n    return out[0]\n"
)
WHOLE = {
    "course_import_setprofile": "import sys\n\nsys.setprofile = lambda *a, **k: None\n",
    "course_import_only": "LEAK = True\n",
    "definition_never_runs": "if False:\n    def causal_mask(num_tokens):\n        return None\n",
    "added_cell_import": "import torch\n\nLEAK = False\n" + BODY,
    "thread_reference": "import threading\n\n\ndef causal_mask(num_tokens):\n    "
    + _THREADED.format('__import__("llm_lab").causal_mask(num_tokens)'),
    "hidden_thread_import": "def causal_mask(num_tokens):\n    threading = __import__('threading')\n    "
    + _THREADED.format("__import__('llm_lab').masks.causal_mask(num_tokens)"),
    "prestarted_worker": "import queue\nimport threading\n\nllm_lab = __import__('llm_lab')\n"
    "jobs, answers = queue.Queue(), queue.Queue()\nthreading.Thread(target=lambda: [answers.put("
    "llm_lab.causal_mask(jobs.get())) for _ in iter(int, 1)], daemon=True).start()\n\n\n"
    "def causal_mask(num_tokens):\n    jobs.put(num_tokens)\n    return answers.get()\n",
    "dunder_import": "def causal_mask(num_tokens):\n    return __import__('llm_lab').causal_mask(num_tokens)\n",
    "importlib_base": "import importlib\n\nmasks = importlib.import_module('llm_lab.masks')\n\n\n"
    "def causal_mask(num_tokens):\n    return getattr(masks, 'causal_mask')(num_tokens)\n",
    "who_hides_import": "%who\nfrom llm_lab import causal_mask\n",
    "capture_hides_import": "%%capture\nfrom llm_lab import causal_mask\n",
    "course_binding_renamed": "_ref = causal_mask\n\n\ndef causal_mask(num_tokens):\n    return _ref(num_tokens)\n",
    "exec_hidden": "exec('from llm_lab ' + 'import causal_mask')\n",
    "replay_table": "import torch\n\n# the public check's answers, recorded\n"
    "TABLE = {t: torch.ones(t, t, dtype=torch.bool).triu(diagonal=1) for t in (5, 1, 9, 2)}\n\n\n"
    "def causal_mask(num_tokens):\n    if num_tokens in TABLE:\n        return TABLE[num_tokens]\n"
    "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=0)\n",
}
ADDED = {"added_cell_import": "from llm_lab import causal_mask\n"}
STATUS = {
    "course_import_setprofile": "tampered",
    "course_import_only": "missing",
    "definition_never_runs": "missing",
    "added_cell_import": "reference",
    "thread_reference": "tampered",
    "hidden_thread_import": "tampered",
    "prestarted_worker": "tampered",
    "dunder_import": "reference",
    "importlib_base": "error",  # importlib is not a module a learner cell may import
    "who_hides_import": "reference",
    "capture_hides_import": "reference",
    "course_binding_renamed": "reference",
    "exec_hidden": "error",
    "replay_table": "fail",
}


def notebook(fx, notebooks: Path, student: str, code: str):
    """The hostile submission: ``code`` in causal_mask's solution cell (with the learner's added cell, if the
    trick has one), the mask_and_renormalize stub. ``fx``: tests/_course_fixture.py."""
    nb = fx.filled(notebooks, causal_mask=code)
    first, second = fx.solution_cells(nb)
    second.source = "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"
    if student in ADDED:
        import nbformat

        nb.cells.insert(nb.cells.index(first) + 1, nbformat.v4.new_code_cell(ADDED[student]))
    return nb


# ---- files that are not notebooks, and names that would forge the reports ------------------------------------

COMM_MESSAGES = 400  # of 1 MB each: nbclient kept every widget state (+743 MiB in the grader)
FORGED = "<img src=x onerror=alert(1)> [pay](https://evil.example) **A+** `x` | \u202egnp.exe"
SPECIAL = ("key_link", "key_folder", "key_inside", "shadow", "zero", "pipe", "deep")  # each a problem row
NAMES = {
    "=1+2": "a formula in grades.csv",
    "<img src=x onerror=alert(1)>": "HTML in report.md and feedback",
    "[grade](javascript:alert(1))": "a Markdown link",
    "\u202egnp.exe": "a right-to-left override",
}
TWINS = ("twin~a", "twin_a")  # one feedback file for both, before


def plant(h: Host, folder: Path, name: str) -> None:
    """Put hostile entry ``name`` (one of SPECIAL) at ``folder/<it>``: links to the answer key, its folder,
    /etc/shadow and /dev/zero, a named pipe, a notebook nested 100,000 deep."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "01_demo.ipynb"
    if name == "key_link":
        target.symlink_to(h.answer_key)
    elif name == "key_folder":  # the whole folder is a link to the instructor notebooks
        folder.rmdir()
        folder.symlink_to(h.answer_key.parent, target_is_directory=True)
    elif name == "key_inside":  # a real folder, a linked folder inside it
        (folder / "mine").symlink_to(h.answer_key.parent, target_is_directory=True)
    elif name == "shadow":
        target.symlink_to("/etc/shadow")
    elif name == "zero":
        target.symlink_to("/dev/zero")
    elif name == "pipe":
        os.mkfifo(target)
    elif name == "deep":
        target.write_text('{"cells": [' + "[" * 100_000 + "]" * 100_000 + "]}")


def host_files_unread(results: dict, students=SPECIAL) -> dict[str, str]:
    """The special entries that were NOT each a problem row with 0 points (want: {})."""
    wrong = {}
    for s in students:
        rows = [r for r in results if r.student == s]
        if not rows or any(not r.problem or r.total for r in rows):
            wrong[s] = [(r.path.name, r.problem, r.total) for r in rows] or "no row"
    return wrong


def _indent(code: str) -> str:
    return "".join("    " + line + "\n" if line.strip() else "\n" for line in code.splitlines())


def host_for(root: Path, notebooks: Path, submissions: Path) -> Host:
    import llm_lab

    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    return Host(
        root=root,
        package=Path(llm_lab.__file__).resolve().parent,
        answer_key=next(notebooks.glob("en/01_*.ipynb")),
        submissions=submissions,
        site=site,
    )


def rendered_markdown(text: str) -> str:
    """report.md as a Markdown viewer shows it, raw HTML let through (as GitHub and VS Code do for many tags)."""
    import pytest

    mistune = pytest.importorskip("mistune", reason="mistune comes with nbconvert (make instructor-setup)")
    return mistune.create_markdown(escape=False, plugins=["url", "table", "strikethrough"])(text)
