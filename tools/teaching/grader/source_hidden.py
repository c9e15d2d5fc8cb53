"""What in a learner cell runs code the grader cannot read: the magics IPython writes (read in place when they run
Python in the notebook, inert when they run nothing of it), the reflective built-ins and the standard library's
kin (``getattr`` with a name computed at run time, ``vars``, ``eval``, ``__import__``, any of them handed around as
a value), frames and the ways from any object to every other, and the modules a learner cell may import
(``READABLE_MODULES``). ``hidden`` names the first such thing in a cell; ``source_checks.Reading`` calls it on every
learner cell. Parsed, never run."""

from __future__ import annotations

import ast
import importlib.util
import re
import string

import llm_lab.exercises as exercises
from tools.teaching.grader import source_looks

# IPython magics whose argument is Python run in the notebook's namespace (read in place when they are a statement
# of their own), and those that run nothing there (display, the notebook's state); any other magic, the shell, or
# one of the first kind left elsewhere, runs code the grader does not read
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
    "lsmagic",
    "magic",
    "precision",
    "history",
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
    "matplotlib": re.compile(r"\s*(inline|widget|ipympl|notebook|agg|svg|pdf)?\s*"),  # not module://<a file>
    "autoreload": re.compile(r"\s*(0|1|2|3|off|explicit|all|complete)?\s*"),
    "config": re.compile(r"\s*InlineBackend\.\w+\s*=\s*[\w'\".{}:, \[\]-]*"),
}
# cell magics that only display their text (in the graded kernel nothing renders it). The shell and other
# languages (``!cmd``, ``%%bash``, ``%%script``, ``%%python3``, ...) are not among them: what they run is a process
# outside the watch on the learner's calls, with code the grader does not read
INERT_CELL_MAGICS = {"html", "HTML", "javascript", "js", "latex", "markdown", "svg"}
# magics that take their line as it is written; IPython formats every other magic's line (``var_expand``: ``{expr}``
# and ``$name`` are evaluated as Python in the notebook) before the magic sees it
NO_VAR_EXPAND = {"time", "timeit", "prun", "debug"}
PROCESS_MAGICS = {"bash", "sh", "script", "perl", "ruby", "python", "python2", "python3", "pypy", "sx", "system"}
# the options %timeit and %prun take, as IPython's ExecutionMagics parses them: what is left of the line is Python
# it runs (in cell mode too: %%timeit's setup statement, %%prun's line before the cell)
OPTIONS = {"timeit": ("n:r:tcp:qov:", {"strict": False, "preserve_non_opts": True}), "prun": ("D:l:rs:T:q", {})}
HIDDEN_CALLS = {"exec", "eval", "compile", "globals", "vars", "locals", "breakpoint", "__import__"}
# names a from-import may not bind: IPython's shell, and sys's import machinery (``from sys import modules``)
SYS_IMPORTS = {"get_ipython", "modules", "meta_path", "path_hooks", "path_importer_cache"}
# callables that import a module named by their string argument (a backend): only a written name, not module://
BACKENDS = {"switch_backend", "use"}
# callables of readable modules that evaluate a string as Python (an annotation, a config file's entry) or import a
# module named by one: by any name, called or not
EVALUATING = {"get_type_hints", "singledispatch", "singledispatchmethod", "fileConfig", "dictConfig", "ForwardRef"}
# submodules of readable packages that a learner cell may not reach, by import or attribute: pickles, C calls,
# imports of files by path, processes
UNREADABLE_SUBMODULES = (
    "logging.config", "logging.handlers", "torch.hub", "torch.package", "torch.serialization", "torch.multiprocessing",
    "torch.utils.cpp_extension", "torch._dynamo", "torch._inductor", "torch.utils.data._utils", "numpy.ctypeslib",
    "numpy.lib.format", "numpy.f2py", "numpy.distutils", "matplotlib.backends", "IPython.core", "IPython.utils",
)  # fmt: skip
# calls that take a dotted name as a string at this index, when given one (``BaseConfigurator.resolve``,
# ``string.Formatter.get_field``): read as the attribute chain it names
NAMED_BY_OPTIONAL = {"resolve": 0, "get_field": 0}
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
# tables, plots, time, text). Any other (inspect, builtins, importlib, types, pickle, ctypes, threading,
# subprocess, asyncio, pty, socket, ...) reaches objects, frames, code or processes by routes the text does not
# name, so a cell that imports one is unreadable; the message names this list
READABLE_MODULES = frozenset(
    {
        "torch", "numpy", "math", "cmath", "random", "time", "collections", "itertools", "functools",
        "typing", "dataclasses", "matplotlib", "tiktoken", "string", "re", "json", "textwrap", "statistics", "copy",
        "pprint", "IPython", "tqdm", "llm_lab", "sys", "os", "warnings", "abc", "enum", "heapq", "bisect",
        "contextlib", "fractions", "decimal", "datetime", "pathlib", "einops", "operator", "numbers", "gc", "logging",
        "unicodedata", "pandas", "seaborn", "__future__",
    }
)  # fmt: skip
HIDDEN_ATTRIBUTES = {
    "__getattribute__",
    "__path__",  # a package's search path: a written file becomes its submodule
    # what a weights-only torch.load may call while it loads: the allowlist is the notebook's to extend
    "add_safe_globals",
    "safe_globals",
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


def _magic(stmt) -> tuple[str, str, str, str] | None:
    """(``run_line_magic``/``run_cell_magic``, name, line, cell body) of a statement IPython wrote for a magic."""
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not (_ipython_call(call) and call.func.attr in ("run_line_magic", "run_cell_magic")):
        return None
    args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in call.args]
    if len(args) < 2 or None in args:
        return None
    return call.func.attr, args[0], args[1], args[2] if len(args) > 2 else ""


def expands(name: str, line: str) -> bool:
    """Does IPython evaluate Python in the line of the magic ``name`` before running it (``{expr}``, ``$name``)?"""
    return name not in NO_VAR_EXPAND and ("{" in line or "$" in line)


def magic_code(kind: str, name: str, line: str, cell: str = "") -> str:
    """The Python a magic of ``PYTHON_MAGICS`` runs in the notebook, split from its options by IPython's own parser
    (``%%time`` and ``%%capture`` take no Python on their line); a UsageError reads as a SyntaxError, and so does a
    line IPython would evaluate first (``%%capture {expr}``)."""
    if expands(name, line):
        raise SyntaxError(f"%{name}'s line holds {{...}} or $name, which IPython evaluates as Python first")
    if name in OPTIONS:
        from IPython.core.error import UsageError
        from IPython.core.magics.execution import ExecutionMagics

        spec, kw = OPTIONS[name]
        try:
            _, line = ExecutionMagics(shell=None).parse_options(line, spec, posix=False, **kw)
        except (UsageError, ValueError) as exc:
            raise SyntaxError(f"%{name}'s options: {exc}") from None
        return line if kind == "run_line_magic" else f"{line}\n{cell}"
    return line if kind == "run_line_magic" else cell


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
            if magic and expands(magic[1], magic[2]):
                return f"`{ast.unparse(node)[:60]}`: IPython evaluates `{{...}}` and `$name` in a magic's line"
            if magic and _inert(method, magic[1], magic[2]):
                allowed.add(id(node.func.value.func))
            elif method in ("system", "getoutput") or magic and magic[1] in PROCESS_MAGICS:
                return f"`{ast.unparse(node)[:60]}`: a process of its own, outside the watch on your calls"
            else:
                return f"`{ast.unparse(node)[:60]}`"
    shown = source_looks.shown(tree, displayed=True, kept=kept) if looks else set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    local = function_locals(tree)
    for node in ast.walk(tree):
        found = "" if id(node) in shown else _hidden_node(node, allowed, called, looped, local)
        if found:
            return found
    return ""


def _unpickles(node) -> bool:
    """May the ``load`` call ``node`` load a pickle (code that runs as it loads, never in the text)? Only
    ``json.load``, and a load that writes ``weights_only=True`` (torch) or ``allow_pickle=False`` (numpy), cannot:
    torch's own default follows an environment variable the notebook can set."""
    kws = {k.arg: k.value for k in node.keywords}
    if None in kws or "pickle_module" in kws:  # **kwargs: what they hold is not in the text
        return True
    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "json":
        return False
    safe = {"weights_only": True, "allow_pickle": False}
    return not any(isinstance(kws.get(k), ast.Constant) and kws[k].value is v for k, v in safe.items())


def _hidden_node(node, allowed: set, called: set, looped: frozenset[str] = frozenset(), local=frozenset()) -> str:
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("load", "loads")
        and _unpickles(node)
    ):
        return f"`{ast.unparse(node)[:60]}`: a pickle runs code as it loads, which the grader does not read"
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        at = NAMED_BY.get(_name_of(node.func))
        name = node.args[at] if at is not None and len(node.args) > at else None
        if at is not None and not (isinstance(name, ast.Constant) or isinstance(name, ast.Name) and name.id in looped):
            return f"a name computed at run time (`{ast.unparse(node)[:50]}`)"
    found = _named_by_string(node)
    if found:
        return found
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
    if (
        isinstance(node, (ast.Name, ast.Attribute))
        and _name_of(node) in REFLECTIVE
        and id(node) not in called
        and not (isinstance(node, ast.Name) and (not isinstance(node.ctx, ast.Load) or id(node) in local))
    ):
        return f"`{_name_of(node)}` used as a value (its target is not in the text)"
    return ""


def _named_by_string(node) -> str:
    """What ``node`` reaches through a string the grader reads as a name: an attribute chain given to ``getattr``
    and its kin (``attrgetter("_C.DisableTorchFunction")``), a backend module, a string evaluated as Python."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        at = NAMED_BY.get(_name_of(node.func), NAMED_BY_OPTIONAL.get(_name_of(node.func)))
        name = node.args[at] if at is not None and len(node.args) > at else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _hidden_path(name.value):
            return f"`{ast.unparse(node)[:60]}`: a private or hidden name reached through a string"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and _name_of(node.func) in BACKENDS
    ):
        backend = node.args[0] if node.args else None
        if backend is not None and not (isinstance(backend, ast.Constant) and ":" not in str(backend.value)):
            return f"`{ast.unparse(node)[:60]}`: a backend module named at run time or by module://, not read"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "{" in node.value:
        hidden = next((f for f in _format_fields(node.value) if _hidden_path(f)), None)
        if hidden is not None:  # str.format, or a Formatter of the notebook's, reaches what the field names
            return f"`{{{hidden[:40]}}}`: a format field that reaches a private or hidden name"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("module:"):
        return f"`{node.value[:40]}`: a module named by a string (a file the notebook wrote), not read"
    if isinstance(node, (ast.Name, ast.Attribute)) and _name_of(node) in EVALUATING:
        return f"`{_name_of(node)}`: it evaluates a string as Python, which the grader does not read"
    return ""


def _format_fields(text: str) -> list[str]:
    """The field names of ``text`` read as a format string (``"{0.__globals__[sys]}"`` → ``0.__globals__[sys]``)."""
    try:
        return [field for _, field, _, _ in string.Formatter().parse(text) if field]
    except ValueError:  # not a format string
        return []


def _hidden_path(dotted: str) -> bool:
    """Does the dotted name ``dotted`` (``"_C.DisableTorchFunction"``, ``"dumps.__globals__"``) pass through a
    private name or one ``HIDDEN_ATTRIBUTES``/``HIDDEN_CALLS`` hold?"""
    parts = re.split(r"[.\[\]]", dotted)
    return any(p.startswith("_") or p in HIDDEN_ATTRIBUTES or p in HIDDEN_CALLS or p in SYS_IMPORTS for p in parts)


def function_locals(tree: ast.Module) -> set[int]:
    """The ``Name`` nodes that read a function's own local (a parameter or a name assigned in that function's body,
    not a nested one's): ``vars = ...; return vars`` in a function is not the built-in."""
    found: set[int] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        own, names = [], set()
        todo = list(ast.iter_child_nodes(fn))
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                names.add(getattr(node, "name", None))
                continue
            own.append(node)
            todo += ast.iter_child_nodes(node)
        names |= {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        names |= {n.id for n in own if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in own):
            continue  # a global or nonlocal name: not read as local
        found |= {id(n) for n in own if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names}
    return found


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
            and not any(_hidden_path(e.value) for e in node.iter.elts)  # read as each string's attribute would be
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
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        return f"`{ast.unparse(node)[:60]}`: binds names the text does not show"
    if isinstance(node, ast.ImportFrom) and node.module:  # ``from torch import hub``: a submodule by its name
        found = next(
            (_submodule(f"{node.module}.{a.name}") for a in node.names if _submodule(f"{node.module}.{a.name}")), ""
        )
        if found:
            return found
    if isinstance(node, ast.ImportFrom) and (
        node.level or any(a.name in REFLECTIVE | HIDDEN_ATTRIBUTES | EVALUATING | SYS_IMPORTS for a in node.names)
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
    if _submodule(name):
        return _submodule(name)
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    if not found:  # a module written by the notebook itself: its code is not read
        return f"`{top}` is not an installed module"
    return ""


def _submodule(name: str) -> str:
    if any(name == sub or name.startswith(sub + ".") for sub in UNREADABLE_SUBMODULES):
        return f"`{name}` is not a module the grader reads (it loads pickles, files or processes)"
    return ""


def _name_of(func) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr


def _constant_str(args) -> bool:
    return bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
