"""The sealed ``llm_lab``: the package as the sandbox grading notebook N holds it, with none of N's answers.

``build(notebooks)`` writes a copy of the package (and its data) that the sandbox binds at ``sandbox.COURSE``.
What it leaves out, for each assigned notebook N (several: everything any of them leaves out):

- **N's answers**: every exercise of N's ``references`` (``llm_lab.exercises.REGISTRY``) that lies outside the
  exercises package, e.g. ``masks.causal_mask`` for notebook 01;
- **the data only those read**: a data file none of whose readers the copy keeps (``seal_plan.data_left_out``:
  00-07 hold no trained heads, whose state has a causal mask);
- **what the notebooks after N introduce**: the references of later exercises that no notebook up to N names
  itself, and whatever llm_lab code the later notebooks use (their imports and ``module.attribute`` uses, followed
  through the package's own imports and calls) that the notebooks up to N do not reach;
- **the checkers**: the whole exercises package except what the kernel's answering side
  (``llm_lab.exercises.grading.answering``) imports, and of that the hint texts (``HINT_TABLES``, empty); its
  ``__init__`` is replaced by one that offers
  ``set_language``/``get_language`` and a ``check_<name>`` for every checker that only says the grader checks.

Decisions are per top-level statement of each module (a function, a class, an assignment, an import): a removed
definition is cut out of the module's source (rewritten with ``ast``, so neither its source nor its bytecode is in
the copy), and so is every statement that uses something removed (an allowed class that calls a removed function
goes too), until nothing kept uses anything removed; ``__all__`` lists lose the removed names. The copy holds no
``__pycache__``. ``seal_plan`` decides what is left out (``seal_plan.removed(notebooks)``: as dotted names
under ``llm_lab``); this module writes the copy.
"""

from __future__ import annotations

import ast
import atexit
import copy
import functools
import re
import shutil
import tempfile
from pathlib import Path

from llm_lab.exercises import checkers
from llm_lab.exercises.grading import KERNEL_MODULE
from tools.teaching.grader.seal_plan import EXERCISES, PACKAGE, data_left_out, package_graph, plan

SEALED_EXERCISES_INIT = '''"""llm_lab.exercises in the grading sandbox: the checks run in the grader's process.

``set_language`` and ``get_language`` work as usual; each ``check_<name>`` only says that the grader checks.
"""

from ._core import get_language, set_language


def _checked_by_the_grader(*args, **kwargs) -> None:
    print("checked by the grader, outside this kernel")


{checks}

__all__ = ["get_language", "set_language", {names}]
'''


def _rewrite(module: str, dropped: set[int], removed_names: set[tuple[str, str]]) -> str | None:
    """The module's source without the dropped statements and the removed names of its imports and ``__all__``;
    None when nothing changes."""
    graph = package_graph()
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


# The hint tables of ``_messages`` (the concept lines and the exact fixes) that the kernel's side imports with
# ``_core`` but never reads: the sealed copy holds them empty, since a fix text is part of an answer.
HINT_TABLES = ("MESSAGES", "FIXES")


def _without_hints(source: str) -> str:
    """``_messages``' source with each of ``HINT_TABLES`` assigned an empty dict."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _binds(node, HINT_TABLES):
            node.value = ast.Dict(keys=[], values=[])
    return ast.unparse(tree) + "\n"


def _binds(node, names) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(t, ast.Name) and t.id in names for t in targets)


def _write_exercises(top: Path) -> None:
    for path in _kernel_side():
        target = top / "llm_lab" / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.name == "_messages.py":
            target.write_text(_without_hints(path.read_text(encoding="utf-8")), encoding="utf-8")
        else:
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
    removed_names, dropped = plan(tuple(sorted(set(notebooks))))
    graph = package_graph()
    for module, path in graph.paths.items():
        target = into / "llm_lab" / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _rewrite(module, dropped.get(module, set()), removed_names)
        if text is None:
            shutil.copyfile(path, target)
        else:
            target.write_text(text, encoding="utf-8")
    unread = data_left_out(notebooks)  # data files none of whose readers the copy keeps
    for path in PACKAGE.rglob("*"):  # data that ships inside the package (a wheel's llm_lab/_data), not docs
        rel = path.relative_to(PACKAGE)
        if path.is_file() and rel.parts[0] != EXERCISES and path.suffix not in (".py", ".pyc", ".md"):
            if path.name in unread:
                continue
            if "__pycache__" not in rel.parts:
                (into / "llm_lab" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, into / "llm_lab" / rel)
    _write_exercises(into)
    if (PACKAGE.parent / "data").is_dir():  # a checkout's data folder (a wheel carries it as llm_lab/_data)
        shutil.copytree(
            PACKAGE.parent / "data", into / "data", dirs_exist_ok=True, ignore=lambda _d, names: unread & set(names)
        )
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
