"""The import graph, read from the source (ast, nothing imported): no circle inside llm_lab, and tools/ reach
llm_lab only through public modules (no dotted path with a component starting with ``_``).

Every import counts, at any depth of a module's code: one inside a function closes a circle as surely as one at
the top. A module reading a name from one of its own ancestor packages (``from .. import __version__`` in
``llm_lab.dev.env``) is not an edge: Python runs a package's ``__init__`` before any module inside it, so that
reference points up by construction; a circle is between modules that need each other. Imports under
``if TYPE_CHECKING:`` never run and are not edges either."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules in ``known`` that ``path`` (module ``name``) imports, its own ancestor packages left out."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known}
    return {t for t in found if not name.startswith(t + ".")}


def graph(top: str) -> dict[str, set[str]]:
    paths = {module_name(p): p for p in (ROOT / top).rglob("*.py")}
    known = set(paths)
    return {name: imported(path, name, known) - {name} for name, path in paths.items()}


def find_circle(edges: dict[str, set[str]]) -> list[str]:
    """One import circle as the list of its modules (first repeated at the end), or [] if the graph has none."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" when every path from it was followed
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (circle := visit(nxt)):
                return circle
        state[node] = "done"
        path.pop()
        return []

    for node in sorted(edges):
        if node not in state and (circle := visit(node)):
            return circle
    return []


def test_find_circle_finds_one_and_only_one():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_llm_lab_has_no_import_circle():
    edges = graph("llm_lab")
    assert "llm_lab.exercises._harness" in edges  # the graph is read from the real package
    circle = find_circle(edges)
    assert not circle, "import circle: " + " -> ".join(circle)


def private_parts(dotted: str) -> list[str]:
    return [p for p in dotted.split(".") if p.startswith("_") and not (p.startswith("__") and p.endswith("__"))]


def test_tools_import_no_private_llm_lab_module():
    found = []
    for path in sorted((ROOT / "tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
                for name in names
                if name.split(".")[0] == "llm_lab" and private_parts(name)
            ]
    assert not found, "tools import llm_lab's private modules or names:\n" + "\n".join(found)
