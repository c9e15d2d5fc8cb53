"""The grader's reading of a submission's source (tools/teaching/grader/source_checks.py, source_names.py,
source_tampering.py): every cell, added ones too, read after IPython's own transformation; an exercise scores
only when the learner's own ``def``/``class`` defines it and nothing rebinds it; llm_lab's answer is found through
every import route; code the grader cannot read, that tampers or does not compile is not run, and costs only what
depends on it. Parsed, never run: no kernel here, so these run in milliseconds (the sandboxed grading of
the same attacks is in tests/tools/teaching/grader/test_grade_hostile.py)."""

from __future__ import annotations

import _loss_attacks as rt
import nbformat
import pytest
from _source_cases import COURSE, RIGHT, outcome, read, verdict

from tools import course
from tools.teaching.grader import matching, source_checks, source_names, source_tampering

THREAD = (
    "def causal_mask(n):\n    out = []\n    t = __import__('threading').Thread(target=lambda: out.append("
    "__import__('llm_lab').causal_mask(n)))\n    t.start()\n    t.join()\n    return out[0]\n"
)

# (name, the learner's cells before the checker, the status the source decides; None: the checkers decide)
CASES = [
    ("honest", [RIGHT], None),
    # the shell lines run a process the grader does not read: left out, the magics and the definition run
    ("honest with magics and shell lines", ["%who\n!ls\nx = !pwd\n%matplotlib inline\n" + RIGHT], "error"),
    (
        "honest with autoreload and a figure format",
        ["%load_ext autoreload\n%autoreload 2\n%config InlineBackend.figure_format = 'retina'\n" + RIGHT],
        None,
    ),
    ("an extension of the notebook's own", ["%load_ext mymodule_written_by_the_cell\n" + RIGHT], "error"),
    ("%config of the shell itself", ["%config InteractiveShell.ast_transformers = []\n" + RIGHT], "error"),
    (
        "honest, a helper in an added cell",
        ["def helper(n):\n    return torch.ones(n, n).bool().triu(1)\n", "def causal_mask(n):\n    return helper(n)\n"],
        None,
    ),
    ("honest, %timeit after the definition", [RIGHT + "%timeit -n 1 causal_mask(3)\n"], None),
    # IPython runs %%timeit's code inside a function: a definition there binds nothing; %%time's runs at top level
    ("the definition timed by %%timeit", ["%%timeit -n 1 -r 1\n" + RIGHT], "missing"),
    ("the definition timed by %%time", ["%%time\n" + RIGHT], None),
    (
        "honest, an alias of llm_lab's compared in an added cell",
        [RIGHT, "from llm_lab import causal_mask as ref\nassert (causal_mask(4) == ref(4)).all()\n"],
        None,
    ),
    (
        "only sys.setprofile, relying on the course's import",
        ["import sys\nsys.setprofile = lambda *a, **k: None\n"],
        "tampered",
    ),
    ("nothing, relying on the course's import", ["x = 1\n"], "missing"),
    (
        "the definition inside `if False:`",
        ["if False:\n" + "".join("    " + ln + "\n" for ln in RIGHT.splitlines())],
        "missing",
    ),
    ("the import in an added cell after the definition", [RIGHT, "from llm_lab import causal_mask\n"], "reference"),
    ("a %who line in the cell of the import", ["%who\nfrom llm_lab import causal_mask\n"], "reference"),
    ("__import__('llm_lab') in a worker thread", [THREAD], "tampered"),
    (
        "__import__('llm_lab').causal_mask",
        ["def causal_mask(n):\n    return __import__('llm_lab').causal_mask(n)\n"],
        "reference",
    ),
    (
        "importlib.import_module base",
        [
            "import importlib\nm = importlib.import_module('llm_lab.masks')\n\n"
            "def causal_mask(n):\n    return m.causal_mask(n)\n"
        ],
        "error",  # importlib is not a module a learner cell may import: it and what reads it are left out
    ),
    (
        "getattr with a written name",
        ["def causal_mask(n):\n    return getattr(__import__('llm_lab'), 'causal_mask')(n)\n"],
        "reference",
    ),
    (
        "the course's binding kept under another name",
        ["_ref = causal_mask\n\n\ndef causal_mask(n):\n    return _ref(n)\n"],
        "reference",
    ),
    (
        "through a helper in an added cell",
        [
            "import llm_lab as L\n\n\ndef helper(n):\n    return L.masks.causal_mask(n)\n",
            "def causal_mask(n):\n    return helper(n)\n",
        ],
        "reference",
    ),
    ("%%capture around the import", ["%%capture\nfrom llm_lab import causal_mask\n"], "reference"),
    # a star import binds names the text does not show: left out, the definition before it runs
    ("a star import after the definition", [RIGHT + "from llm_lab import *\n"], "error"),
    (
        "rebound inside a function",
        [RIGHT + "def f():\n    global causal_mask\n    causal_mask = 2\n\n\nf()\n"],
        "missing",
    ),
    ("deleted after the definition", [RIGHT, "del causal_mask\n"], "missing"),
    ("invalid syntax", ["def causal_mask(n:\n    pass\n"], "error"),
    ("exec of a string", [RIGHT + "exec('from llm_lab import causal_mask')\n"], "error"),
    ("globals() written", [RIGHT + "globals()['causal_mask'] = 1\n"], "error"),
    (
        "honest, a debugging look that is only printed",
        [
            RIGHT
            + "print(sorted(vars(torch.nn.Linear(2, 2)).keys()))\nprint(causal_mask.__code__.co_varnames, sep='')\n"
            "print(f'{len(globals())} names')\n",
            "def helper(self):\n    print(vars(self))\n",
        ],
        None,
    ),
    (
        "honest, debugging looks displayed as a cell's value",
        [
            RIGHT + "causal_mask.__code__.co_varnames\n",
            "sorted(k for k in globals() if not k.startswith('_'))\n",
            "vars(torch.nn.Linear(2, 2)).keys()\n",
        ],
        None,
    ),
    (
        "a displayed look read back from IPython's output history",
        [RIGHT + "vars(torch)\n", "f = _['softmax']\n"],
        "error",
    ),
    ("a displayed look that calls what it iterates", [RIGHT + "[f(0) for f in vars(torch).values()]\n"], "error"),
    (
        "torch.ops through an alias",
        ["import torch as T\n\n\n" + RIGHT.replace("torch.ones", "T.ops.aten.ones")],
        "tampered",
    ),
    ("torch.ops through getattr", [RIGHT + "x = getattr(torch, 'ops')\n"], "tampered"),
    ("torch.distributions through an alias", ["import torch as th\n\n\nd = th.distributions\n" + RIGHT], "tampered"),
    ("torch.compile through an alias", ["import torch as th\n\n\ng = th.compile(len)\n" + RIGHT], "tampered"),
    (
        "torch's mask made at cell level, sliced in the call",
        [
            "M = torch.nn.Transformer.generate_square_subsequent_mask(2048) != 0\n\n\n"
            "def causal_mask(n):\n    return M[:n, :n]\n"
        ],
        "fail",
    ),
    (
        "torch's mask made in a default argument",
        [
            "from torch.nn.attention.bias import causal_upper_left\n\n\n"
            "def causal_mask(n, m=~causal_upper_left(64, 64)._materialize()):\n    return m[:n, :n]\n"
        ],
        "fail",
    ),
    ("a name computed at run time", [RIGHT + "c = getattr(torch, ''.join(['_', 'C']))\n"], "error"),
    ("operator.attrgetter with a computed name", [RIGHT + "import operator\n\nf = operator.attrgetter(n)\n"], "error"),
    ("honest, getattr with a written name", [RIGHT + "w = getattr(torch.nn.Linear(2, 2), 'weight')\n"], None),
    ("gc's referents", [RIGHT + "import gc\n\nd = gc.get_referents(torch)\n"], "error"),
    (
        "IPython's shell runs a string",
        [
            RIGHT + "from IPython.core.interactiveshell import InteractiveShell\n\n"
            "InteractiveShell.instance().run_cell('x = 1')\n"
        ],
        "error",
    ),
    ("print rebound, then a printed look", [RIGHT + "print = list.append\nprint(vars(torch))\n"], "error"),
    (
        "sorted redefined, then a printed look",
        [RIGHT + "def sorted(x):\n    return x\n\n\nprint(sorted(vars(torch)))\n"],
        "error",
    ),
    ("a walrus inside a printed look", [RIGHT + "print([k for k, v in vars(torch).items() if (t := v)])\n"], "error"),
    ("a printed look compared with an object of the learner's", [RIGHT + "print(vars(torch) == object())\n"], "error"),
    (
        "the display hook replaced, then a displayed look",
        [RIGHT + "import sys\n\nsys.displayhook = print\nvars(torch)\n"],
        "tampered",
    ),
    (
        "honest, looks printed to stderr, with a separator, by pprint",
        [
            RIGHT + "import sys\nfrom pprint import pprint\n\nSEP = ', '\n"
            "print(vars(torch.nn.Linear(2, 2)), file=sys.stderr)\n"
            "print(causal_mask.__code__.co_varnames, sep=SEP)\npprint(causal_mask.__code__.co_varnames)\n"
        ],
        None,
    ),
    ("honest, re.compile", ["import re\n\n\nPATTERN = re.compile('x')\n" + RIGHT], None),
    (
        "a printed look that calls what it found",
        [RIGHT + "import llm_lab\nprint(vars(llm_lab)['causal_mask'](3))\n"],
        "error",
    ),
    ("a printed look that writes", [RIGHT + "print(vars(torch).update(x=1))\n"], "error"),
    ("a look printed to a file it picks", [RIGHT + "print(1, file=vars(sys)['stderr'])\n"], "error"),
    ("a code object replaced inside print", [RIGHT + "print(causal_mask.__code__.replace(co_code=b''))\n"], "error"),
    ("a module the notebook wrote itself", ["import mymodule_written_by_the_cell\n" + RIGHT], "error"),
    ("%run of a file", ["%run helper.py\n" + RIGHT], "error"),
    ("get_ipython() used directly", ["get_ipython().run_cell('from llm_lab import causal_mask')\n" + RIGHT], "error"),
    ("threading imported", ["import threading\n" + RIGHT], "tampered"),
    (
        "torch's function modes switched off",
        [
            "def causal_mask(n):\n    with torch._C.DisableTorchFunction():\n"
            "        return torch.ones(n, n).bool().triu(1)\n"
        ],
        "tampered",
    ),
    (
        "the current modes disabled",
        ["from torch.utils._python_dispatch import _disable_current_modes\n" + RIGHT],
        "tampered",
    ),
    (
        "is a mode watching?",
        ["from torch import _C\nWATCHED = _C._is_torch_function_mode_enabled()\n" + RIGHT],
        "tampered",
    ),
    ("torch.overrides", ["import torch.overrides\n" + RIGHT], "tampered"),
    (
        "the modes switched off through getattr and strings",
        [
            "def causal_mask(n):\n    with getattr(getattr(torch, '_C'), 'DisableTorchFunction')():\n"
            "        return torch.ones(n, n).bool().triu(1)\n"
        ],
        "tampered",
    ),
    (
        "TorchScript, which runs below the modes",
        [
            "@torch.jit.script\ndef _m(n: int):\n    return torch.ones(n, n).triu(1) > 0\n\n\n"
            "def causal_mask(n):\n    return _m(n)\n"
        ],
        "tampered",
    ),
    ("torch.compile", ["causal_mask = torch.compile(lambda n: torch.ones(n, n).bool().triu(1))\n"], "tampered"),
    (
        "the operator table",
        ["def causal_mask(n):\n    return torch.ops.aten.triu(torch.ones(n, n), 1).bool()\n"],
        "tampered",
    ),
    ("torch.distributions imported", ["from torch.distributions import Categorical\n" + RIGHT], "tampered"),
    ("from torch import ops", ["from torch import ops\n" + RIGHT], "tampered"),
    ("sys.settrace called", ["import sys\nsys.settrace(None)\n" + RIGHT], "tampered"),
    ("threading.setprofile", ["from threading import setprofile\n" + RIGHT], "tampered"),
    ("sys.addaudithook", ["import sys\nsys.addaudithook(lambda event, args: None)\n" + RIGHT], "tampered"),
]


@pytest.mark.parametrize(("name", "learner", "status"), CASES, ids=[c[0] for c in CASES])
def test_what_the_source_decides(name, learner, status):
    """Each trick's statements are left out ("tampered", "error": not run), the honest cells read and run."""
    assert outcome(learner) == status


def test_honest_vars_of_self_in_a_repr_f_string_is_read():
    """The third red team's careless student: ``__repr__`` returning ``f'Batch({vars(self)})'`` (the look turned
    into text at once) keeps the exercises checked after it; the same look kept as an object does not."""
    assert verdict([rt.VARS_IN_REPR, RIGHT]) is None
    assert outcome([rt.VARS_IN_REPR.replace("f'Batch({vars(self)})'", "vars(self)"), RIGHT]) == "error"


INSPECT_INSIDE = RIGHT.replace("    return", "    import inspect\n    return")  # the whole cell is left out


def test_an_unreadable_solution_cell_is_named_with_its_reason_in_the_submissions_language():
    found = {lang: verdict([INSPECT_INSIDE], lang=lang) for lang in course.LANGS}
    assert all(f.hint == "unreadable" and "inspect" in f.message for f in found.values()), found
    assert "scores 0" in found["en"].message and "0 分" not in found["en"].message
    assert "0 分" in found["zh"].message and "scores 0" not in found["zh"].message


@pytest.mark.parametrize(
    "learner",
    [
        ["def causal_mask(n:\n    pass\n"],
        [INSPECT_INSIDE],
        ["from llm_lab import causal_mask\n"],
        ["def causal_mask(n):\n    import llm_lab.exercises as ex\n    ex.grade = print\n    return n\n"],
        ["x = 1\n"],
    ],
    ids=["does-not-compile", "unreadable", "reference", "tampered", "not-defined"],
)
def test_every_message_of_the_source_is_in_one_language(learner):
    """Each language gets its own sentence, not both joined by a slash."""
    found = {lang: verdict(learner, lang=lang).message for lang in course.LANGS}
    assert len(set(found.values())) == len(course.LANGS), found
    assert all(" / " not in message for message in found.values()), found


TYPO = "def causal_mask(n:\n    pass\n"


@pytest.mark.parametrize(
    ("name", "learner", "own", "hint"),
    [
        ("a typo in the solution cell", [TYPO], [0], "does_not_compile"),
        ("a typo in an added cell before the solution", [TYPO, RIGHT], [1], None),
        ("a typo in the solution cell after a good definition", [RIGHT, TYPO], [1], None),
        ("a bad indent", ["def causal_mask(n):\nreturn n\n"], [0], "does_not_compile"),
        ("a NUL byte in an added cell", ["x = 1\x00\n"], [], "not_defined"),
        (
            "`<>` after barry_as_FLUFL: it compiles in the kernel, but not here",
            ["from __future__ import barry_as_FLUFL\n", "from llm_lab import causal_mask\nassert 1 <> 2\n"],
            [],
            "not_defined",  # the cell importing llm_lab's answer is not run: the name is the course's
        ),
        (
            "a magic's Python that does not parse, beside code",
            ["from llm_lab import causal_mask\n%time 1 +\n"],
            [0],
            "unreadable",
        ),
        ("a cell that compiles and raises SyntaxError itself", ["raise SyntaxError('x')\n" + RIGHT], [0], None),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else None,
)
def test_a_cell_the_grader_cannot_read_is_not_run_and_costs_its_own_exercise_only(name, learner, own, hint):
    """A cell that does not compile (or that the grader cannot parse) is replaced by a comment before the kernel
    runs: it binds nothing and hides nothing, and costs the exercise whose solution cell it is."""
    found, skipped = read(learner, own=own)
    assert (found.hint if found else None) == hint, found
    compiles = name.startswith("a cell that compiles")
    assert bool(skipped) != compiles and all(i < len(learner) for i in skipped), skipped


def test_a_solution_cell_that_does_not_compile_is_named_in_the_submissions_language():
    found = {lang: verdict([TYPO], lang=lang, own=[0]) for lang in course.LANGS}
    assert all(
        f.status == "error" and "SyntaxError" in f.message and "causal_mask" in f.message for f in found.values()
    )
    assert "ran none of it" in found["en"].message and "0 分" in found["zh"].message


def test_does_not_compile_tries_the_future_flags():
    assert source_checks.does_not_compile("def f(:\n").startswith("SyntaxError")
    assert source_checks.does_not_compile("1 <> 2\n") == ""  # valid once barry_as_FLUFL is on
    assert source_checks.does_not_compile("x = 1\n%time y\n") == ""


def _two_exercises(added: str):
    """01's two exercises, ``added`` a cell of the learner's before the first solution; the reading after
    ``runnable``, and the indices of the two solution cells."""
    sources = [
        COURSE,
        added,
        RIGHT,
        "_llm_lab_kernel.capture('causal_mask', lambda: causal_mask)",
        "def mask_and_renormalize(w, m):\n    return w\n",
        "_llm_lab_kernel.capture('mask_and_renormalize', lambda: mask_and_renormalize)",
    ]
    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return source_checks.runnable(cells, [1, 2, 4]), cells


@pytest.mark.parametrize(
    "added",
    ["import inspect\n", "import os\nos.system('ls')\n", "import torch\nf = torch.compile(len)\n", "x = (1,\n"],
    ids=["unreadable", "tampered-os-system", "tampered-compile", "does-not-compile"],
)
def test_a_cell_left_out_costs_no_other_exercise(added):
    """The fourth red team's careless students (``import inspect``, ``os.system``, ``torch.compile``, a typo in
    a cell of their own) lost every exercise checked after that cell; now the cell is not run, the exercises are
    read as if it were absent, and the submission's notes say which cell and why."""
    reading, cells = _two_exercises(added)
    assert list(reading.skipped) == [1] and cells[1].source.startswith("# llm-lab grader: ")
    assert reading.verdict("causal_mask", "causal_mask", 3, own=[2]) is None
    assert reading.verdict("mask_and_renormalize", "renormalize", 5, own=[4]) is None
    (note,) = reading.not_run_notes()
    assert "not run" in note and added.splitlines()[0] in note
    control, _ = _two_exercises("x = 1\n")  # the control: nothing left out
    assert control.skipped == {} and control.not_run_notes() == []


def test_a_later_exercise_is_judged_by_the_cells_before_its_own_checker():
    """A solution cell left out after the first checker costs its own exercise only."""
    cells = _two_exercises("x = 1\n")[1]
    cells[4].source = "def mask_and_renormalize(w:\n"
    reading = source_checks.runnable(cells, [1, 2, 4])
    assert reading.verdict("causal_mask", "causal_mask", 3, own=[2]) is None
    assert reading.verdict("mask_and_renormalize", "renormalize", 5, own=[4]).hint == "does_not_compile"


def test_the_course_binding_is_named_as_the_courses():
    found = verdict(["x = 1\n"])
    assert "a course cell's `from llm_lab import causal_mask" in found.message


def test_cell_magics_that_run_python_are_read_in_place():
    tree = source_checks.parse("%%time\nfrom llm_lab import causal_mask\n")
    assert [b[0] for s in tree.body for b in source_names.bindings(s)] == ["causal_mask"]


def test_every_course_notebook_with_its_own_solutions_reads_clean():
    """The instructor solutions of every notebook, both languages: the source decides nothing (the checkers do),
    so no course cell binds an exercise's name between its solution and its checker, and no solution uses a
    construct the grader refuses."""
    course = matching.load_course()
    assert course
    for (lang, nn), cn in sorted(course.items()):
        p = matching.build_plan(cn, cn.nb)
        reading = source_checks.read(p.nb.cells, p.learner)
        found = {ex.key: reading.verdict(ex.key, ex.exercise, p.grading[ex.key]) for ex in cn.exercises}
        assert {k: v for k, v in found.items() if v} == {}, (lang, nn)


@pytest.mark.parametrize(
    ("cell", "tampered"),
    [
        ("import llm_lab.exercises._harness as h\n", True),
        ("from llm_lab.exercises.grading.answering import serve\n", True),  # a public module of the machinery
        ("from llm_lab.exercises import grading\n", True),
        ("import llm_lab.exercises as e\ng = e.grading\n", True),
        ("x = __import__('llm_lab.exercises._registry')\n", True),
        ("from llm_lab.exercises import check_causal_mask, set_language\n", False),  # the learner's own API
        ("class A(torch.nn.Module):\n    def names(self):\n        return list(self._modules)\n", False),
    ],
)
def test_the_machinery_names_come_from_the_package(cell, tampered):
    """Every private module of llm_lab.exercises and the grading package are reached names, found by walking the
    package (a module added later counts at once); a name every nn.Module has (``_modules``) is not."""
    assert "llm_lab.exercises._harness" in source_tampering.MACHINERY_MODULES
    assert "llm_lab.exercises.grading.answering" in source_tampering.MACHINERY_MODULES
    assert (outcome([cell + RIGHT]) == "tampered") == tampered


def test_where_every_cell_ran_an_unvouched_cell_decides_every_exercise_after_it():
    """``run_unvouched`` (the sandbox tested on its own): nothing is left out, so a cell the grader cannot vouch for
    ran, and every exercise checked after it scores 0 (the conservative answer); the cells after the first
    exercise's checker decide only the second."""
    sources = [COURSE, RIGHT, "_llm_lab_kernel.capture('causal_mask', lambda: causal_mask)", "import inspect\n"]
    sources.append("_llm_lab_kernel.capture('mask_and_renormalize', lambda: x)")
    reading = source_checks.read([nbformat.v4.new_code_cell(s) for s in sources], [1, 3])
    assert reading.skipped == {} and reading.verdict("causal_mask", "causal_mask", 2) is None
    found = reading.verdict("mask_and_renormalize", "renormalize", 4)
    assert (found.status, found.hint) == ("error", "unreadable") and "every exercise checked after it" in found.message


def test_a_module_a_course_cell_imported_is_unread_in_a_learner_cell_too():
    """The fifth red team's service ran through 06's setup cell: ``import subprocess`` there, ``subprocess.Popen``
    in a learner cell with no import of its own. A learner statement that reads such a name is left out; the
    control (``sys``, also imported by the course cell, a module the grader reads) runs."""
    course_cell = "import subprocess\nimport sys\n"
    learner = "p = subprocess.Popen(['python3', '-c', 'print(1)'])\nx = sys.argv\n"
    cells = [nbformat.v4.new_code_cell(s) for s in (course_cell, learner)]
    reading = source_checks.runnable(cells, [1])
    assert list(reading.skipped) == [1] and "subprocess" in reading.skipped[1].why
    assert "Popen" not in cells[1].source and "x = sys.argv" in cells[1].source
