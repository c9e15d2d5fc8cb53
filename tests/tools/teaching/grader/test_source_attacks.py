"""The red teams' routes around the grader, read from the source alone (tools/teaching/grader/source_hidden.py,
source_tampering.py, source_looks.py): the reflective built-ins handed around as values, the modules a learner cell
may not import, frames, torch's doors, workers and streams, a module's attributes patched, the looks kept in names;
then the third red team's class as handed in (tests/_loss_attacks.py). Each attack is named for its route; the
honest cells beside them are read clean. Parsed, never run (the graded class: test_grade_loss_attacks.py)."""

from __future__ import annotations

import _loss_attacks as rt
import pytest
from _source_cases import RIGHT, outcome, read, verdict

# a printer rebound on its module is tampering (the module's attribute set), the other routes unreadable
PATCHING = dict.fromkeys(("kept_vars_print_rebound", "kept_pprint_rebound", "kept_display_rebound"), "tampered")
CASES = [
    # the reflective built-ins handed around as values, and the modules that reach frames, objects or processes
    ("getattr bound to another name", [RIGHT + "ga = getattr\nx = ga(torch, '_' + 'C')\n"], "error"),
    ("getattr in a list", [RIGHT + "x = [getattr][0](torch, 'nn')\n"], "error"),
    ("getattr handed to partial", [RIGHT + "import functools\nf = functools.partial(getattr, torch)\n"], "error"),
    ("getattr handed to reduce", [RIGHT + "import functools\nx = functools.reduce(getattr, ['nn'], torch)\n"], "error"),
    ("vars bound to another name", [RIGHT + "v = vars\nx = v(torch)\n"], "error"),
    ("__import__ bound to another name", [RIGHT + "imp = __import__\nx = imp('torch')\n"], "error"),
    ("import_module as a value", [RIGHT + "import operator\nf = operator.attrgetter\n"], "error"),
    ("attrgetter imported under another name", ["from operator import attrgetter as ag\n" + RIGHT], "error"),
    ("inspect imported", ["import inspect\n" + RIGHT], "error"),
    ("builtins imported", ["import builtins\n" + RIGHT], "error"),
    ("pydoc imported", ["from pydoc import locate\n" + RIGHT], "error"),
    ("pty imported", ["import pty\n" + RIGHT], "error"),
    ("subprocess imported", ["import subprocess\n" + RIGHT], "error"),
    ("asyncio imported", ["import asyncio\n" + RIGHT], "error"),
    ("__import__ of a module not read", [RIGHT + "x = __import__('inspect')\n"], "error"),
    (
        "a frame reached through a traceback",
        [RIGHT + "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__\n"],
        "error",
    ),
    ("sys._getframe", [RIGHT + "import sys\nf = sys._getframe(1)\n"], "tampered"),
    ("every class from an empty tuple", [RIGHT + "x = ().__class__.__bases__[0].__subclasses__()\n"], "error"),
    ("a bound method's module", [RIGHT + "x = print.__self__\n"], "error"),
    ("honest, getattr with a written name", [RIGHT + "x = torch.ones(2)\nprint(getattr(x, 'shape'))\n"], None),
    (
        "honest, the usual imports",
        [
            "import math\nimport random\nimport time\nfrom collections import Counter\n"
            "import numpy as np\nimport matplotlib.pyplot as plt\n" + RIGHT
        ],
        None,
    ),
    (
        "print rebound as an attribute, then a look",
        [RIGHT + "import sys\nsys.modules['builtins'].print = len\nprint(vars(torch))\n"],
        "tampered",
    ),
    (
        "pprint.pprint rebound, then a look",
        [RIGHT + "import pprint\npprint.pprint = len\npprint.pprint(vars(torch))\n"],
        "tampered",
    ),
    (
        "display rebound on its module, then a look",
        [
            RIGHT + "import IPython.display\nIPython.display.display = len\n"
            "from IPython.display import display\ndisplay(vars(torch))\n"
        ],
        "tampered",
    ),
    (
        "the display hook set by setattr, then a look",
        [RIGHT + "import sys\nsetattr(sys, 'displayhook', len)\nvars(torch)\n"],
        "tampered",
    ),
    (
        "a kept look read as an attribute of a module",
        [RIGHT + "d = vars(torch)\nprint(d)\nimport inspect\nx = inspect.getmodule(causal_mask).d\n"],
        "error",
    ),
    (
        "honest, a check helper of the learner's own",
        ["def check_window(x):\n    assert x.shape[0] == 3\n\n\n" + RIGHT],
        None,
    ),
    ("a checker redefined", ["def check_causal_mask(fn):\n    print('ok')\n\n\n" + RIGHT], "tampered"),
    (
        "a custom operator",
        [
            RIGHT + "import torch\n\n\n@torch.library.custom_op('x::f', mutates_args=())\n"
            "def f(t: torch.Tensor) -> torch.Tensor:\n    return t\n"
        ],
        "tampered",
    ),
    ("torch.library imported", ["from torch import library\n" + RIGHT], "tampered"),
    ("a custom_op imported by name", ["from torch.library import custom_op\n" + RIGHT], "tampered"),
    ("torch's internals by a private name", [RIGHT + "x = torch._refs\n"], "tampered"),
    ("a private torch module imported", ["import torch._prims\n" + RIGHT], "tampered"),
    (
        "a DataLoader with worker processes",
        [RIGHT + "from torch.utils.data import DataLoader\nd = DataLoader([1, 2], num_workers=1)\n"],
        "tampered",
    ),
    (
        "honest, a DataLoader in the kernel's own process",
        [RIGHT + "from torch.utils.data import DataLoader\nd = DataLoader([1, 2], num_workers=0)\n"],
        None,
    ),
    ("the kernel's stdout replaced", [RIGHT + "import sys\nsys.stdout = open('/dev/null', 'w')\n"], "tampered"),
    (
        "the kernel's stdout redirected",
        [RIGHT + "import contextlib\nr = contextlib.redirect_stdout(None)\n"],
        "tampered",
    ),
    ("redirect_stdout imported", ["from contextlib import redirect_stdout\n" + RIGHT], "tampered"),
    ("a shell through os.system", [RIGHT + "import os\nos.system('python3 -c 1')\n"], "tampered"),
    ("a process through os.posix_spawn", [RIGHT + "import os\nos.posix_spawn('/bin/true', [], {})\n"], "tampered"),
    ("IPython beyond its display", ["from IPython.lib import backgroundjobs\n" + RIGHT], "error"),
    ("scipy (its workers= runs a process pool)", ["import scipy\n" + RIGHT], "error"),
    ("honest, IPython's display", ["from IPython.display import display\n" + RIGHT], None),
    (
        "json.loads patched",
        [RIGHT + "import json\n_loads = json.loads\njson.loads = lambda s: _loads(s)\n"],
        "tampered",
    ),
    ("a decoder class patched", ["import json\njson.decoder.JSONDecoder.decode = print\n" + RIGHT], "tampered"),
    (
        "a module patched through an alias",
        ["import torch.nn.functional\nG = torch.nn.functional\nG.softmax = print\n" + RIGHT],
        "tampered",
    ),
    ("a class's method patched", ["from torch import nn\nnn.Linear.forward = print\n" + RIGHT], "tampered"),
    ("stdout's write patched", ["import sys\nsys.stdout.write = print\n" + RIGHT], "tampered"),
    ("an object's class replaced", [RIGHT + "class A:\n    pass\n\n\na = A()\na.__class__ = object\n"], "tampered"),
    ("sys.modules through os", ["import os\nm = os.sys.modules\n" + RIGHT], "error"),
    ("sys.modules through torch", ["x = torch.sys.modules\n" + RIGHT], "error"),
    ("sys.modules through collections", ["import collections\nx = collections._sys\n" + RIGHT], "error"),
    (
        "honest, gc and logging",
        ["import gc\nimport logging\n\ngc.collect()\nlogging.basicConfig(level=logging.INFO)\n" + RIGHT],
        None,
    ),
    (
        "honest, attributes of the learner's own objects",
        [
            RIGHT
            + "class A:\n    pass\n\n\na = A()\na.x = torch.ones(2)\nlayer = torch.nn.Linear(2, 2)\nlayer.extra = 1\n"
        ],
        None,
    ),
    ("a look kept in a name and never read", [RIGHT + "d = vars(torch)\n"], None),
    ("honest, a look kept in a name, then printed", [RIGHT + "d = vars(torch.nn.Linear(2, 2))\nprint(d)\n"], None),
    (
        "honest, a look kept, passed on and displayed",
        [
            RIGHT + "d = vars(torch.nn.Linear(2, 2))\n",
            "keys = sorted(d.keys())\nprint(len(keys), d['in_features'])\nkeys\n",
        ],
        None,
    ),
    ("a kept look written to", [RIGHT + "d = vars(torch)\nd['x'] = 1\n"], "error"),
    ("a kept look's method that writes", [RIGHT + "d = vars(torch)\nd.update(x=1)\n"], "error"),
    ("a kept look popped inside print", [RIGHT + "d = vars(torch)\nprint(d.pop('x'))\n"], "error"),
    (
        "a kept look called inside print",
        [RIGHT + "import llm_lab\nd = vars(llm_lab)\nprint(d['causal_mask'](3))\n"],
        "error",
    ),
    ("a kept look handed to a function", [RIGHT + "d = vars(torch)\nlen(d)\nsorted(d, key=str)\n"], "error"),
    ("a kept look returned by a function", [RIGHT + "d = vars(torch)\n\n\ndef g():\n    return d\n"], "error"),
    ("a kept look bound again by a loop", [RIGHT + "d = vars(torch)\nfor d in [1]:\n    pass\nprint(d)\n"], "error"),
    ("a kept look bound again with +=", [RIGHT + "d = vars(torch)\nd += 1\nprint(d)\n"], "error"),
    ("a kept look next to a read of the output history", [RIGHT + "d = vars(torch)\nprint(d)\nx = _\n"], "error"),
    # the third red team's class (tests/_loss_attacks.py), each cell as handed in, before a right causal_mask
    *[
        # a printer rebound on its module is tampering (the module's attribute set), the other routes unreadable
        (f"torch's modes switched off, reached by {route}", [rt.off_loss(p), RIGHT], PATCHING.get(route, "error"))
        for route, p in rt.ROUTES.items()
    ],
    (
        "the display hook set by setattr catches a look",
        [*rt.DISPLAYHOOK, rt.off_loss("Off = _got[1]"), RIGHT],
        "tampered",
    ),
    ("a kept look read through the main module from inspect", [rt.KEPT_MAIN, RIGHT], "error"),
    ("a custom operator around log_softmax", [rt.CUSTOM_OP_LOSS, RIGHT], "tampered"),
    ("a custom operator around cross_entropy", [rt.CUSTOM_OP_CE_PY, RIGHT], "tampered"),
    ("a custom operator around SDPA", [rt.BLOCKED_CUSTOM_OP, RIGHT], "tampered"),
    ("a custom operator around dropout", [rt.DROPOUT_CUSTOM_OP, RIGHT], "tampered"),
    ("an executor thread started at cell level", [rt.EXECUTOR, RIGHT], "error"),
    # asyncio's lines left out, the rest of the cell runs: its def names SDPA, a ready-made mask for 01
    ("an executor thread running SDPA", [rt.BLOCKED_EXECUTOR, RIGHT], "fail"),
    ("a subprocess serving the loss", [rt.SERVICE, RIGHT], "error"),
    ("a pty-forked worker serving the loss", [rt.PTY_FORK, RIGHT], "error"),
    ("a reply forged from the frames inspect finds", [rt.WIRE_FORGE, RIGHT], "error"),
    ("a DataLoader worker serving the loss", [rt.LOADER, RIGHT], "tampered"),
    ("an autograd.Function (the checks decide)", [rt.AUTOGRAD_FN, RIGHT], None),
    ("dropout through an __index__ hook (the checks decide)", [rt.DROPOUT_INDEX, RIGHT], None),
    ("escape codes and bidi marks printed (the checks decide)", [rt.ANSI_FORGE, RIGHT], None),
    ("honest, a check_window helper of the learner's", [rt.CHECK_HELPER, RIGHT], None),
    ("honest, getattr over a written tuple of names", [rt.GETATTR_LOOP, RIGHT], None),
    (
        "honest, getattr and hasattr over a written list of names",
        ["x = torch.zeros(2)\nfor a in ['shape', 'dtype']:\n    print(a, getattr(x, a), hasattr(x, a))\n", RIGHT],
        None,
    ),
    (
        "getattr over a tuple with a computed name",
        ["n = '_' + 'C'\nfor a in ('shape', n):\n    getattr(torch, a)\n", RIGHT],
        "error",
    ),
    (
        "getattr over a tuple, the name rebound in the loop",
        ["for a in ('shape',):\n    a = a + 'x'\n    getattr(torch, a)\n", RIGHT],
        "error",
    ),
    (
        "getattr over a tuple, the name rebound by a function",
        [
            "def f():\n    global a\n    a = 'o' + 'ps'\n",
            "for a in ('shape',):\n    f()\n    getattr(torch, a)\n",
            RIGHT,
        ],
        "error",
    ),
    (
        "getattr over a tuple, the name rebound after a lambda",
        ["for a in ('shape',):\n    f = lambda: getattr(torch, a)\na = 'o' + 'ps'\n", RIGHT],
        "error",
    ),
    (
        "getattr over a tuple naming llm_lab's answer",
        ["import llm_lab\nfor a in ('causal_mask',):\n    r = getattr(llm_lab, a)\n", RIGHT],
        "error",
    ),
    ("getattr over a tuple naming torch._C", ["for a in ('_C',):\n    c = getattr(torch, a)\n", RIGHT], "tampered"),
    # the eighth red team's reading routes: a string read as the attribute it names, wherever it is written
    (  # the eighth red team's c01: the name only in a string a loop hands to getattr
        "torch's mask named in a loop's string, made at cell level",
        [
            "for a in ('generate_square_subsequent_mask',):\n    M = getattr(torch.nn.Transformer, a)(2048) != 0\n\n\n"
            "def causal_mask(n):\n    return M[:n, :n]\n"
        ],
        "fail",
    ),
    ("getattr(sys, 'modules')", ["import sys\nm = getattr(sys, 'modules')\n", RIGHT], "error"),
    (
        "getattr over a tuple naming __globals__",
        ["def f():\n    pass\n\n\nfor a in ('__name__', '__globals__'):\n    g = getattr(f, a)\n", RIGHT],
        "error",
    ),
    (
        "getattr over a list naming get_ipython",
        ["import IPython\nfor a in ['get_ipython']:\n    s = getattr(IPython, a)\n", RIGHT],
        "error",
    ),
    (
        "a format field reaching __globals__",
        ["def f():\n    pass\n\n\nt = '{0.__globals__[sys]}'.format(f)\n", RIGHT],
        "error",
    ),
    (
        "a Formatter given a field through sys.modules",
        ["import string\n\n\nclass F(string.Formatter):\n    pass\n\n\nF().format('{0.modules[x]}', 1)\n", RIGHT],
        "error",
    ),
    (
        "honest, a format string with a field's attribute",
        ["x = torch.ones(2)\nprint('{0.shape} {1:.3f}'.format(x, 0.5))\n", RIGHT],
        None,
    ),
    # the fifth red team's routes: code that runs in the kernel but is not in the text the grader reads
    (
        "a %%timeit setup line",
        ["%%timeit -n1 -r1 exec(bytes.fromhex('41').decode(), globals())\nx = 1\n", RIGHT],
        "error",
    ),
    ("torch.load of a pickle", ["import torch\nm = torch.load('p.pt', weights_only=False)\n", RIGHT], "error"),
    ("torch.load on torch's default", ["import torch\nm = torch.load('p.pt')\n", RIGHT], "error"),
    ("numpy.load allowing pickles", ["import numpy as np\na = np.load('a.npy', allow_pickle=True)\n", RIGHT], "error"),
    ("the weights-only allowlist extended", ["from torch.serialization import add_safe_globals\n", RIGHT], "error"),
    ("%aimport of a module the notebook wrote", ["%aimport rt\n", RIGHT], "error"),
    ("a shell line", ["!python3 -c 'print(1)'\n", RIGHT], "error"),
    ("a bash cell", ["%%bash\npython3 -c 'print(1)'\n", RIGHT], "error"),
    ("a background script", ["%%script python3 --bg\nprint(1)\n", RIGHT], "error"),
    ("a Macro built", ["from IPython.core.macro import Macro\nm = Macro('x = 1')\n", RIGHT], "error"),
    ("honest, a weights-only torch.load", ["import torch\nm = torch.load('p.pt', weights_only=True)\n", RIGHT], None),
    ("honest, %timeit with its options", ["%timeit -n 3 -r 2 sum(range(9))\n", RIGHT], None),
    # the sixth red team's routes. IPython evaluates {expr} and $name in a magic's line (not %time/%timeit/%prun's)
    ("an inert magic's line evaluated", ["%who {exec('x = 1')}\n", RIGHT], "error"),
    ("%pwd's line evaluated", ["%pwd {exec('x = 1')}\n", RIGHT], "error"),
    ("%%capture's line evaluated", ["%%capture {exec('x = 1')}\npass\n", RIGHT], "error"),
    ("%%markdown's line evaluated", ["%%markdown {exec('x = 1')}\ntext\n", RIGHT], "error"),
    ("a $name in a magic's line", ["%pip install $pkg\n", RIGHT], "error"),
    ("honest, %who and %%capture as written", ["%who\n", "%%capture out\nx = 1\n", RIGHT], None),
    # readable modules' callables that run a string
    ("timeit.timeit of a string", ["import timeit\ntimeit.timeit('x = 1', number=1)\n", RIGHT], "error"),
    ("get_type_hints on a string annotation", ["import typing\nh = typing.get_type_hints(int)\n", RIGHT], "error"),
    ("singledispatch", ["from functools import singledispatch\n", RIGHT], "error"),
    ("logging.config.fileConfig", ["import logging.config\nlogging.config.fileConfig('lc.ini')\n", RIGHT], "error"),
    # unreadable modules reached as attributes of readable ones
    ("pickle under torch.serialization", ["import torch\nx = torch.serialization.pickle.loads(b'')\n", RIGHT], "error"),
    ("ctypes under numpy", ["import numpy as np\nf = np.ctypeslib.ctypes.pythonapi\n", RIGHT], "error"),
    (
        "numpy's .npy reader",
        ["import numpy as np\na = np.lib.format.read_array(f, allow_pickle=True)\n", RIGHT],
        "error",
    ),
    (
        "torch.hub",
        ["import torch\nm = torch.hub.load('/tmp/h', 'm', source='local', weights_only=True)\n", RIGHT],
        "error",
    ),
    ("threading under logging", ["import logging\nt = logging.threading.Thread(target=print)\n", RIGHT], "error"),
    ("a submodule by from-import", ["from torch import hub\n", RIGHT], "error"),
    ("honest, os.path and torch.nn.functional", ["import os\np = os.path.join('a', 'b')\n", RIGHT], None),
    # a module named by a string (a file the notebook wrote)
    ("%matplotlib with a module backend", ["%matplotlib module://rtmod\n", RIGHT], "error"),
    (
        "switch_backend to a module",
        ["import matplotlib.pyplot as plt\nplt.switch_backend('module://rtmod')\n", RIGHT],
        "error",
    ),
    ("honest, %matplotlib inline", ["%matplotlib inline\n", RIGHT], None),
    # names given as strings
    (
        "attrgetter of a dotted private name",
        ["import operator\nOff = operator.attrgetter('_C.X')(torch)\n", RIGHT],
        "error",
    ),
    (
        "Formatter.get_field",
        ["import string\nOff = string.Formatter().get_field('0._C.X', (torch,), {})\n", RIGHT],
        "error",
    ),
    ("getattr of __self__", ["x = getattr(getattr(print, '__self__'), 'exec')\n", RIGHT], "error"),
    (
        "attrgetter of __globals__",
        ["import json, operator\ng = operator.attrgetter('dumps.__globals__')(json)\n", RIGHT],
        "error",
    ),
    ("honest, attrgetter of a public name", ["import operator\nshape = operator.attrgetter('shape')\n", RIGHT], None),
    # a star import binds names unread (os.system as a bare system)
    ("from os import *", ["from os import *\nsystem('true')\n", RIGHT], "error"),
    # the sixth red team's second look: the same modules reached through getattr and attrgetter with public names,
    # sys's module table by a from-import, torch.classes, a backend named by an expression, logging's threads
    ("getattr to torch.serialization", ["import torch\np = getattr(torch, 'serialization').pickle\n", RIGHT], "error"),
    ("getattr to numpy.ctypeslib", ["import numpy as np\nc = getattr(np, 'ctypeslib')\n", RIGHT], "error"),
    (
        "attrgetter to numpy.lib.format",
        ["import numpy as np, operator\nf = operator.attrgetter('lib.format')(np)\n", RIGHT],
        "error",
    ),
    ("from sys import modules", ["from sys import modules\np = modules['pickle']\n", RIGHT], "error"),
    ("torch.classes.load_library", ["import torch\ntorch.classes.load_library('/tmp/x.so')\n", RIGHT], "tampered"),
    (
        "a backend named by an expression",
        ["import matplotlib.pyplot as plt\nplt.switch_backend('module:' + '//m')\n", RIGHT],
        "error",
    ),
    ("logging's queue listener", ["import logging.handlers\n", RIGHT], "error"),
    (
        "honest, json.loads and a named backend",
        ["import json, matplotlib\nmatplotlib.use('Agg')\nd = json.loads('{}')\n", RIGHT],
        None,
    ),
    # the honest student's own local named vars (a function's local is not the built-in)
    ("honest, a local named vars", [RIGHT + "def f(x):\n    vars = x * 2\n    return vars\n"], None),
    ("vars read outside the function that rebinds it", [RIGHT + "def f():\n    vars = 1\n\n\nv = vars\n"], "error"),
]


@pytest.mark.parametrize(
    "cell",
    ["import pdb\n" + RIGHT, RIGHT + "import os\nos.system('nvidia-smi')\n", "!pip install tiktoken\n" + RIGHT],
    ids=["import pdb", "os.system", "a shell line"],
)
def test_only_the_statements_that_are_the_problem_are_left_out(cell):
    """The fifth red team's honest students lost a right exercise to one harmless line in its cell; now only that
    statement is left out, the definition runs and the checkers decide, and the note names the part left out."""
    found, skipped = read([cell])
    assert found is None and list(skipped) == [0] and not skipped[0].whole, (found, skipped)
    whole, _ = read([RIGHT.replace("    return", "    import pdb\n    return")])  # the control: inside the def
    assert whole is not None and whole.hint == "unreadable"


@pytest.mark.parametrize(("name", "learner", "status"), CASES, ids=[c[0] for c in CASES])
def test_what_the_source_decides_on_each_route(name, learner, status):
    """Each attack's cells are left out ("tampered", "error": not run), the honest ones read and run (``None``)."""
    assert outcome(learner) == status


def test_a_mask_read_off_sdpa_fails_in_the_source_and_in_the_checker():
    """The third red team's fall on 01: ``causal_mask`` read off SDPA's ``is_causal`` mask. SDPA is on 01's
    forbidden list (``_ex01_masks``), so the source names it before the check, and the checker names the call."""
    import llm_lab.exercises as exercises

    found = verdict([rt.MASK_SDPA])
    assert (found.status, found.hint) == ("fail", "uses_torch_mask"), found
    namespace: dict = {}
    exec(rt.MASK_SDPA, namespace)
    result = exercises.grade("causal_mask", namespace["causal_mask"])
    assert (result.status, result.hint) == ("fail", "uses_torch_mask"), result
