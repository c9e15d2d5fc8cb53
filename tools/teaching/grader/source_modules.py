"""Which modules a learner cell reaches through names: what an import in any cell bound (the course's included),
and the attribute chains from a readable module to another module (``torch.serialization.pickle``,
``np.ctypeslib.ctypes``, ``logging.threading``): a module a learner cell may not import is not reached by another
route. Resolved on the grader's own installed modules (module attributes only, never a call). Parsed, never run."""

from __future__ import annotations

import ast
import importlib
import types

from tools.teaching.grader import source_hidden

# modules that stand under another name in readable ones (os.path is posixpath)
ALIASES = {"posixpath", "ntpath", "genericpath"}


def unread_bindings(trees: list[ast.Module]) -> dict[str, str]:
    """The names an ``import`` in any cell (the course's included: a setup cell's ``import subprocess``) binds to a
    module a learner cell may not import, and what makes it so; a learner cell that uses one of them reaches that
    module without naming it in an import of its own."""
    bound: dict[str, str] = {}
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Import):
            for a in node.names:
                why = source_hidden._unreadable_module(a.name)
                if why:
                    bound[a.asname or a.name.split(".")[0]] = why
        elif isinstance(node, ast.ImportFrom) and not node.level:
            why = source_hidden._unreadable_module(node.module or "")
            bound |= {a.asname or a.name: why for a in node.names if why and a.name != "*"}
    return bound


def uses_unread(tree: ast.Module, bound: dict[str, str]) -> str:
    """Why ``tree`` reads a name ``unread_bindings`` found ("" if it reads none)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound:
            return f"`{node.id}` holds what an import bound: {bound[node.id]}"
    return ""


def readable_bindings(trees: list[ast.Module]) -> dict[str, str]:
    """The names an ``import`` in any cell binds to a module a learner cell may import: name -> module name."""
    bound: dict[str, str] = {}
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not source_hidden._unreadable_module(a.name):
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for a in node.names:
                if a.name != "*" and not source_hidden._unreadable_module(node.module):
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
    return bound


def _resolve(node, bound: dict[str, str], seen: dict):
    """The module ``node`` (a name or an attribute chain) stands for, or None."""
    if id(node) in seen:
        return seen[id(node)]
    found = None
    if isinstance(node, ast.Name) and node.id in bound:
        found = _module(bound[node.id])
    elif isinstance(node, ast.Attribute):
        found = _child(_resolve(node.value, bound, seen), node.attr)
    elif isinstance(node, ast.Call) and _named(node.func, "getattr") and len(node.args) >= 2:
        found = _child(_resolve(node.args[0], bound, seen), _written(node.args[1]))  # getattr(np, "ctypeslib")
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and _named(node.func.func, "attrgetter"):
        found = _resolve(node.args[0], bound, seen) if node.args else None  # attrgetter("a.b")(np)
        for part in (_written(node.func.args[0]) if node.func.args else "").split("."):
            found = _child(found, part)
    seen[id(node)] = found
    return found


def _named(func, name: str) -> bool:
    return isinstance(func, ast.Name) and func.id == name or isinstance(func, ast.Attribute) and func.attr == name


def _written(node) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _child(parent, attr: str):
    """The module ``parent.attr`` is, or None (no parent, no such attribute, not a module)."""
    if parent is None or not attr:
        return None
    try:
        child = getattr(parent, attr, None)
    except Exception:  # a module's own __getattr__ that fails
        return None
    return child if isinstance(child, types.ModuleType) else None


def _module(dotted: str):
    """The installed module ``dotted`` names (``torch``, ``numpy.lib``), or the module attribute it names
    (``torch.serialization`` from ``from torch import serialization``); None if neither."""
    try:
        return importlib.import_module(dotted)
    except Exception:
        head, _, attr = dotted.rpartition(".")
        try:
            child = getattr(importlib.import_module(head), attr, None) if head else None
        except Exception:
            return None
        return child if isinstance(child, types.ModuleType) else None


def through_modules(tree: ast.Module, bound: dict[str, str]) -> str:
    """Why ``tree`` reaches a module a learner cell may not import through an attribute of a readable one ("" if
    it does not): ``bound`` is :func:`readable_bindings`."""
    seen: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Call)):
            module = _resolve(node, bound, seen)
            name = getattr(module, "__name__", "")
            why = "" if module is None or name in ALIASES else source_hidden._unreadable_module(name)
            if why:
                return f"`{ast.unparse(node)[:60]}` is the module `{name}`: {why}"
    return ""
