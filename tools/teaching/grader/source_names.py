"""Names in a notebook's parsed cells: where each is bound and to what, what the learner's code reaches through
them (llm_lab's answer for an exercise). Read from the text, never run. Used by ``source_checks``, which parses
the cells, and ``source_tampering`` (code that changes the checkers)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import llm_lab.exercises as exercises

LLM_LAB = "llm_lab"
# kinds of binding: "def" (a def/class statement of the cell itself: node is it), "assign" (name = value: node is
# the value), "module" (an imported module: node is its dotted name), "import" (from m import x: node is "m.x"),
# "star" (from m import *: node is "m"), "other" (any other binding, del included: node is None)
COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.With,
    ast.AsyncWith,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
MAX_DEPTH = 50
# Why an exercise's object is not the learner's own, in the submission's language (tools.course.LANGS).
NOT_DEFINED = {
    "global": {
        "en": "`{key}` is bound again inside a function (`global {key}`)",
        "zh": "`{key}` 在函数里被重新绑定（`global {key}`）",
    },
    "undefined": {
        "en": "no cell of yours defines `{key}` (with `def` or `class`)",
        "zh": "你的单元格里没有定义 `{key}`（用 `def` 或 `class`）",
    },
    "rebound": {
        "en": "`{key}` is bound again after your definition, by `{text}`",
        "zh": "`{key}` 在你的定义之后又被 `{text}` 重新绑定",
    },
    "yours": {
        "en": "`{key}` is not defined by a `def` or `class` of yours: it is bound by your `{text}`",
        "zh": "`{key}` 不是你用 `def` 或 `class` 定义的：它来自 `{text}`",
    },
    "course": {
        "en": "`{key}` is not defined by a `def` or `class` of yours: it is bound by a course cell's `{text}`",
        "zh": "`{key}` 不是你用 `def` 或 `class` 定义的：它来自 `{text}`",
    },
}


@dataclass(frozen=True)
class Binding:
    cell: int
    stmt: int
    name: str
    kind: str
    node: object
    learner: bool
    statement: ast.stmt

    @property
    def pos(self) -> tuple[int, int]:
        return self.cell, self.stmt

    @property
    def text(self) -> str:
        """The statement, on one line (for messages)."""
        return " ".join(ast.unparse(self.statement).split())[:80]


def bindings(stmt, top: bool = True) -> list[tuple[str, str, object]]:
    """(name, kind, node) for every module-level name ``stmt`` binds (function and class bodies bind their own)."""
    out: list[tuple[str, str, object]] = []
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(stmt.name, "def" if top else "other", stmt)]
    if isinstance(stmt, ast.Import):
        return [
            ((a.asname or a.name).split(".")[0], "module", a.name if a.asname else a.name.split(".")[0])
            for a in stmt.names
        ]
    if isinstance(stmt, ast.ImportFrom):
        module = "." * stmt.level + (stmt.module or "")
        return [
            ("*", "star", module) if a.name == "*" else (a.asname or a.name, "import", f"{module}.{a.name}")
            for a in stmt.names
        ]
    if isinstance(stmt, COMPOUND):
        return _compound_bindings(stmt)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            out += [(t.id, "assign", stmt.value)] if isinstance(t, ast.Name) else _expression_bindings(t)
        return out + _expression_bindings(stmt.value)
    return _expression_bindings(stmt)


def _compound_bindings(stmt) -> list[tuple[str, str, object]]:
    """An if/for/while/try/with/match: what its header binds, and its blocks' statements (none of them a
    definition the grader counts: it may not run)."""
    out = []
    for part in [getattr(stmt, f, None) for f in ("test", "iter", "target", "subject")] + list(
        getattr(stmt, "items", None) or []
    ):
        out += _expression_bindings(part) if part is not None else []
    blocks = [getattr(stmt, f, None) or [] for f in ("body", "orelse", "finalbody")]
    for handler in getattr(stmt, "handlers", None) or []:
        out += [(handler.name, "other", None)] if handler.name else []
        blocks.append(handler.body)
    for case in getattr(stmt, "cases", None) or []:
        out += _expression_bindings(case.pattern) + (_expression_bindings(case.guard) if case.guard else [])
        blocks.append(case.body)
    return out + [b for block in blocks for s in block for b in bindings(s, top=False)]


def _expression_bindings(node) -> list[tuple[str, str, object]]:
    """Names bound at module level inside an expression or simple statement (walrus, targets, del, captures)."""
    out = []
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(n, ast.NamedExpr):
            out.append((n.target.id, "assign", n.value))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.append((n.id, "other", None))
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.append((n.name, "other", None))
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.append((n.name, "other", None))
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.append((n.rest, "other", None))
        if isinstance(n, COMPREHENSIONS):  # only a walrus inside reaches the module
            todo += [m for m in ast.walk(n) if isinstance(m, ast.NamedExpr)]
        else:
            todo += list(ast.iter_child_nodes(n))
    return out


class Names:
    """Every binding of the parsed cells (``(tree or None, learner)`` in notebook order)."""

    def __init__(self, cells: list[tuple[ast.Module | None, bool]]):
        self.by_name: dict[str, list[Binding]] = {}
        self.stars: list[Binding] = []
        self.declared: list[tuple[int, str]] = []  # (cell, name): `global name` in a learner's function
        for ci, (tree, learner) in enumerate(cells):
            if tree is None:
                continue
            for si, stmt in enumerate(tree.body):
                for name, kind, node in bindings(stmt):
                    b = Binding(ci, si, name, kind, node, learner, stmt)
                    (self.stars if kind == "star" else self.by_name.setdefault(name, [])).append(b)
            if learner:
                self.declared += [(ci, name) for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names]

    def last(self, name: str, before: tuple[int, int]) -> Binding | None:
        """The binding of ``name`` in force just before position ``(cell, statement)``."""
        found = [b for b in (*self.by_name.get(name, ()), *self.stars) if b.pos < before]
        return max(found, key=lambda b: b.pos) if found else None

    # ---- is the exercise's object the learner's own? -------------------------------------------------------

    def not_defined(self, key: str, until: int, lang: str = "en") -> str:
        """Why ``key`` at cell ``until`` is not the learner's own ``def``/``class`` ("" if it is), in ``lang``."""
        b = self.last(key, (until, 0))
        if b is not None and b.learner and b.kind == "def":
            if any(name == key and cell < until for cell, name in self.declared):
                return NOT_DEFINED["global"][lang].format(key=key)
            return ""
        own = [x for x in self.by_name.get(key, ()) if x.learner and x.kind == "def" and x.cell < until]
        if b is None:
            return NOT_DEFINED["undefined"][lang].format(key=key)
        if own:
            return NOT_DEFINED["rebound"][lang].format(key=key, text=b.text)
        return NOT_DEFINED["yours" if b.learner else "course"][lang].format(key=key, text=b.text)

    # ---- llm_lab's answer, reached through the names -----------------------------------------------------

    def reference(self, key: str, exercise: str, until: int) -> str:
        """What of llm_lab's own answer for ``exercise`` the object ``key`` is or reaches at cell ``until``
        (``""``: nothing found): an import, an attribute of an llm_lab module however it was imported, the
        checkers' own code, or the course's own object of that name aliased by the learner."""
        record = exercises.REGISTRY.get(exercise)
        refs = {d.rpartition(".")[2] for d in (record.references if record else ())} | {"exercises"}
        b = self.last(key, (until, 0))
        if b is None or not b.learner:
            return ""
        return self._binding(b, key, _Walk(key, refs, until))

    def _binding(self, b: Binding, name: str, w: _Walk) -> str:
        if (
            b.kind == "import"
            and b.node.startswith(LLM_LAB)
            and b.node.rpartition(".")[2] in w.refs
            or b.kind == "import"
            and ".exercises" in b.node
            and b.node.startswith(LLM_LAB)
        ):
            return f"`{b.node}`"
        if b.kind == "star" and b.node.startswith(LLM_LAB) and (name in w.refs or name == w.key):
            return f"`from {b.node} import *`"
        if not b.learner:
            return f"the course's own `{name}`" if name == w.key and b.kind in ("def", "assign") else ""
        if b.kind == "def":
            return self._reaches(b.node, (w.until, 0), w)
        if b.kind == "assign":
            return self._reaches(b.node, b.pos, w)
        return ""

    def _reaches(self, node, pos: tuple[int, int], w: _Walk) -> str:
        if (id(node), pos) in w.seen or len(w.seen) > 10_000:
            return ""
        w.seen.add((id(node), pos))
        for n in ast.walk(node):
            found = ""
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                b = self.last(n.id, pos)
                found = self._binding(b, n.id, w) if b is not None and (n.id, b.pos) not in w.seen else ""
                if b is not None:
                    w.seen.add((n.id, b.pos))
            elif isinstance(n, ast.Attribute) and n.attr in w.refs and self.llm_lab_base(n.value, pos):
                found = f"`llm_lab...{n.attr}`"
            elif isinstance(n, ast.Call):
                found = self._call(n, pos, w)
            if found:
                return found
        return ""

    def _call(self, n: ast.Call, pos, w: _Walk) -> str:
        """``getattr(llm_lab_module, "reference")`` and ``__import__("llm_lab.exercises...")``."""
        arg = n.args[1].value if len(n.args) > 1 and isinstance(n.args[1], ast.Constant) else None
        if (
            isinstance(n.func, ast.Name)
            and n.func.id == "getattr"
            and arg in w.refs
            and self.llm_lab_base(n.args[0], pos)
        ):
            return f"`llm_lab...{arg}`"
        module = self._imported(n, pos)
        if module and module.startswith(f"{LLM_LAB}.exercises"):
            return f"`{module}`"
        return ""

    def _imported(self, n: ast.Call, pos) -> str:
        """The module ``__import__("m")`` or ``importlib.import_module("m")`` loads ("" if it is neither)."""
        if not (n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)):
            return ""
        func = n.func
        if isinstance(func, ast.Name) and func.id == "__import__":
            return n.args[0].value
        if isinstance(func, ast.Attribute) and func.attr == "import_module":
            return n.args[0].value
        if isinstance(func, ast.Name):
            b = self.last(func.id, pos)
            if b is not None and b.kind == "import" and b.node == "importlib.import_module":
                return n.args[0].value
        return ""

    def llm_lab_base(self, expr, pos, depth: int = 0) -> bool:
        """Is ``expr`` llm_lab or one of its modules: an imported name, an attribute chain on one,
        ``__import__("llm_lab")``, ``importlib.import_module("llm_lab.masks")``, ``getattr(llm_lab, "masks")``, or
        a name assigned one of these?"""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, ast.Attribute):
            return self.llm_lab_base(expr.value, pos, depth + 1)
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name) and expr.func.id == "getattr" and expr.args:
                return self.llm_lab_base(expr.args[0], pos, depth + 1)
            return self._imported(expr, pos).split(".")[0] == LLM_LAB
        if not isinstance(expr, ast.Name):
            return False
        b = self.last(expr.id, pos)
        if b is None:
            return False
        if b.kind in ("module", "import"):
            return b.node.split(".")[0] == LLM_LAB
        return b.kind == "assign" and self.llm_lab_base(b.node, b.pos, depth + 1)


@dataclass
class _Walk:
    key: str
    refs: set
    until: int
    seen: set = field(default_factory=set)


# ---- code that changes the checkers ---------------------------------------------------------------------------
