"""What the sealed ``llm_lab`` leaves out (``sealing`` writes it): the analysis of the package's imports and uses.

The package's modules outside the exercises package are read with ``ast`` (nothing imported), one top-level
statement at a time: the names each binds and the units (``(module, name)``, or ``(module, None)`` for a whole
module) it uses. ``answers(nn)`` is what the sandbox grading notebook ``nn`` must not hold: its exercises'
references, the later exercises' references that no notebook up to ``nn`` names, and what only the later notebooks
reach (``names_used`` reads a notebook's code cells); ``plan(notebooks)`` closes that over every statement that
uses something removed. ``removed`` and ``sealed_names`` say what is left out.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

import llm_lab
from llm_lab.exercises import REGISTRY
from tools import course as _course

PACKAGE = Path(llm_lab.__file__).resolve().parent
EXERCISES = "exercises"  # the checkers' subpackage: only the kernel's side of it is kept


@dataclass
class _Stmt:
    """One top-level statement of a module: the names it binds, the units it uses, and (an import from llm_lab)
    what each of its names stands for."""

    node: ast.stmt
    binds: set[str] = field(default_factory=set)
    uses: set[tuple[str, str | None]] = field(default_factory=set)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # bound name -> (module, attr or None)


def _modules() -> dict[str, Path]:
    """Every module of llm_lab outside the exercises package, by its dotted name under llm_lab ('' for llm_lab)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[0] == EXERCISES or "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(module: str, level: int, name: str | None, here: str, is_package: bool) -> str | None:
    """The dotted name under llm_lab of ``from <level dots><name>``, written in module ``here``; None: not llm_lab."""
    if level == 0:
        if name == "llm_lab":
            return ""
        return name.removeprefix("llm_lab.") if name and name.startswith("llm_lab.") else None
    base = here.split(".") if here else []
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([name] if name else [])])


class _Graph:
    """The package's top-level statements and what each uses, for every module outside the exercises package."""

    def __init__(self):
        self.paths = _modules()
        self.stmts: dict[str, list[_Stmt]] = {}
        self.bound: dict[str, set[str]] = {}
        for module, path in self.paths.items():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            stmts = [self._stmt(node, module, path.name == "__init__.py") for node in tree.body]
            self.stmts[module] = stmts
            self.bound[module] = {name for s in stmts for name in s.binds}
        for module, stmts in self.stmts.items():  # uses: names bound at top level, attributes of imported modules
            aliases = {name: target for s in stmts for name, target in s.imports.items() if target[1] is None}
            for s in stmts:
                s.uses = self._uses(s.node, module, aliases)

    def _stmt(self, node, module: str, is_package: bool) -> _Stmt:
        s = _Stmt(node)
        if isinstance(node, ast.ImportFrom):
            source = _resolve(module, node.level, node.module, module, is_package)
            for alias in node.names:
                bound = alias.asname or alias.name
                s.binds.add(bound)
                if source is not None and source.split(".")[0] != EXERCISES:
                    sub = f"{source}.{alias.name}" if source else alias.name
                    s.imports[bound] = (sub, None) if sub in self.paths else (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                s.binds.add(bound)
                source = _resolve(module, 0, alias.name if alias.asname else bound, module, is_package)
                if source is not None and source in self.paths:
                    s.imports[bound] = (source, None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            s.binds.add(node.name)
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    s.binds.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    s.binds.add(sub.name)
        return s

    def _uses(self, node, module: str, aliases: dict) -> set[tuple[str, str | None]]:
        uses: set[tuple[str, str | None]] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.bound[module]:
                uses.add((module, sub.id))
            elif isinstance(sub, ast.Attribute):
                chain = _chain(sub)
                if chain and chain[0] in aliases:
                    uses.add(self.follow(aliases[chain[0]][0], chain[1:]))
        return uses

    def follow(self, module: str, attrs: list[str]) -> tuple[str, str | None]:
        """The unit ``module.attrs[0].attrs[1]...`` names: submodules followed, then the first attribute."""
        for attr in attrs:
            sub = f"{module}.{attr}" if module else attr
            if sub in self.paths:
                module = sub
            else:
                return (module, attr)
        return (module, None)

    def defined(self, unit: tuple[str, str | None]) -> tuple[str, str | None]:
        """Where ``unit`` is defined: re-exports (``llm_lab.causal_mask``) followed to their module's own name."""
        for _ in range(16):
            module, name = unit
            targets = [s.imports[name] for s in self.binding(module, name) if name in s.imports] if name else []
            if not targets:
                return unit
            unit = targets[0]
        return unit

    def binding(self, module: str, name: str) -> list[_Stmt]:
        return [s for s in self.stmts.get(module, []) if name in s.binds]

    def reach(self, units) -> set[tuple[str, str | None]]:
        """Every unit that running ``units`` may run: what their statements use and import, and what importing
        their modules runs (the modules' statements other than definitions)."""
        seen: set[tuple[str, str | None]] = set()
        todo = list(units)
        while todo:
            unit = todo.pop()
            if unit in seen:
                continue
            seen.add(unit)
            module, name = unit
            if name is None:
                stmts = [s for s in self.stmts.get(module, []) if not isinstance(s.node, _DEFINITIONS)]
            else:
                todo.append((module, None))
                stmts = self.binding(module, name)
            for s in stmts:
                todo += s.uses
                todo += [target for bound, target in s.imports.items() if name is None or bound == name]
        return seen


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _chain(node: ast.Attribute) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]``; [] when the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else []


@functools.cache
def package_graph() -> _Graph:
    """The package's graph, read once and shared by every build."""
    return _Graph()


def _code_cells(nb_path: Path) -> list[str]:
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and _course.CHECKER not in _course.tags(c)]


def _parse_cell(source: str) -> ast.Module | None:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def names_used(sources: list[str]) -> set[tuple[str, str | None]]:
    """The llm_lab units a notebook's code cells name: what they import from llm_lab, and the attributes they read
    of the llm_lab modules they import (``llm_lab.CausalAttention``, ``heads.head_scores``)."""
    graph = package_graph()
    trees = [t for t in map(_parse_cell, sources) if t is not None]
    aliases: dict[str, str] = {}
    used: set[tuple[str, str | None]] = set()
    for tree in trees:
        _imports(graph, tree, aliases, used)
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                chain = _chain(node)
                if chain and chain[0] in aliases:
                    unit = graph.follow(aliases[chain[0]], chain[1:])
                    if unit[0].split(".")[0] != EXERCISES:
                        used.add(unit)
    return used


def _imports(graph: _Graph, tree: ast.Module, aliases: dict[str, str], used: set) -> None:
    """What ``tree`` imports from llm_lab: names into ``used``, modules into ``aliases`` (bound name -> module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            source = _resolve("", 0, node.module, "", True)
            if source is None or source.split(".")[0] == EXERCISES:
                continue
            for alias in node.names:
                unit = graph.follow(source, [alias.name])
                used.add(unit)
                if unit[1] is None:
                    aliases[alias.asname or alias.name] = unit[0]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                source = _resolve("", 0, alias.name, "", True)
                if source is not None and source.split(".")[0] != EXERCISES:
                    aliases[alias.asname or "llm_lab"] = source if alias.asname else ""


@functools.cache
def _series() -> dict[str, set[tuple[str, str | None]]]:
    """Notebook number -> the llm_lab units its code cells name (every language of the instructor notebooks)."""
    series: dict[str, set[tuple[str, str | None]]] = {}
    for path in _course.find_notebooks(_course.INSTRUCTOR):
        series.setdefault(path.name[:2], set()).update(names_used(_code_cells(path)))
    return series


def _unit(dotted: str) -> tuple[str, str]:
    module, _, attr = dotted.rpartition(".")
    return (module, attr)


def answers(nn: str) -> set[tuple[str, str | None]]:
    """What the sandbox grading notebook ``nn`` must not hold (before the closure over what uses it): its
    exercises' references, later exercises' references no notebook up to ``nn`` names, and what only the later
    notebooks reach."""
    graph, series = package_graph(), _series()
    refs = {
        ex.notebook: set()
        for ex in REGISTRY.values()  # an exercise's references outside the checkers' own package
    }
    for ex in REGISTRY.values():
        refs[ex.notebook] |= {_unit(d) for d in ex.references if d.split(".")[0] != EXERCISES}
    upto = set().union(*(units for n, units in series.items() if n <= nn))
    later = set().union(*(units for n, units in series.items() if n > nn))
    gone = set(refs.get(nn, set()))
    named = {graph.defined(u) for u in upto}
    gone |= {r for n, units in refs.items() if n > nn for r in units if r not in named}
    gone |= graph.reach(later) - graph.reach(upto)
    # a module's dunders (``__all__``, ``__version__``) are no one's answer; llm_lab itself is always there
    return {u for u in gone if (u[1] is not None or u[0] != "") and not (u[1] or "").startswith("__")}


def _closure(gone: set) -> tuple[set[tuple[str, str]], dict[str, set[int]]]:
    """Every (module, name) removed once what uses a removed unit goes too; and per module the indices of the
    statements dropped whole."""
    graph = package_graph()
    removed = {u for u in gone if u[1] is not None}
    whole = {u[0] for u in gone if u[1] is None}  # a module none of whose code may be kept
    for module in whole:
        removed |= {(module, name) for name in graph.bound.get(module, ())}
    dropped: dict[str, set[int]] = {m: set() for m in graph.stmts}
    changed = True
    while changed:
        changed = False
        for module, stmts in graph.stmts.items():
            for i, s in enumerate(stmts):
                if i in dropped[module]:
                    continue
                if s.imports:
                    for bound, target in s.imports.items():
                        lost = target in removed or target[1] is None and target[0] in whole
                        if lost and (module, bound) not in removed:
                            removed.add((module, bound))
                            changed = True
                    if all((module, b) in removed for b in s.binds):
                        dropped[module].add(i)
                        changed = True
                    continue
                if any(u in removed for u in s.uses) or (s.binds and all((module, b) in removed for b in s.binds)):
                    dropped[module].add(i)
                    for b in s.binds:
                        removed.add((module, b))
                    changed = True
    return removed, dropped


@functools.cache
def plan(notebooks: tuple[str, ...]):
    """``_closure`` of what any of the assigned ``notebooks`` (a sorted tuple) leaves out: the (module, name)
    removed, and per module the indices of the statements dropped whole."""
    gone: set = set()
    for nn in notebooks:
        gone |= answers(nn)
    return _closure(gone)


def removed(notebooks) -> list[str]:
    """The dotted names under llm_lab (outside the exercises package) that the sealed copy for ``notebooks``
    leaves out, sorted."""
    names, _ = plan(tuple(sorted(set(notebooks))))
    return sorted(f"{m}.{n}" if m else n for m, n in names if not n.startswith("__"))


def sealed_names(notebooks) -> set[str]:
    """The plain names of llm_lab's own code that is left out (``causal_mask``; not ``torch``, which a removed
    module imported), for the course cells that name them."""
    graph = package_graph()
    names, _ = plan(tuple(sorted(set(notebooks))))
    own = set()
    for module, name in names:
        for s in graph.binding(module, name):
            if not isinstance(s.node, (ast.Import, ast.ImportFrom)) or name in s.imports:
                own.add(name)
    return {n for n in own if not n.startswith("__")}


# llm_lab.resources' constants that name a data file, ``(file, sha256)``: the file goes where its readers go
DATA_MODULE = "resources"
LISTING = "shipped_files"  # names every file to checksum them all: not a reader


def _data_constants() -> dict[str, list[str]]:
    """Each data constant of ``resources`` (``TRAINED_HEADS``) -> the files it names (a dict of them: every value)."""
    found = {}
    for s in package_graph().stmts.get(DATA_MODULE, []):
        if isinstance(s.node, (ast.Assign, ast.AnnAssign)) and len(s.binds) == 1:
            names = [c.value for c in ast.walk(s.node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            files = [n for n in names if "." in n and "/" not in n and " " not in n]
            if files:
                found[next(iter(s.binds))] = files
    return found


def data_left_out(notebooks) -> set[str]:
    """The data files the sealed copy for ``notebooks`` leaves out: those whose every reader (a definition that
    names the file's constant, ``resources.load_text`` too, but not ``LISTING``) is removed, as 00-07 leave out
    the trained heads that only ``heads.load_trained`` reads (its state holds a causal mask, 01's answer)."""
    graph = package_graph()
    names, _ = plan(tuple(sorted(set(notebooks))))
    left_out = set()
    for constant, files in _data_constants().items():
        readers = [
            (module, name)
            for module, stmts in graph.stmts.items()
            for s in stmts
            if isinstance(s.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and (module, s.node.name) != (DATA_MODULE, LISTING)
            and any(
                isinstance(n, ast.Name) and n.id == constant or isinstance(n, ast.Attribute) and n.attr == constant
                for n in ast.walk(s.node)
            )
            for name in s.binds
        ]
        if all(reader in names for reader in readers):
            left_out.update(files)
    return left_out
