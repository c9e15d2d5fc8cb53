"""A debugging look in a learner's cell that only shows a value: ``print(vars(layer))``,
``print(f.__code__.co_varnames)``, ``sorted(k for k in globals() if k.startswith("W"))`` as a cell's last line.
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


def reads_history(tree: ast.Module) -> bool:
    """Does ``tree`` read IPython's output history (``_``, ``__``, ``___``, ``_3``, ``Out``, ``_oh``)?"""
    names = (n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return any(HISTORY.fullmatch(n.id) for n in names)


def shown(tree: ast.Module, displayed: bool) -> set[int]:
    """The ids of the ``SHOWN_CALLS``/``SHOWN_ATTRIBUTES`` nodes in ``tree`` whose value only reaches a ``print``
    statement (a ``print(...)`` call that is a statement of its own, its keyword arguments constants) or, with
    ``displayed``, a statement that is only an expression (IPython displays it): it is shown and dropped, never
    bound, called or assigned to. Their arguments are read as usual."""
    shown: set[int] = set()
    for node in ast.walk(tree):
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print":
            if all(isinstance(k.value, ast.Constant) for k in call.keywords):  # sep=", ", end="", flush=True
                for arg in call.args:
                    _mark_shown(arg, shown)
        elif call is not None and displayed:
            _mark_shown(call, shown)
    return shown


def _mark_shown(node, shown: set[int]) -> None:
    """Mark the shown nodes along the read-only paths from ``node`` (see :func:`shown`)."""
    if isinstance(node, ast.Call) and not node.keywords:
        if isinstance(node.func, ast.Name) and node.func.id in SHOWN_CALLS:
            shown.add(id(node))
        elif isinstance(node.func, ast.Name) and node.func.id in VIEWS:
            for arg in node.args:
                _mark_shown(arg, shown)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS and not node.args:
            _mark_shown(node.func.value, shown)
    elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Load):
        if isinstance(node, ast.Attribute) and node.attr in SHOWN_ATTRIBUTES:
            shown.add(id(node))
        _mark_shown(node.value, shown)
    elif isinstance(node, (ast.JoinedStr, ast.Compare, ast.BoolOp)):
        for value in ast.iter_child_nodes(node):
            _mark_shown(value, shown)
    elif isinstance(node, ast.FormattedValue):
        _mark_shown(node.value, shown)
    elif isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)) and _only_reads(node):
        for comprehension in node.generators:
            _mark_shown(comprehension.iter, shown)


def _only_reads(node) -> bool:
    """Does the comprehension ``node`` call nothing with what it iterates but ``VIEWS`` and string tests?"""
    parts = [node.elt, *(c for g in node.generators for c in (g.target, *g.ifs))]
    return all(
        isinstance(c.func, ast.Name)
        and c.func.id in VIEWS
        or isinstance(c.func, ast.Attribute)
        and c.func.attr in STRING_TESTS | VIEW_METHODS
        for part in parts
        for c in ast.walk(part)
        if isinstance(c, ast.Call)
    )
