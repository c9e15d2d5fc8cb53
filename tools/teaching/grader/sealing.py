"""The sealed ``llm_lab``: the package as the sandbox grading notebook N holds it, with none of N's answers.

``build(notebooks)`` writes a copy of the package (and its data) that the sandbox binds at ``sandbox.COURSE``.
What it leaves out, for each assigned notebook N (several: everything any of them leaves out):

- **N's answers**: every exercise of N's ``references`` (``llm_lab.exercises.REGISTRY``) that lies outside the
  exercises package, e.g. ``masks.causal_mask`` for notebook 01;
- **what the notebooks after N introduce**: the references of later exercises that no notebook up to N names
  itself, and whatever llm_lab code the later notebooks use (their imports and ``module.attribute`` uses, followed
  through the package's own imports and calls) that the notebooks up to N do not reach;
- **the checkers**: the whole exercises package except what the kernel's answering side
  (``llm_lab.exercises.grading.kernel``) imports; its ``__init__`` is replaced by one that offers
  ``set_language``/``get_language`` and a ``check_<name>`` for every checker that only says the grader checks.

Decisions are per top-level statement of each module (a function, a class, an assignment, an import): a removed
definition is cut out of the module's source (rewritten with ``ast``, so neither its source nor its bytecode is in
the copy), and so is every statement that uses something removed (an allowed class that calls a removed function
goes too), until nothing kept uses anything removed; ``__all__`` lists lose the removed names. The copy holds no
``__pycache__``. ``removed(notebooks)`` says what is left out, as dotted names under ``llm_lab``.
"""

from __future__ import annotations

import ast
import atexit
import copy
import functools
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import llm_lab
from llm_lab.exercises import REGISTRY, checkers
from llm_lab.exercises.grading import KERNEL_MODULE
from tools import course as _course

PACKAGE = Path(llm_lab.__file__).resolve().parent
EXERCISES = "exercises"  # the checkers' subpackage: only the kernel's side of it is kept

SEALED_EXERCISES_INIT = '''"""llm_lab.exercises in the grading sandbox: the checks run in the grader's process.

``set_language`` and ``get_language`` work as usual; each ``check_<name>`` only says that the grader checks.
"""

from ._core import get_language, set_language


def _checked_by_the_grader(*args, **kwargs) -> None:
    print("checked by the grader, outside this kernel")


{checks}

__all__ = ["get_language", "set_language", {names}]
'''


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

    def is_module(self, dotted: str) -> bool:
        return dotted in self.paths

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
def _graph() -> _Graph:
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
    graph = _graph()
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
    graph, series = _graph(), _series()
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
    graph = _graph()
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
def _plan(notebooks: tuple[str, ...]):
    gone: set = set()
    for nn in notebooks:
        gone |= answers(nn)
    return _closure(gone)


def removed(notebooks) -> list[str]:
    """The dotted names under llm_lab (outside the exercises package) that the sealed copy for ``notebooks``
    leaves out, sorted."""
    names, _ = _plan(tuple(sorted(set(notebooks))))
    return sorted(f"{m}.{n}" if m else n for m, n in names if not n.startswith("__"))


def _rewrite(module: str, dropped: set[int], removed_names: set[tuple[str, str]]) -> str | None:
    """The module's source without the dropped statements and the removed names of its imports and ``__all__``;
    None when nothing changes."""
    graph = _graph()
    stmts = graph.stmts[module]
    touched = bool(dropped)
    body = []
    for i, s in enumerate(stmts):
        if i in dropped:
            continue
        node = copy.deepcopy(s.node)  # the parsed module is shared by every build
        if isinstance(node, (ast.ImportFrom, ast.Import)) and s.imports:
            keep = [a for a in node.names if (module, a.asname or a.name.split(".")[0]) not in removed_names]
            touched |= len(keep) != len(node.names)
            node.names = keep
        elif _is_all(node) and isinstance(node.value, (ast.List, ast.Tuple)):
            keep = [
                e for e in node.value.elts if not (isinstance(e, ast.Constant) and (module, e.value) in removed_names)
            ]
            touched |= len(keep) != len(node.value.elts)
            node.value.elts = keep
        body.append(node)
    if not touched:
        return None
    return ast.unparse(ast.Module(body=body, type_ignores=[])) + "\n"


def _is_all(node) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _kernel_side() -> set[Path]:
    """The files of the exercises package that the kernel's answering side imports (itself included), followed
    through their relative imports: what the sealed copy keeps of the checkers' package."""
    exercises = PACKAGE / EXERCISES
    start = exercises.joinpath(*KERNEL_MODULE.split(".")[2:]).with_suffix(".py")
    seen: set[Path] = set()
    todo = [start, exercises / "grading" / "__init__.py"]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file() or path == exercises / "__init__.py":
            continue  # the package's own __init__ (the checkers) is replaced, not followed
        seen.add(path)
        here = path.parent
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*(node.module or "").split(".")) if node.module else base
                for alias in node.names:
                    todo += [target / f"{alias.name}.py", target.with_suffix(".py"), target / "__init__.py"]
    return {p for p in seen if p.is_relative_to(exercises)}


def _write_exercises(top: Path) -> None:
    for path in _kernel_side():
        target = top / "llm_lab" / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    names = list(checkers.__all__)
    (top / "llm_lab" / EXERCISES / "__init__.py").write_text(
        SEALED_EXERCISES_INIT.format(
            checks="\n".join(f"{name} = _checked_by_the_grader" for name in names),
            names=", ".join(repr(n) for n in names),
        ),
        encoding="utf-8",
    )


def build(notebooks, into: Path) -> Path:
    """The sealed copy for the assigned ``notebooks`` (numbers, "04") in ``into``: ``into/llm_lab`` and
    ``into/data`` (a checkout's data folder); returns ``into``."""
    removed_names, dropped = _plan(tuple(sorted(set(notebooks))))
    graph = _graph()
    for module, path in graph.paths.items():
        target = into / "llm_lab" / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _rewrite(module, dropped.get(module, set()), removed_names)
        if text is None:
            shutil.copyfile(path, target)
        else:
            target.write_text(text, encoding="utf-8")
    for path in PACKAGE.rglob("*"):  # data that ships inside the package (a wheel's llm_lab/_data), not docs
        rel = path.relative_to(PACKAGE)
        if path.is_file() and rel.parts[0] != EXERCISES and path.suffix not in (".py", ".pyc", ".md"):
            if "__pycache__" not in rel.parts:
                (into / "llm_lab" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, into / "llm_lab" / rel)
    _write_exercises(into)
    if (PACKAGE.parent / "data").is_dir():  # a checkout's data folder (a wheel carries it as llm_lab/_data)
        shutil.copytree(PACKAGE.parent / "data", into / "data", dirs_exist_ok=True)
    for p in [into, *into.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)  # readable by the sandbox's uid
    return into


@functools.cache
def sealed_copy(notebooks: tuple[str, ...]) -> Path:
    """``build`` for ``notebooks`` (a sorted tuple) in a folder of this grader's own, removed when it exits; made
    once per assignment."""
    top = Path(tempfile.mkdtemp(prefix="llm-lab-course-"))
    atexit.register(shutil.rmtree, top, True)
    return build(notebooks, top)


def sealed_names(notebooks) -> set[str]:
    """The plain names of llm_lab's own code that is left out (``causal_mask``; not ``torch``, which a removed
    module imported), for the course cells that name them."""
    graph = _graph()
    names, _ = _plan(tuple(sorted(set(notebooks))))
    own = set()
    for module, name in names:
        for s in graph.binding(module, name):
            if not isinstance(s.node, (ast.Import, ast.ImportFrom)) or name in s.imports:
                own.add(name)
    return {n for n in own if not n.startswith("__")}


SEALED_ERRORS = (ImportError, NameError, AttributeError)


def tolerant(source: str, names: set[str]) -> str:
    """A course cell that names something the sealed copy leaves out, run statement by statement: an import of
    several names is split into one per name, and each statement that fails for want of what is sealed
    (``SEALED_ERRORS``) is skipped, so the rest of the cell (``import torch`` after it, the next definitions)
    still runs. Other cells, and a cell that does not parse, are returned as they are."""
    if not names or not re.search(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b", source):
        return source
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    body: list[ast.stmt] = []
    for node in tree.body:
        parts = [node]
        if isinstance(node, ast.ImportFrom) and len(node.names) > 1:
            parts = [ast.ImportFrom(module=node.module, names=[a], level=node.level) for a in node.names]
        for part in parts:
            handler = ast.ExceptHandler(
                type=ast.Tuple([ast.Name(e.__name__, ast.Load()) for e in SEALED_ERRORS], ast.Load()),
                name=None,
                body=[ast.Pass()],
            )
            body.append(ast.Try(body=[part], handlers=[handler], orelse=[], finalbody=[]))
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[])))
