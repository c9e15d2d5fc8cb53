"""What a submission's source says, read as text (parsed, never run), so no trick in the kernel can change it.

Every code cell of the notebook the grader runs (the course's cells, the learner's solution cells and the cells
the learner added) is read the way IPython reads it: through IPython's own ``TransformerManager`` (magics, ``!``,
``?``), then parsed. :class:`Reading` holds the parsed cells; ``Reading.verdict`` says, for one exercise, what
in the source decides it before any kernel is asked (``None``: nothing, the checkers' verdict stands):

- ``tampered``: code that changes the checkers or the watch on them (``source_names.tampering``: a ``check_*``
  redefined, llm_lab's attributes set, its grading machinery, ``sys.modules``, IPython's input hooks,
  ``sys.setprofile``/``settrace`` and the threading hooks, threads and forks);
- ``error`` (``unreadable``): a learner cell before the exercise's checker that still cannot be parsed, or that
  runs code the grader cannot read (``exec``, ``globals()``, a computed import, an IPython call other than the
  magics it writes itself, a magic that runs code elsewhere, a module that is not installed): it counts against
  the submission, so every exercise checked after it scores 0;
- ``reference``: the exercise's object is, or calls, llm_lab's own answer, found through every name it uses
  (imports, ``__import__("llm_lab")`` and ``importlib.import_module`` bases, attribute chains, ``getattr`` with a
  written name), or the course's own object of that name;
- ``missing``: the name the checker reads is not defined by a ``def``/``class`` of the learner, or something
  after that definition binds it again (a course cell that bound it before the exercise does not count).

Code that hides a name (``getattr`` with a computed string) is not found here; the kernel's own report of what
ran is the second check (the watch ``llm_lab.exercises.grading.kernel`` runs each call under). Used by ``judging``.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from dataclasses import dataclass, field

from tools.teaching.grader import source_names

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
HIDDEN_ATTRIBUTES = {
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
TAMPERED = {"en": "0 points: the code changes the checkers: {names}", "zh": "0 分：代码改动了检查器：{names}"}
REFERENCE = {
    "en": "the solution uses {found}, llm_lab's own code for this exercise: no credit",
    "zh": "解答用了 {found}，即 llm_lab 自带的代码：不计分",
}


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


def hidden(tree: ast.Module) -> str:
    """The first thing in ``tree`` that runs code the grader cannot read ("" if none)."""
    allowed = set()
    for node in ast.walk(tree):
        if _ipython_call(node):
            method = node.func.attr
            magic = _magic(ast.Expr(node))
            if (
                method in SHELL
                or magic
                and magic[1] in (INERT_LINE_MAGICS if method == "run_line_magic" else INERT_CELL_MAGICS)
            ):
                allowed.add(id(node.func.value.func))
            else:
                return f"`{ast.unparse(node)[:60]}`"
    for node in ast.walk(tree):
        found = _hidden_node(node, allowed)
        if found:
            return found
    return ""


def _hidden_node(node, allowed: set) -> str:
    if isinstance(node, ast.Name) and node.id == "get_ipython" and id(node) not in allowed:
        return "`get_ipython`"
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "`__builtins__`"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HIDDEN_CALLS:
        if node.func.id != "__import__" or not _constant_str(node.args[:1]):
            return f"`{node.func.id}(...)`"
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
    return ""


def _unreadable_import(node) -> str:
    if isinstance(node, ast.ImportFrom) and (
        node.level or any(a.name in HIDDEN_CALLS | {"get_ipython"} for a in node.names)
    ):
        return f"`{ast.unparse(node)[:60]}`"
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for name in names:
        top = name.split(".")[0]
        if top == "__main__":
            return "`import __main__`"
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


def _one_line(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Reading:
    """The parsed cells of the executed notebook, in order (``learner``: a cell the learner wrote)."""

    cells: list[Cell]
    names: source_names.Names = field(init=False)

    def __post_init__(self):
        for cell in self.cells:
            try:
                cell.tree = parse(cell.source)
            except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
                line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
                cell.unreadable = f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{line}"
                continue
            except Exception as exc:  # IPython's transformer on input it does not expect
                cell.unreadable = f"{type(exc).__name__} in IPython's transformer"
                continue
            if cell.learner:
                try:
                    cell.unreadable = hidden(cell.tree)
                    cell.tampering = source_names.tampering([cell.tree])
                except RecursionError:  # an expression nested past what the reading follows
                    cell.unreadable = "nested too deeply to read"
        self.names = source_names.Names([(c.tree, c.learner) for c in self.cells])

    def verdict(self, key: str, exercise: str, until: int, lang: str = "en") -> Finding | None:
        """What the source decides for exercise ``exercise`` (object ``key``) checked at cell ``until``; the
        message in ``lang``."""
        learner = [(i, c) for i, c in enumerate(self.cells[:until]) if c.learner]
        tampering = list(dict.fromkeys(t for _, c in learner for t in c.tampering))
        if tampering:
            return Finding("tampered", "tampered", TAMPERED[lang].format(names=", ".join(tampering)))
        for _, cell in learner:
            if cell.unreadable:
                return Finding(
                    "error", "unreadable", UNREADABLE[lang].format(cell=_one_line(cell.source), why=cell.unreadable)
                )
        try:
            found, why = self.names.reference(key, exercise, until), self.names.not_defined(key, until, lang)
        except RecursionError:
            return Finding("error", "unreadable", UNREADABLE[lang].format(cell=key, why="nested too deeply to read"))
        if found:
            return Finding("reference", "reference", REFERENCE[lang].format(found=found))
        return Finding("missing", "not_defined", why) if why else None


def read(cells, learner: list[int]) -> Reading:
    """A :class:`Reading` of a notebook's code cells; ``learner``: the indices of the cells the learner wrote.
    Cells that are not code are read as empty."""
    mine = set(learner)
    return Reading([Cell(c.source if c.cell_type == "code" else "", i in mine) for i, c in enumerate(cells)])
