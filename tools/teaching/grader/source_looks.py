"""A debugging look in a learner's cell that only shows a value: ``print(vars(layer))``,
``print(f.__code__.co_varnames)``, ``sorted(k for k in globals() if k.startswith("W"))`` as a cell's last line,
``d = vars(layer)`` then ``print(d)`` (a name that holds a look and is only ever shown: ``kept``).
``vars``, ``globals``, ``__code__`` and their kin can reach what the grader cannot read
(``source_checks.HIDDEN_CALLS``); a value that is only printed or displayed is never bound, called or assigned
to, so such a look is read like any other code. Used by ``source_checks.hidden``; parsed, never run."""

from __future__ import annotations

import ast
import re

# the looks, and what their value may pass through on its way to print or the display: reads (attributes,
# subscripts, f-strings, comparisons), the views below and the dict views
SHOWN_CALLS = {"vars", "globals", "locals"}
SHOWN_ATTRIBUTES = {"__code__", "__dict__", "__closure__", "__globals__"}
VIEWS = {"len", "sorted", "list", "tuple", "set", "repr", "str", "type", "dir"}
VIEW_METHODS = {"keys", "values", "items"}
STRING_TESTS = {"startswith", "endswith", "isidentifier", "islower", "isupper"}
HISTORY = re.compile(r"_{1,3}|_\d+|Out|_oh")  # where IPython keeps what it displayed
CATCHERS = {"displayhook", "history_manager", "output_hist", "InteractiveShell", "user_ns"}  # ... and its hooks
PRINTERS = {"print", "pprint", "display"}


def trusted(trees: list[ast.Module]) -> bool:
    """May the learner's looks be read at all? Not when a learner cell (``trees``) could catch a shown value:
    reads IPython's output history (``_``, ``__``, ``___``, ``_3``, ``Out``, ``_oh``), reaches the display hook
    or the history manager, or binds a name the looks pass through (``print``, ``pprint``, ``sorted``, ...)."""
    nodes = [n for tree in trees for n in ast.walk(tree)]
    own = {id(a) for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)) for a in _printer_imports(n)}
    for node in nodes:
        if id(node) in own:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and HISTORY.fullmatch(node.id):
            return False
        if isinstance(node, (ast.Attribute, ast.Name)) and (getattr(node, "attr", None) or node.id) in CATCHERS:
            return False
        if _binds(node) & (PRINTERS | VIEWS) or _rebinds(node):
            return False
    return True


def _rebinds(node) -> bool:
    """Does ``node`` set an attribute named like a printer, a view or a hook on some object (``pprint.pprint =
    f``, ``IPython.display.display = f``, ``setattr(sys, "displayhook", f)``)?"""
    names = PRINTERS | VIEWS | CATCHERS | {"stdout", "stderr", "write"}
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.attr in names
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
        name = node.args[1] if len(node.args) > 1 else None
        return not (isinstance(name, ast.Constant) and name.value not in names)
    return False


def _printer_imports(node) -> list:
    """The aliases of ``import pprint``, ``from pprint import pprint``, ``from IPython.display import display``
    (no ``as``): they bind a printer to itself."""
    module = node.module if isinstance(node, ast.ImportFrom) else ""
    return [
        a
        for a in node.names
        if a.asname is None
        and (module, a.name) in (("", "pprint"), ("pprint", "pprint"), ("IPython.display", "display"))
    ]


def _binds(node) -> set[str]:
    """The names ``node`` binds (or declares global): assignments, ``def``/``class``, imports, ``global``."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.alias):
        return {(node.asname or node.name).split(".")[0]}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    if isinstance(node, ast.arg):
        return {node.arg}
    return set()


def kept(trees: list[tuple[ast.Module, bool]]) -> frozenset[str]:
    """The names that hold only a look (``d = vars(layer)`` in a learner cell) and are only ever shown: every
    binding of the name, in every cell (``trees``: each cell's tree and whether the learner wrote it), is such a
    plain assignment in a learner cell (no ``+=``, ``for``, ``def``, ``del``, ``global``, import or argument of
    that name), and every read of it is where a look may be (printed, displayed, or the value of another kept
    name). Only for ``trusted`` notebooks. A name read anywhere else (``d["x"] = 1``, ``d.update(...)``,
    ``print(d.pop("x"))``, ``f(d)``) is not kept, and its look is read as what it is."""
    assigns = {}  # name -> ids of the Name targets of its plain assignments in learner cells
    for tree, learner in trees:
        for node in ast.walk(tree):
            if learner and isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and not _reserved(target.id):
                    assigns.setdefault(target.id, set()).add(id(target))
    names = set(assigns)
    for tree, _ in trees:  # a binding of any other kind (every route to the module's globals is unreadable)
        for node in ast.walk(tree):
            names -= {n for n in _binds(node) & names if id(node) not in assigns[n]}
    while names:
        reads = [n for tree, _ in trees for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names]
        marked = set().union(*(shown(tree, displayed=True, kept=frozenset(names)) for tree, _ in trees))
        stray = {n.id for n in reads if isinstance(n.ctx, ast.Load) and id(n) not in marked}
        if not stray:
            break
        names -= stray
    return frozenset(names)


def _reserved(name: str) -> bool:
    return bool(HISTORY.fullmatch(name)) or name in CATCHERS | PRINTERS | VIEWS | SHOWN_CALLS | {
        "get_ipython",
        "__builtins__",
    }


def shown(tree: ast.Module, displayed: bool, kept: frozenset[str] = frozenset()) -> set[int]:
    """The ids of the ``SHOWN_CALLS``/``SHOWN_ATTRIBUTES`` nodes in ``tree`` whose value only reaches a printing
    statement (``print(...)``, ``pprint(...)`` or ``display(...)`` as a statement of its own, its keyword
    arguments plain: ``sep=", "``, ``file=sys.stderr``) or, with ``displayed``, a statement that is only an
    expression (IPython displays it): it is shown and dropped, never bound, called or assigned to. Their
    arguments are read as usual. ``kept``: names that hold a look (:func:`kept`): their reads on those paths are
    marked too, and the value assigned to them is followed like a printed one. Only for ``trusted`` notebooks."""
    shown: set[int] = set()
    for node in ast.walk(tree):
        call = node.value if isinstance(node, ast.Expr) else None
        if _printing(call):
            for arg in call.args:
                _mark_shown(arg, shown, kept)
        elif call is not None and displayed:
            _mark_shown(call, shown, kept)
        elif isinstance(node, ast.JoinedStr):  # an f-string turns its values into text at once
            _mark_shown(node, shown, kept)
        elif _keeps(node, kept):
            _mark_shown(node.value, shown, kept)
    return shown


def _keeps(node, kept: frozenset[str]) -> bool:  # `d = <look>` with d kept
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in kept
    )


def _printing(call) -> bool:
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    named = isinstance(func, ast.Name) and func.id in PRINTERS
    dotted = (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr == func.value.id == "pprint"
    )
    return (named or dotted) and all(_plain_keyword(k.value) for k in call.keywords)


def _plain_keyword(value) -> bool:  # a constant, a name (sep=SEP), sys.stdout or sys.stderr
    if isinstance(value, (ast.Constant, ast.Name)):
        return True
    return (
        isinstance(value, ast.Attribute)
        and isinstance(value.value, ast.Name)
        and value.value.id == "sys"
        and value.attr in ("stdout", "stderr")
    )


def _mark_shown(node, shown: set[int], kept: frozenset[str] = frozenset()) -> None:
    """Mark the shown nodes along the read-only paths from ``node`` (see :func:`shown`)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in kept:
        shown.add(id(node))
    elif isinstance(node, ast.Call) and not node.keywords:
        if isinstance(node.func, ast.Name) and node.func.id in SHOWN_CALLS:
            shown.add(id(node))
        elif isinstance(node.func, ast.Name) and node.func.id in VIEWS:
            for arg in node.args:
                _mark_shown(arg, shown, kept)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS and not node.args:
            _mark_shown(node.func.value, shown, kept)
    elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Load):
        if isinstance(node, ast.Attribute) and node.attr in SHOWN_ATTRIBUTES:
            shown.add(id(node))
        _mark_shown(node.value, shown, kept)
    elif isinstance(node, (ast.JoinedStr, ast.BoolOp)):  # not Compare: `==` may call the other side's __eq__
        for value in ast.iter_child_nodes(node):
            _mark_shown(value, shown, kept)
    elif isinstance(node, ast.FormattedValue):
        _mark_shown(node.value, shown, kept)
    elif isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)) and _only_reads(node):
        for comprehension in node.generators:
            _mark_shown(comprehension.iter, shown, kept)


def _only_reads(node) -> bool:
    """Does the comprehension ``node`` call nothing with what it iterates but ``VIEWS`` and string tests, and
    bind nothing outside it (no ``:=``)?"""
    parts = [node.elt, *(c for g in node.generators for c in (g.target, *g.ifs))]
    if any(isinstance(c, ast.NamedExpr) for part in parts for c in ast.walk(part)):
        return False
    return all(
        isinstance(c.func, ast.Name)
        and c.func.id in VIEWS
        or isinstance(c.func, ast.Attribute)
        and c.func.attr in STRING_TESTS | VIEW_METHODS
        for part in parts
        for c in ast.walk(part)
        if isinstance(c, ast.Call)
    )
