"""What a submission's source says, read as text (parsed, never run), so no trick in the kernel can change it:
llm_lab's own answer handed in (``static_reference``), or code that changes the checkers (``static_tampering``).
Used by tools/teaching/grade.py."""

from __future__ import annotations

import ast

import llm_lab.exercises as exercises


def _llm_lab_names(tree: ast.AST) -> tuple[set[str], dict[str, str]]:
    """Names bound to the llm_lab package or its modules, and names imported from it (name -> dotted)."""
    modules, imported = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "llm_lab":
                    modules.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "llm_lab":
            for a in node.names:
                imported[a.asname or a.name] = f"{node.module}.{a.name}"
    return modules, imported


def static_reference(exercise: str, key: str, source: str) -> str | None:
    """What in the submitted solution source hands in llm_lab's own answer for ``exercise``, or None.

    Read from the text the learner submitted (it is parsed, never run), so no trick in the kernel changes it:
    ``key`` imported from llm_lab or assigned from it, or the code that defines ``key`` (and the functions of the
    solution it calls) naming one of the exercise's reference objects through llm_lab, or llm_lab's checkers.
    Code that hides the name (``getattr`` with a computed string) is not found here; the kernel's own report of
    what ran is the second check (``llm_lab.exercises._registry.watch_for``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    record = exercises.REGISTRY.get(exercise)
    refs = {d.rpartition(".")[2] for d in (record.references if record else ())}
    modules, imported = _llm_lab_names(tree)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in tree.body:  # key = llm_lab.causal_mask / key = imported_reference
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == key for t in node.targets):
            defs[key] = node
    if key in imported and key not in defs:
        return f"`{imported[key]}`"
    seen, todo = set(), [key]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        for node in ast.walk(defs[name]):
            if isinstance(node, ast.ClassDef):
                todo += [b.id for b in node.bases if isinstance(b, ast.Name)]
            if isinstance(node, ast.Name):
                if node.id in imported and (imported[node.id].rpartition(".")[2] in refs
                                            or ".exercises" in imported[node.id]):
                    return f"`{imported[node.id]}`"
                todo.append(node.id)
            elif isinstance(node, ast.Attribute) and node.attr in refs | {"exercises"}:
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and (base.id in modules or base.id in imported):
                    return f"`llm_lab...{node.attr}`"
    return None


# llm_lab's grading internals, and IPython's hooks that rewrite the cells the grader adds
INTERNALS = ("_remote", "_llm_lab_remote", "_harness", "_registry", "_fresh", "_core", "REGISTRY",
             "input_transformers_cleanup", "input_transformers_post", "ast_transformers")


def static_tampering(sources: list[str]) -> list[str]:
    """What the learner's code does to the checkers, read from its text: a ``check_*`` redefined, an attribute
    of llm_lab set or deleted, the grading internals or ``sys.modules`` touched. The verdicts are computed
    outside the kernel, so none of this can change them; it is reported (and scores 0) because it has no honest
    use, and because a kernel whose answering code is patched could hand in llm_lab's own results."""
    found: list[str] = []
    for chunk in sources:  # one cell at a time: a syntax error costs only its cell
        try:
            tree = ast.parse(chunk)
        except SyntaxError:
            continue
        modules, imported = _llm_lab_names(tree)
        roots = modules | set(imported)

        def rooted(node, roots=roots) -> bool:
            while isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            return isinstance(node, ast.Name) and node.id in roots

        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and node.name.startswith("check_"):
                found.append(f"`{node.name}` redefined")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id.startswith("check_"):
                        found.append(f"`{t.id}` replaced")
                    elif isinstance(t, (ast.Attribute, ast.Subscript)) and rooted(t):
                        found.append(f"`{ast.unparse(t)}` replaced")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("setattr", "delattr") and node.args and rooted(node.args[0]):
                found.append(f"`{ast.unparse(node)[:80]}`")
            elif isinstance(node, ast.Attribute) and (node.attr in INTERNALS or node.attr == "modules"
                                                      and isinstance(node.value, ast.Name)
                                                      and node.value.id == "sys"):
                found.append(f"`{node.attr}` reached")
            elif isinstance(node, ast.alias) and any(part in INTERNALS for part in node.name.split(".")):
                found.append(f"`{node.name}` imported")
    return list(dict.fromkeys(found))


