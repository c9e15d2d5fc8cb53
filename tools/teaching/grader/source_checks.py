"""What a submission's source says, read as text (parsed, never run), so no trick in the kernel can change it.

Every code cell of the notebook the grader runs (the course's cells, the learner's solution cells and the cells
the learner added) is read the way IPython reads it: through IPython's own ``TransformerManager`` (magics, ``!``,
``?``), then parsed. :class:`Reading` holds the parsed cells; ``Reading.verdict`` says, for one exercise, what
in the source decides it before any kernel is asked (``None``: nothing, the checkers' verdict stands):

- ``tampered``: code that changes the checkers or the watch on them (``source_tampering.tampering``: a ``check_*``
  redefined, llm_lab's attributes set, its grading machinery, ``sys.modules``, IPython's input hooks,
  ``sys.setprofile``/``settrace`` and the threading hooks, threads and forks);
- ``error`` (``unreadable``): a learner cell before the exercise's checker that runs code the grader cannot read
  (``exec``, ``globals()``, a computed import, an IPython call other than the magics it writes itself, a magic
  that runs code elsewhere, a module that is not installed, a magic whose Python does not parse): it counts
  against the submission, so every exercise checked after it scores 0. A debugging look that is only printed or
  displayed (``print(vars(layer))``, ``f.__code__.co_varnames`` as a cell's last line: ``source_looks``) is read, not
  counted;
- ``error`` (``does_not_compile``): the exercise's own solution cell does not compile, so IPython ran none of it
  (``does_not_compile``: under every ``from __future__`` an earlier cell may have set, and the kernel reported
  the compile error too) and the exercise's name is not the learner's. Such a cell costs that exercise only: it
  ran nothing, so it hides nothing from the other exercises (a typo is not a trick);
- ``reference``: the exercise's object is, or calls, llm_lab's own answer, found through every name it uses
  (imports, ``__import__("llm_lab")`` and ``importlib.import_module`` bases, attribute chains, ``getattr`` with a
  written name), or the course's own object of that name;
- ``missing``: the name the checker reads is not defined by a ``def``/``class`` of the learner, or something
  after that definition binds it again (a course cell that bound it before the exercise does not count).

Code that hides a name (``getattr`` with a computed string) is not found here; the kernel's own report of what
ran is the second check (the watch ``llm_lab.exercises.grading.answering`` runs each call under). Used by ``judging``.
"""

from __future__ import annotations
import __future__

import ast
import codeop
import functools
import importlib.util
import re
from dataclasses import dataclass, field

import llm_lab.exercises as exercises
from tools.teaching.grader import source_looks, source_names, source_tampering
from tools.teaching.grader.report import one_line

# IPython magics whose argument is Python run in the notebook's namespace (read in place when they are a statement
# of their own), and those that run nothing there (shell, other languages, display); any other magic, or one of
# the first kind left elsewhere, runs code the grader does not read
PYTHON_MAGICS = {"capture", "time", "timeit", "prun"}
INERT_LINE_MAGICS = {
    "who",
    "whos",
    "who_ls",
    "pinfo",
    "pinfo2",
    "psearch",
    "pdoc",
    "pdef",
    "psource",
    "pfile",
    "pwd",
    "ls",
    "lsmagic",
    "magic",
    "precision",
    "history",
    "matplotlib",
    "env",
    "page",
    "xmode",
    "colors",
    "pip",
    "conda",
}
# Line magics that run nothing of the notebook's own when their argument is one of these (honest notebooks use
# them: IPython's own autoreload extension, a figure format); with any other argument they are read as hidden code
INERT_WHEN = {
    "load_ext": re.compile(r"\s*(autoreload|storemagic)\s*"),
    "autoreload": re.compile(r"\s*(0|1|2|3|off|explicit|all|complete)?\s*"),
    "aimport": re.compile(r"\s*-?[\w.]+(\s*,\s*-?[\w.]+)*\s*"),
    "config": re.compile(r"\s*InlineBackend\.\w+\s*=\s*[\w'\".{}:, \[\]-]*"),
}
INERT_CELL_MAGICS = {
    "bash",
    "sh",
    "html",
    "HTML",
    "javascript",
    "js",
    "latex",
    "markdown",
    "svg",
    "script",
    "perl",
    "ruby",
    "python",
    "python3",
    "sx",
    "system",
}
SHELL = {"system", "getoutput"}  # what `!cmd` and `x = !cmd` become
TIMEIT_OPTIONS = re.compile(r"^(\s*-[A-Za-z]+(\s+[\d.]+)?)*\s*")
HIDDEN_CALLS = {"exec", "eval", "compile", "globals", "vars", "locals", "breakpoint", "__import__"}
# calls that reach an attribute by a name given as an argument (its index): with a name computed at run time,
# what they reach is not in the text (getattr(torch, "_" + "C") is torch._C)
NAMED_BY = {"getattr": 1, "setattr": 1, "delattr": 1, "hasattr": 1, "attrgetter": 0, "methodcaller": 0}
# llm_lab's answers by the names getattr would take: a loop over strings that names one is not read as its strings
ANSWER_NAMES = frozenset(
    {d.rpartition(".")[2] for ex in exercises.REGISTRY.values() for d in ex.references} | {"exercises"}
)
# the reflective built-ins above, and their kin in the standard library: handed around as a value (``ga =
# getattr``, ``functools.partial(getattr, torch)``, ``map(vars, ...)``, ``[getattr][0]``) what they reach is not in
# the text either; only a direct call with its name written (``getattr(x, "shape")``) is read
REFLECTIVE = HIDDEN_CALLS | set(NAMED_BY) | {"import_module", "getattr_static", "getmembers", "locate", "resolve_name"}
# the modules a learner cell may import: what the lessons use and the usual company of a notebook (numbers,
# tables, plots, time, text). Any other (inspect, builtins, importlib, gc, types, pickle, ctypes, threading,
# subprocess, asyncio, pty, socket, ...) reaches objects, frames, code or processes by routes the text does not
# name, so a cell that imports one is unreadable; the message names this list
READABLE_MODULES = frozenset(
    {
        "torch", "numpy", "math", "cmath", "random", "time", "timeit", "collections", "itertools", "functools",
        "typing", "dataclasses", "matplotlib", "tiktoken", "string", "re", "json", "textwrap", "statistics", "copy",
        "pprint", "IPython", "tqdm", "llm_lab", "sys", "os", "warnings", "abc", "enum", "heapq", "bisect",
        "contextlib", "fractions", "decimal", "datetime", "pathlib", "einops", "operator", "numbers", "gc", "logging",
        "unicodedata", "pandas", "seaborn", "__future__",
    }
)  # fmt: skip
HIDDEN_ATTRIBUTES = {
    "__getattribute__",
    # sys under other modules' names (os.sys, torch.sys, warnings.sys, collections._sys): sys.modules holds the
    # kernel's answering side
    "sys",
    "_sys",
    # frames and what leads to them: a frame's locals are the grader's own (the reply under way)
    "_getframe",
    "_current_frames",
    "currentframe",
    "tb_frame",
    "tb_next",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "f_code",
    "__traceback__",
    # from any object to every class, module or function: the classic ways out of a restricted namespace
    "__subclasses__",
    "__self__",
    "__reduce__",
    "__reduce_ex__",
    "__loader__",
    "__spec__",
    "get_referents",
    "get_referrers",
    "get_objects",
    "InteractiveShell",
    "history_manager",
    "run_cell",
    "__globals__",
    "__code__",
    "__closure__",
    "__builtins__",
    "__dict__",
    "f_globals",
    "f_locals",
    "f_back",
    "get_ipython",
    "user_ns",
    "user_global_ns",
    "exec",
}
# What the source decides, in the submission's language (one entry per language of tools.course.LANGS).
UNREADABLE = {
    "en": "cell `{cell}` cannot be read by the grader ({why}): every exercise checked after it scores 0",
    "zh": "评分器读不懂单元格 `{cell}`（{why}）：在它之后检查的练习都是 0 分",
}
NOT_COMPILED = {
    "en": "your solution cell `{cell}` does not compile ({why}): Python ran none of it, so `{key}` is not yours and "
    "this exercise scores 0 (the other exercises are graded as usual)",
    "zh": "你的解答单元格 `{cell}` 无法编译（{why}）：Python 一行也没有运行，所以 `{key}` 不是你写的，本练习 0 分"
    "（其他练习照常评分）",
}
# What IPython shows for a cell it cannot compile (``InteractiveShell.run_cell``: it then runs nothing of it)
COMPILE_ERRORS = ("SyntaxError", "IndentationError", "TabError", "ValueError", "OverflowError", "TypeError")
# IPython compiles a cell with the flags of every ``from __future__`` an earlier cell ran (barry_as_FLUFL makes
# ``<>`` valid): a cell runs nothing only if it compiles neither with none of them nor with all
FUTURE_FLAGS = functools.reduce(
    lambda a, b: a | b, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
)
TAMPERED = {"en": "0 points: the code changes the checkers: {names}", "zh": "0 分：代码改动了检查器：{names}"}
PRECOMPUTABLE = {"uses_torch_mask"}  # ruled-out answers that depend only on a size
READY_MADE = {
    "en": "your code names `{found}`, torch's ready-made answer: not allowed in this exercise (made before the "
    "check, it is still torch's mask): no credit. Compare with it after the check",
    "zh": "你的代码用到了 `{found}`，这是 torch 的现成答案：本练习不允许使用"
    "（在检查之前算好，它仍是 torch 的遮蔽）：不计分。检查通过后再拿它来对照",
}
REFERENCE = {
    "en": "the solution uses {found}, llm_lab's own code for this exercise: no credit",
    "zh": "解答用了 {found}，即 llm_lab 自带的代码：不计分",
}


def ready_made(exercise: str, trees: list) -> tuple[str, str] | None:
    """(name, hint) of a callable the exercise rules out whose answer depends only on a size (``PRECOMPUTABLE``:
    torch's ready-made causal masks), named anywhere in the learner's cells before the check (``trees``): called
    at cell level or in a default argument it runs where the watch on the learner's call cannot see it, and the
    call only slices what it made. ``None`` if none is named."""
    from llm_lab import exercises

    record = exercises.REGISTRY.get(exercise)
    ruled_out = {q.rpartition(".")[2]: (q, h) for _, q, h in getattr(record, "forbidden", ()) if h in PRECOMPUTABLE}
    for node in (n for tree in trees for n in ast.walk(tree)):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if name in ruled_out:
            return ruled_out[name]
    return None


@dataclass(frozen=True)
class Finding:
    """What the source decides for one exercise, as the grader's verdict fields."""

    status: str
    hint: str  # the mistake's name
    message: str


@dataclass
class Cell:
    source: str
    learner: bool
    tree: ast.Module | None = None
    unreadable: str = ""  # why the grader cannot read it ("" if it can)
    broken: str = ""  # why IPython runs none of it: it does not compile ("" if it compiles)
    tampering: list[str] = field(default_factory=list)  # what in it changes the checkers


@functools.lru_cache(maxsize=4096)  # the course's cells are the same in every submission: read once per run
def parse(source: str, depth: int = 0) -> ast.Module:
    """``source`` as IPython runs it: its magics, ``!`` and ``?`` transformed, then parsed (SyntaxError if it
    cannot be); the Python inside ``%%capture``/``%%time``/``%time``/``%timeit``/``%prun`` is parsed in place.
    The tree is shared (cached): read it, never change it."""
    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(source))
    if depth > 8:
        raise SyntaxError("magics nested too deep")
    body = []
    for stmt in tree.body:
        magic = _magic(stmt) if isinstance(stmt, ast.Expr) else None
        if magic and magic[1] in PYTHON_MAGICS:
            kind, name, line, cell = magic
            code = cell if kind == "run_cell_magic" else line
            if name in ("timeit", "prun"):
                code = TIMEIT_OPTIONS.sub("", code, count=1) if kind == "run_line_magic" else code
            body += parse(code, depth + 1).body
        else:
            body.append(stmt)
    tree.body = body
    return tree


def does_not_compile(source: str) -> str:
    """Why IPython runs nothing of the cell ``source``: it transforms the cell, then compiles all of it before
    running any (``InteractiveShell.run_cell``), so a cell that does not compile (a typo, an unclosed bracket, a
    bad indent) runs nothing; "" if it compiles, under no ``from __future__`` flag or under all of them, or if
    the transformation itself fails (not decided here)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        code = TransformerManager().transform_cell(source)
    except Exception:  # IPython's transformer on input it does not expect: the cell stays unreadable
        return ""
    why = ""
    for flags in (0, FUTURE_FLAGS):
        try:
            compile(code, "<cell>", "exec", flags | codeop.PyCF_DONT_IMPLY_DEDENT | ast.PyCF_ONLY_AST, True)
        except (SyntaxError, ValueError, OverflowError, TypeError) as exc:
            line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
            why = why or f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{line}"
        else:
            return ""
    return why


def _magic(stmt) -> tuple[str, str, str, str] | None:
    """(``run_line_magic``/``run_cell_magic``, name, line, cell body) of a statement IPython wrote for a magic."""
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not (_ipython_call(call) and call.func.attr in ("run_line_magic", "run_cell_magic")):
        return None
    args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in call.args]
    if len(args) < 2 or None in args:
        return None
    return call.func.attr, args[0], args[1], args[2] if len(args) > 2 else ""


def _ipython_call(node) -> bool:
    """Is ``node`` ``get_ipython().<method>(...)``, the shape IPython's transformer writes?"""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
        and not node.func.value.args
    )


def _inert(method: str, name: str, argument: str) -> bool:
    """Does the magic ``name`` (a line or cell magic, by ``method``) with ``argument`` run nothing unread?"""
    if method != "run_line_magic":
        return name in INERT_CELL_MAGICS
    return name in INERT_LINE_MAGICS or name in INERT_WHEN and bool(INERT_WHEN[name].fullmatch(argument))


def hidden(
    tree: ast.Module, looks: bool = False, kept: frozenset[str] = frozenset(), looped: frozenset[str] = frozenset()
) -> str:
    """The first thing in ``tree`` that runs code the grader cannot read ("" if none). ``looks``: a debugging look
    whose value is only printed or displayed is read too (when no learner cell could catch a shown value:
    ``source_looks.trusted``), and one kept in a name that is only ever shown (``kept``: ``source_looks.kept``).
    ``looped``: names that only ever hold a string written in the text (:func:`string_loops`), read as that
    string where ``getattr`` and its kin take a name."""
    allowed = set()
    for node in ast.walk(tree):
        if _ipython_call(node):
            method = node.func.attr
            magic = _magic(ast.Expr(node))
            if method in SHELL or magic and _inert(method, magic[1], magic[2]):
                allowed.add(id(node.func.value.func))
            else:
                return f"`{ast.unparse(node)[:60]}`"
    shown = source_looks.shown(tree, displayed=True, kept=kept) if looks else set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        found = "" if id(node) in shown else _hidden_node(node, allowed, called, looped)
        if found:
            return found
    return ""


def _hidden_node(node, allowed: set, called: set, looped: frozenset[str] = frozenset()) -> str:
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        at = NAMED_BY.get(_name_of(node.func))
        name = node.args[at] if at is not None and len(node.args) > at else None
        if at is not None and not (isinstance(name, ast.Constant) or isinstance(name, ast.Name) and name.id in looped):
            return f"a name computed at run time (`{ast.unparse(node)[:50]}`)"
    if isinstance(node, ast.Name) and node.id == "get_ipython" and id(node) not in allowed:
        return "`get_ipython`"
    if isinstance(node, ast.Name) and node.id in ("__builtins__", "InteractiveShell"):
        return f"`{node.id}`"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HIDDEN_CALLS:
        if node.func.id != "__import__" or not _constant_str(node.args[:1]):
            return f"`{node.func.id}(...)`"
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        if _name_of(node.func) in ("__import__", "import_module") and _constant_str(node.args[:1]):
            return _unreadable_module(node.args[0].value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and _name_of(node.func) == "import_module"
        and not _constant_str(node.args[:1])
    ):
        return "an import by a computed name"
    if isinstance(node, ast.Attribute) and node.attr in HIDDEN_ATTRIBUTES:
        return f"`.{node.attr}`"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _unreadable_import(node)
    if isinstance(node, (ast.Name, ast.Attribute)) and _name_of(node) in REFLECTIVE and id(node) not in called:
        return f"`{_name_of(node)}` used as a value (its target is not in the text)"
    return ""


def string_loops(trees: list[ast.Module]) -> frozenset[str]:
    """The names that only ever hold a string written in the text: every binding of the name, in every cell
    (``trees``), is the variable of a ``for`` over a written tuple or list of string constants
    (``for a in ("shape", "dtype"): print(a, getattr(x, a))``), and none of those strings names llm_lab's answer
    to an exercise (``getattr(llm_lab, a)`` stays unreadable). Any other binding of the name (an assignment, a
    parameter, ``global``, ``del``, another loop, a comprehension) keeps it out."""
    loops, names = set(), set()
    nodes = [n for tree in trees for n in ast.walk(tree)]
    for node in nodes:
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, (ast.Tuple, ast.List))
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts)
            and not {e.value for e in node.iter.elts} & ANSWER_NAMES
        ):
            loops.add(id(node.target))
            names.add(node.target.id)
    for node in nodes:
        if id(node) not in loops:
            bound = (
                getattr(node, "name", None)
                if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar))
                else None
            )
            names -= source_looks._binds(node) | {bound, getattr(node, "rest", None)}
    return frozenset(names)


def _unreadable_import(node) -> str:
    if isinstance(node, ast.ImportFrom) and (
        node.level or any(a.name in REFLECTIVE | {"get_ipython"} for a in node.names)
    ):
        return f"`{ast.unparse(node)[:60]}`"
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for name in names:
        found = _unreadable_module(name)
        if found:
            return found
    return ""


def _unreadable_module(name: str) -> str:
    """Why importing the module ``name`` makes a cell unreadable ("" if it does not)."""
    top = name.split(".")[0]
    if top == "__main__":
        return "`import __main__`"
    if top == "IPython" and not (name == "IPython.display" or name.startswith("IPython.display.")):
        return f"`{name}` is not a module the grader reads (of IPython, a learner cell may import IPython.display)"
    if top not in READABLE_MODULES:
        allowed = ", ".join(sorted(READABLE_MODULES - {"__future__"}))
        return f"`{top}` is not a module the grader reads (a learner cell may import {allowed})"
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    if not found:  # a module written by the notebook itself: its code is not read
        return f"`{top}` is not an installed module"
    return ""


def _name_of(func) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr


def _constant_str(args) -> bool:
    return bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)


@dataclass
class Reading:
    """The parsed cells of the executed notebook, in order (``learner``: a cell the learner wrote)."""

    cells: list[Cell]
    names: source_names.Names = field(init=False)

    def __post_init__(self):
        for cell in self.cells:
            self._parse(cell)
        looks = source_looks.trusted([c.tree for c in self.cells if c.learner and c.tree is not None])
        try:
            kept = source_looks.kept([(c.tree, c.learner) for c in self.cells if c.tree is not None]) if looks else ()
        except RecursionError:
            kept = frozenset()
        looped = string_loops([c.tree for c in self.cells if c.tree is not None])
        trees = [c.tree for c in self.cells if c.tree is not None]
        checks = source_tampering.course_checks([c.tree for c in self.cells if not c.learner and c.tree is not None])
        modules = source_tampering.module_names(trees)
        for cell in self.cells:
            if cell.learner and cell.tree is not None:
                try:
                    cell.unreadable = hidden(cell.tree, looks=looks, kept=frozenset(kept), looped=looped)
                    cell.tampering = source_tampering.tampering([cell.tree], checks, modules)
                except RecursionError:  # an expression nested past what the reading follows
                    cell.unreadable = "nested too deeply to read"
        self.names = source_names.Names([(c.tree, c.learner) for c in self.cells])

    @staticmethod
    def _parse(cell: Cell) -> None:
        try:
            cell.tree = parse(cell.source)
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
            line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
            cell.unreadable = f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{line}"
            if cell.learner:  # a magic's Python that does not parse is unreadable, the cell may run
                cell.broken = does_not_compile(cell.source)
        except Exception as exc:  # IPython's transformer on input it does not expect
            cell.unreadable = f"{type(exc).__name__} in IPython's transformer"

    def verdict(
        self, key: str, exercise: str, until: int, lang: str = "en", errors: dict | None = None, own=()
    ) -> Finding | None:
        """What the source decides for exercise ``exercise`` (object ``key``) checked at cell ``until``; the
        message in ``lang``. ``errors``: the kernel's error per cell index (``"SyntaxError: ..."``), ``own``: the
        indices of this exercise's solution cells. A learner cell that does not compile ran nothing when the
        kernel says so too: it is skipped (it costs its own exercise only); without the kernel's word it is
        unreadable."""
        learner = [(i, c) for i, c in enumerate(self.cells[:until]) if c.learner]
        tampering = list(dict.fromkeys(t for _, c in learner for t in c.tampering))
        if tampering:
            return Finding("tampered", "tampered", TAMPERED[lang].format(names=", ".join(tampering)))
        ran_nothing = [i for i, c in learner if self.ran_nothing(i, errors)]
        for i, cell in learner:
            if cell.unreadable and i not in ran_nothing:
                return Finding(
                    "error", "unreadable", UNREADABLE[lang].format(cell=one_line(cell.source, 60), why=cell.unreadable)
                )
        ready = ready_made(exercise, [c.tree for _, c in learner if c.tree is not None])
        if ready:
            return Finding("fail", ready[1], READY_MADE[lang].format(found=ready[0]))
        try:
            found, why = self.names.reference(key, exercise, until), self.names.not_defined(key, until, lang)
        except RecursionError:
            return Finding("error", "unreadable", UNREADABLE[lang].format(cell=key, why="nested too deeply to read"))
        if found:
            return Finding("reference", "reference", REFERENCE[lang].format(found=found))
        broken = next((self.cells[i] for i in ran_nothing if i in own), None)
        if why and broken is not None:
            return Finding(
                "error",
                "does_not_compile",
                NOT_COMPILED[lang].format(cell=one_line(broken.source, 60), why=broken.broken, key=key),
            )
        return Finding("missing", "not_defined", why) if why else None

    def ran_nothing(self, index: int, errors: dict | None) -> bool:
        """Did the learner's cell ``index`` run nothing: it does not compile (``Cell.broken``) and the kernel
        reported a compile error for it (``errors``: the kernel's error per cell, ``kernel.cell_error``)?"""
        cell = self.cells[index]
        error = str((errors or {}).get(index, ""))
        return bool(cell.broken) and error.split(":", 1)[0] in COMPILE_ERRORS


def read(cells, learner: list[int]) -> Reading:
    """A :class:`Reading` of a notebook's code cells; ``learner``: the indices of the cells the learner wrote.
    Cells that are not code are read as empty."""
    mine = set(learner)
    return Reading([Cell(c.source if c.cell_type == "code" else "", i in mine) for i, c in enumerate(cells)])
