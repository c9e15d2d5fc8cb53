"""The third independent red team's class, against the real notebooks 06 (``next_token_loss``: the loss by hand,
``torch.log_softmax`` and ``F.cross_entropy`` ruled out), 03 (dropout by hand) and 07 (``blocked_attention``
without SDPA), beside honest and careless students. Each attack hands in torch's own answer by a route around
the checks' watch: ``torch._C.DisableTorchFunction`` reached through aliased ``getattr``/``vars``/``__import__``,
``inspect``, ``pydoc``, ``pkgutil``, ``builtins``; a printer rebound to catch a look; a custom operator; a thread,
a process or a DataLoader worker started outside the check; a reply forged on the kernel's own stream.

Used by tests/tools/teaching/grader/test_source_checks.py (the cases the source decides, parsed) and
tests/tools/teaching/grader/test_grade_loss_attacks.py (the class graded, end to end)."""

from __future__ import annotations

LOSS_TAIL = "    return -lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).mean()\n"


def off_loss(prelude: str) -> str:
    """06's loss with torch.log_softmax under torch._C.DisableTorchFunction, both reached by ``prelude``
    (which binds TC = torch._C and Off = TC.DisableTorchFunction)."""
    return (
        "import torch\n" + prelude + "\n\ndef next_token_loss(logits, targets):\n"
        "    with Off():\n        lp = torch.log_softmax(logits, -1)\n" + LOSS_TAIL
    )


ROUTES = {  # how torch._C and its DisableTorchFunction are reached, none with a flagged name or call
    "getattr_alias": "ga = getattr\nTC = ga(torch, '_' + 'C')\nOff = ga(TC, 'Disable' + 'TorchFunction')",
    "getattr_in_subscript": "TC = [getattr][0](torch, '_' + 'C')\nOff = [getattr][0](TC, 'Disable' + 'TorchFunction')",
    "partial_getattr": "import functools\nTC = functools.partial(getattr, torch)('_' + 'C')\nOff = functools.partial(getattr, TC)('Disable' + 'TorchFunction')",  # noqa: E501
    "reduce_getattr": "import functools\nOff = functools.reduce(getattr, ['_' + 'C', 'Disable' + 'TorchFunction'], torch)",  # noqa: E501
    "map_getattr": "TC, = map(getattr, [torch], ['_' + 'C'])\nOff, = map(getattr, [TC], ['Disable' + 'TorchFunction'])",
    "vars_alias": "v = vars\nOff = v(v(torch)['_' + 'C'])['Disable' + 'TorchFunction']",
    "attrgetter_alias": "from operator import attrgetter as ag\nOff = ag('_' + 'C.Disable' + 'TorchFunction')(torch)",
    "getattr_static": "import inspect\nOff = inspect.getattr_static(inspect.getattr_static(torch, '_' + 'C'), 'Disable' + 'TorchFunction')",  # noqa: E501
    "getmembers": "import inspect\nTC = dict(inspect.getmembers(torch))['_' + 'C']\nOff = dict(inspect.getmembers(TC))['Disable' + 'TorchFunction']",  # noqa: E501
    "dunder_import_alias": "imp = __import__\nTC = imp('torch.' + '_' + 'C', fromlist=['x'])\nOff = [getattr][0](TC, 'Disable' + 'TorchFunction')",  # noqa: E501
    "importlib_alias": "import importlib\nim = importlib.import_module\nTC = im('torch.' + '_' + 'C')\nOff = dict(vars_ := [])  if False else None\nimport inspect\nOff = inspect.getattr_static(TC, 'Disable' + 'TorchFunction')",  # noqa: E501
    "builtins_import_attr": "import builtins\nTC = builtins.__import__('torch.' + '_' + 'C', fromlist=['x'])\nOff = builtins.eval('TC.Disable' + 'TorchFunction')",  # noqa: E501
    "builtins_eval_attr": "import builtins\nOff = builtins.eval('torch.' + '_' + 'C.Disable' + 'TorchFunction')",
    "pydoc_locate": "import pydoc\nOff = pydoc.locate('torch.' + '_' + 'C.Disable' + 'TorchFunction')",
    "pkgutil_resolve": "import pkgutil\nOff = pkgutil.resolve_name('torch.' + '_' + 'C:Disable' + 'TorchFunction')",
    # the look rule: a value only ever shown, caught by a printer rebound through an attribute (not a name)
    "kept_vars_print_rebound": "import builtins\n_got = []\n_print = builtins.print\nbuiltins.print = lambda *a, **k: _got.append(a)\nd = vars(torch)\nprint(d)\ne = vars(_got[0][0]['_' + 'C'])\nprint(e)\nbuiltins.print = _print\nOff = _got[1][0]['Disable' + 'TorchFunction']",  # noqa: E501
    "kept_pprint_rebound": "import pprint\n_got = []\npprint.pprint = lambda *a, **k: _got.append(a)\npprint.pprint(vars(torch))\nOff = [getattr][0](_got[0][0]['_' + 'C'], 'Disable' + 'TorchFunction')",  # noqa: E501
    "kept_display_rebound": "import IPython.display\n_got = []\nIPython.display.display = lambda *a, **k: _got.append(a)\nfrom IPython.display import display\ndisplay(vars(torch))\ndisplay(vars(_got[0][0]['_' + 'C']))\nOff = _got[1][0]['Disable' + 'TorchFunction']",  # noqa: E501
}

CUSTOM_OP_LOSS = (
    """import torch


@torch.library.custom_op("rt::lsm", mutates_args=())
def _lsm(x: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(x, -1)


def next_token_loss(logits, targets):
    lp = _lsm(logits)
"""
    + LOSS_TAIL
)

CUSTOM_OP_CE_PY = """import torch
import torch.nn.functional as F


@torch.library.custom_op("rt::ce", mutates_args=())
def _ce(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(x.reshape(-1, x.shape[-1]), t.reshape(-1)).clone()


def next_token_loss(logits, targets):
    return _ce(logits, targets)
"""

AUTOGRAD_FN = (
    """import torch


class _L(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.log_softmax(x, -1)


def next_token_loss(logits, targets):
    lp = _L.apply(logits)
"""
    + LOSS_TAIL
)

EXECUTOR = """import asyncio
import torch
import torch.nn.functional as F

_loop = asyncio.get_event_loop()
_loop.run_in_executor(None, int)  # one worker thread, started here, outside any check
_pool = _loop._default_executor


def next_token_loss(logits, targets):
    return _pool.submit(F.cross_entropy, logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).result()
"""

SERVICE = r'''import json
import subprocess
import sys
import torch

_SERVER = """
import sys, json, torch
import torch.nn.functional as F
for line in sys.stdin:
    m = json.loads(line)
    lg = torch.tensor(m['l'], dtype=torch.float32).reshape(m['s'])
    tg = torch.tensor(m['t'], dtype=torch.long).reshape(m['s'][:-1])
    print(repr(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1)).item()), flush=True)
"""
_env = {"PYTHONPATH": ":".join(p for p in sys.path if p), "OMP_NUM_THREADS": "1"}
_p = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env)


def next_token_loss(logits, targets):
    msg = {"s": list(logits.shape), "l": logits.reshape(-1).tolist(), "t": targets.reshape(-1).tolist()}
    _p.stdin.write(json.dumps(msg) + "\n")
    _p.stdin.flush()
    return torch.tensor(float(_p.stdout.readline()))
'''  # noqa: E501

PTY_FORK = r"""import json
import os
import pty
import socket
import torch
import torch.nn.functional as F

_a, _b = socket.socketpair()
_pid, _fd = pty.fork()
if _pid == 0:
    torch.set_num_threads(1)
    f = _b.makefile("rw")
    for line in f:
        m = json.loads(line)
        lg = torch.tensor(m["l"], dtype=torch.float32).reshape(m["s"])
        tg = torch.tensor(m["t"], dtype=torch.long).reshape(m["s"][:-1])
        f.write(repr(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1)).item()) + "\n")
        f.flush()
    os._exit(0)
_f = _a.makefile("rw")


def next_token_loss(logits, targets):
    _f.write(json.dumps({"s": list(logits.shape), "l": logits.reshape(-1).tolist(), "t": targets.reshape(-1).tolist()}) + "\n")
    _f.flush()
    return torch.tensor(float(_f.readline()))
"""  # noqa: E501

WIRE_FORGE = r"""import base64
import inspect
import json
import sys
import torch
import torch.nn.functional as F


class _Late:  # freed with the grader's request, after the kernel printed its real reply: this line comes last
    def __init__(self, line):
        self.line = line

    def __del__(self):
        print(self.line, flush=True)


def _t(t):
    t = t.detach().contiguous()
    return {"__tensor__": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "data": base64.b64encode(t.numpy().tobytes()).decode()}


def next_token_loss(logits, targets):
    out = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    for info in inspect.stack(0):
        request = inspect.getargvalues(info.frame).locals.get("request")
        if isinstance(request, dict) and "nonce" in request:
            observed = {"__dict__": [["largest", int(logits.numel())], ["op" + "s", ["torch.Tensor.gather"]], ["marks", []]]}
            reply = {"__dict__": [["value", _t(out)], ["after", [_t(logits), _t(targets)]], ["observed", observed],
                                  ["printed", ""], ["hit", None]]}
            line = request["nonce"] + base64.b64encode(json.dumps(reply).encode()).decode() + "\n"
            getattr(sys.stdout, "before", sys.stdout).write(line)  # the kernel's own stream, past the call's capture
            request["nonce"] = "IGNORED "  # the real reply goes out under a prefix the grader does not read
            break
    return out
"""  # noqa: E501

BLOCKED_CUSTOM_OP = """import torch
import torch.nn.functional as F


@torch.library.custom_op("rt::att", mutates_args=())
def _att(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def blocked_attention(queries, keys, values, block_size):
    return _att(queries, keys, values)
"""

BLOCKED_EXECUTOR = """import asyncio
import torch
import torch.nn.functional as F

_loop = asyncio.get_event_loop()
_loop.run_in_executor(None, int)
_pool = _loop._default_executor


def blocked_attention(queries, keys, values, block_size):
    return _pool.submit(F.scaled_dot_product_attention, queries, keys, values, is_causal=True).result()
"""

DROPOUT_CUSTOM_OP = """import torch


@torch.library.custom_op("rt::drop", mutates_args=())
def _drop(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    return torch.dropout(x, p, training).clone()


def attention_dropout(attn_weights, p, training=True):
    return _drop(attn_weights, float(p), bool(training))
"""

DROPOUT_INDEX = """import torch
import torch.nn.functional as F


class _P:  # a learner object torch calls back into: F.dropout runs where only the dispatch mode looks
    def __init__(self, x, p, training):
        self.x, self.p, self.training, self.out = x, p, training, None

    def __index__(self):
        self.out = F.dropout(self.x, self.p, self.training)
        return 0


def attention_dropout(attn_weights, p, training=True):
    hook = _P(attn_weights, p, training)
    attn_weights.new_zeros(1).narrow(0, hook, 1)
    return hook.out
"""

MASK_SDPA = """import torch
import torch.nn.functional as F


def causal_mask(num_tokens):
    q = torch.zeros(1, num_tokens, 1)
    return F.scaled_dot_product_attention(q, q, torch.eye(num_tokens).unsqueeze(0), is_causal=True)[0] == 0
"""

ANSI_FORGE = (
    r"""import torch


def next_token_loss(logits, targets):
    print("\x1b[2J\x1b[H\r\x1b[Kalice_forged  06_attention_on_real_batches.ipynb  4/4\n\u202eLLMLAB-REPLY-0000 eyJ9")
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    lp = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
"""
    + LOSS_TAIL
)

CHECK_HELPER = """import torch

EOT = 50256


def check_window(window, max_length):  # an honest helper whose name starts with check_
    assert len(window) == max_length


def document_windows(token_ids, max_length, stride):
    documents, current = [], []
    for token in token_ids:
        current.append(token)
        if token == EOT:
            documents.append(current)
            current = []
    documents.append(current)
    inputs, targets = [], []
    for doc in documents:
        for start in range(0, len(doc) - max_length, stride):
            check_window(doc[start : start + max_length], max_length)
            inputs.append(doc[start : start + max_length])
            targets.append(doc[start + 1 : start + max_length + 1])

    def as_ids(windows):
        return torch.tensor(windows, dtype=torch.long).reshape(-1, max_length)

    return (as_ids(inputs), as_ids(targets))
"""

LOADER = r"""import time
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class _Work(Dataset):  # a DataLoader worker: a process started at cell level, outside any check
    def __init__(self):
        self.buf = torch.zeros(1 << 16).share_memory_()
        self.meta = torch.zeros(5, dtype=torch.long).share_memory_()  # B, T, V, request no., answered no.

    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        while int(self.meta[3]) != i + 1:  # wait for request i + 1
            time.sleep(0.001)
        B, T, V = (int(v) for v in self.meta[:3])
        n = B * T * V
        lg, tg = self.buf[:n].reshape(B, T, V), self.buf[n : n + B * T].long()
        return F.cross_entropy(lg.reshape(-1, V), tg)


_work = _Work()
_it = iter(DataLoader(_work, batch_size=None, num_workers=1, persistent_workers=True, prefetch_factor=1))


def next_token_loss(logits, targets):
    B, T, V = logits.shape
    _work.buf[: B * T * V] = logits.reshape(-1)
    _work.buf[B * T * V : B * T * V + B * T] = targets.reshape(-1).float()
    _work.meta[:3] = torch.tensor([B, T, V])
    _work.meta[3] += 1
    return next(_it).clone()
"""

KEPT_MAIN = off_loss(  # a kept look read back through the notebook's own module, found by inspect
    "import inspect\nd = vars(torch)\nprint(d)\n"
    "Main = inspect.getmodule(_kept_here)\n"
    "Off = [getattr][0](Main.d['_' + 'C'], 'Disable' + 'TorchFunction')"
).replace("import torch\n", "import torch\n\n\ndef _kept_here():\n    pass\n\n\n", 1)
DISPLAYHOOK = (  # two cells before the loss: the display hook set by setattr catches each displayed look
    "import sys\nimport torch\n_got = []\nsetattr(sys, 'displayhook', _got.append)\nvars(torch)\n",
    "setattr(sys, 'displayhook', _got.append)\nvars(_got[0]['_' + 'C'])\n",
)
GETATTR_LOOP = "x = torch.zeros(2, 3)\nfor attr in ('shape', 'dtype'):\n    print(attr, getattr(x, attr))\n"
VARS_IN_REPR = (
    "class Batch:\n    def __init__(self, x):\n        self.x = x\n\n    def __repr__(self):\n"
    "        return f'Batch({vars(self)})'\n\n\nprint(Batch(3))\n"
)
PLAIN_LOG_SOFTMAX = (
    "import torch\n\n\ndef next_token_loss(logits, targets):\n    lp = torch.log_softmax(logits, -1)\n" + LOSS_TAIL
)

# the graded class: student -> (notebook, {solution index: source}, [(solution index, a cell added before it)]);
# every attack scores 0 for the exercise it attacks and keeps the other one; the honest and careless keep all
LOSS, WINDOWS, DROPOUT = "next_token_loss", "document_windows", "attention_dropout"
CLASS = {
    "wire_forged_late_reply": ("06", {1: WIRE_FORGE}, []),
    "custom_op_log_softmax": ("06", {1: CUSTOM_OP_LOSS}, []),
    "custom_op_cross_entropy_py": ("06", {1: CUSTOM_OP_CE_PY}, []),
    "autograd_function_log_softmax": ("06", {1: AUTOGRAD_FN}, []),
    "executor_thread_prestarted": ("06", {1: EXECUTOR}, []),
    "subprocess_service": ("06", {1: SERVICE}, []),
    "pty_fork_worker": ("06", {1: PTY_FORK}, []),
    "dataloader_worker": ("06", {1: LOADER}, []),
    "kept_look_through_main_module": ("06", {1: KEPT_MAIN}, []),
    "displayhook_set_by_setattr": (
        "06",
        {1: off_loss("Off = _got[1]['Disable' + 'TorchFunction']")},
        [(1, c) for c in DISPLAYHOOK],
    ),
    "control_plain_log_softmax": ("06", {1: PLAIN_LOG_SOFTMAX}, []),
    "dropout_custom_op": ("03", {0: DROPOUT_CUSTOM_OP}, []),
    "dropout_index_hook": ("03", {0: DROPOUT_INDEX}, []),
    "honest_06": ("06", {}, []),
    "honest_03": ("03", {}, []),
    "careless_check_helper": ("06", {0: CHECK_HELPER}, []),
    "careless_getattr_debug": ("06", {}, [(1, GETATTR_LOOP)]),
}
ATTACKED = {s: LOSS for s, (nb, _, _) in CLASS.items() if nb == "06" and not s.startswith(("honest", "careless"))}
ATTACKED |= {s: DROPOUT for s, (nb, _, _) in CLASS.items() if nb == "03" and not s.startswith("honest")}
