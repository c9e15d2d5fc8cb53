"""Code in a submission that changes the checkers or the watch on them, read from its text, never run: a
``check_*`` redefined, llm_lab's attributes set, its grading machinery, ``sys.modules``, the profile and trace
hooks, torch's switches for the modes the kernel observes through, its compilers and the doors to its answers under
other names, threads and forks. Used by ``source_checks`` (``Cell.tampering``); the names come from
``source_names``."""

from __future__ import annotations

import ast
import pkgutil

from torch import nn

import llm_lab.exercises as exercises
from llm_lab.exercises import grading
from tools.teaching.grader.source_names import LLM_LAB, Binding, Names


def _machinery_modules() -> frozenset[str]:
    """Every module inside ``llm_lab.exercises`` (found by walking the package) but the learner's ``checkers``."""
    found = pkgutil.walk_packages(exercises.__path__, exercises.__name__ + ".")
    return frozenset(m.name for m in found) - {f"{exercises.__name__}.checkers"}


# llm_lab.exercises' machinery, derived from the package: the modules a learner's code has no honest use for, and
# the attribute names that reach them (the private modules' names, except one every nn.Module has, ``_modules``;
# the grading package's; the name the grader's cells bind the kernel's side to)
MACHINERY_MODULES = _machinery_modules()
MACHINERY_NAMES = frozenset(
    {name.rpartition(".")[2] for name in MACHINERY_MODULES if name.rpartition(".")[2].startswith("_")}
    - set(dir(nn.Module()))
) | {grading.__name__.rpartition(".")[2], grading.KERNEL_ALIAS}
# the registry (its records are what the kernel watches for), IPython's hooks that rewrite the cells the grader
# adds, and the hooks the kernel's watch on the learner's calls runs on
HOOKS = (
    "REGISTRY",
    "input_transformers_cleanup",
    "input_transformers_post",
    "ast_transformers",
    "setprofile",
    "settrace",
    "setprofile_all_threads",
    "settrace_all_threads",
    "addaudithook",  # a hook of the learner's sees every event: the grader's request cells' text and their nonce
    "_getframe",
    # torch's own switches for the modes the kernel observes a call through (what ran, what was built in), and
    # the questions whether they are on: with them a learner's call may run torch's built-ins unseen, or answer
    # the grader differently from the learner's own run
    "_C",
    "overrides",
    "_python_dispatch",
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_disable_current_modes",
    "TorchFunctionMode",
    "TorchDispatchMode",
    # compilers: TorchScript and torch.compile run the learner's code below the modes, where no call is seen
    "jit",
    "_dynamo",
    "_inductor",
)
INTERNALS = MACHINERY_NAMES | set(HOOKS)
# doors to torch's answers under other names, in no lesson: torch.ops.aten.*, the compiler, Categorical.log_prob
# (``.ops`` and ``.distributions`` on anything, ``compile`` on torch and the names bound to it)
# and torch.library (a custom operator's kernel runs below both modes), torch.multiprocessing and torch.distributed
# (other processes)
TORCH_DOORS = (
    "ops",
    "compile",
    "distributions",
    "library",
    "multiprocessing",
    "distributed",
    "cpp_extension",
    "classes",
)
ANY_DOORS = ("ops", "distributions", "custom_op", "cpp_extension", "load_inline", "load_library")
# threads and processes: what runs there is outside the watch on the learner's call
THREADS = ("threading", "_thread", "multiprocessing", "concurrent")
FORKS = (
    "fork",
    "forkpty",
    "register_at_fork",
    *("system", "popen", "posix_spawn", "posix_spawnp", "startfile"),
    *("execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe"),
    *("spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnvp", "spawnvpe"),
)
# where the kernel's replies to the grader are printed: a learner object put there would read (and could rewrite)
# every reply on its way out
STREAMS = ("stdout", "stderr", "stdin", "__stdout__", "__stderr__", "displayhook", "excepthook")
REDIRECTS = ("redirect_stdout", "redirect_stderr")


def _dynamic_import(node) -> str:
    """The module ``__import__("m")`` or ``importlib.import_module("m")`` names ("" if neither)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return ""
    if (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in ("__import__", "import_module"):
        return node.args[0].value
    return ""


def course_checks(trees: list[ast.Module]) -> frozenset[str]:
    """The checkers' names: every ``check_*`` of ``llm_lab.exercises.checkers`` and every one the course's cells
    (``trees``) define or call. A learner's own ``check_window`` helper is none of them."""
    from llm_lab.exercises import checkers

    named = {n for n in dir(checkers) if n.startswith("check_")}
    for tree in trees:
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else getattr(node, "name", None)
            if isinstance(name, str) and name.startswith("check_"):
                named.add(name)
    return frozenset(named)


def module_names(trees: list[ast.Module]) -> frozenset[str]:
    """The names that hold a module or something imported from one, in any cell (``trees``): what ``import`` and
    ``from ... import`` bind, and the names assigned an attribute chain of one (``F = torch.nn.functional``)."""
    names: set[str] = set()
    nodes = [n for tree in trees for n in ast.walk(tree)]
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names if a.name != "*"}
    for _ in range(3):
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if isinstance(node.value, (ast.Attribute, ast.Name)) and _root(node.value) in names:
                    names.add(node.targets[0].id)
    return frozenset(names)


def _root(node) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def tampering(
    trees: list[ast.Module], checks: frozenset[str] | None = None, modules: frozenset[str] = frozenset()
) -> list[str]:
    """What the learner's code does to the checkers, read from its text: a ``check_*`` redefined, an attribute
    of llm_lab set or deleted, the grading internals, ``sys.modules``, the profile/trace hooks, threads or forks.
    The verdicts are computed outside the kernel, so none of this can change them; it is reported (and scores 0)
    because it has no honest use, and because a kernel whose answering code is patched, or whose watch is off,
    could hand in llm_lab's own results. ``checks``: the checkers' names (``course_checks``); None: every
    ``check_*``. ``modules``: the names holding a module or what was imported from one (``module_names``): an
    attribute set on one (``json.loads = f``, ``sys.stdout.write = f``, ``nn.Linear.forward = f``) patches code the
    kernel's answering side or a checker may run."""
    found: list[str] = []
    checker = (lambda name: name.startswith("check_")) if checks is None else checks.__contains__
    for tree in trees:
        names = Names([(tree, True)])
        roots, torches = (
            {n for n, bs in names.by_name.items() if any(_binds(b, top) for b in bs)} for top in (LLM_LAB, "torch")
        )

        def rooted(node, roots=roots) -> bool:
            while isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            return isinstance(node, ast.Name) and node.id in roots

        for node in ast.walk(tree):
            door = isinstance(node, ast.Attribute) and (
                _on(node, torches | {"torch"}, *TORCH_DOORS) or _private(node, torches | {"torch"})
            )
            found += [f"`{node.attr}` reached"] if door else _tampered(node, rooted, checker) + _workers(node)
            found += _patched(node, modules)
    return list(dict.fromkeys(found))


def _tampered(node, rooted, checker) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and checker(node.name):
        return [f"`{node.name}` redefined"]
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return [
            f"`{t.id}` replaced" if isinstance(t, ast.Name) else f"`{ast.unparse(t)}` replaced"
            for t in targets
            if isinstance(t, ast.Name)
            and checker(t.id)
            or isinstance(t, (ast.Attribute, ast.Subscript))
            and (rooted(t) or _hook(t))
        ]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and node.args
        and (rooted(node.args[0]) or isinstance(node.args[0], ast.Name) and node.args[0].id == "sys")
    ):
        return [f"`{ast.unparse(node)[:80]}`"]
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and _on(node, "sys", *STREAMS):
        return [f"`sys.{node.attr}` replaced"]
    if isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or node.attr) in REDIRECTS:
        return [f"`{getattr(node, 'id', None) or node.attr}` (the kernel's replies are printed there)"]
    if isinstance(node, ast.alias) and node.name in REDIRECTS:
        return [f"`{node.name}` imported (the kernel's replies are printed there)"]
    if isinstance(node, ast.Attribute) and (
        node.attr in INTERNALS
        or _on(node, "sys", "modules", "monitoring")
        or _on(node, "os", *FORKS)
        or node.attr in ANY_DOORS
    ):
        return [f"`{node.attr}` reached"]
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in INTERNALS | {"__code__", *ANY_DOORS}
    ):
        return [f"`{node.value!r}` named in a string (getattr and its kin reach what an attribute would)"]
    if isinstance(node, ast.ImportFrom) and not node.level and _torch_door(node.module or "", node.names):
        return [f"`{ast.unparse(node)}`"]
    if isinstance(node, ast.alias) and any(part in INTERNALS for part in node.name.split(".")):
        return [f"`{node.name}` imported"]
    if isinstance(node, ast.ImportFrom) and not node.level and _machinery(node.module or ""):
        return [f"`{node.module}` imported"]
    module = node.name if isinstance(node, ast.alias) else _dynamic_import(node)
    if module.split(".")[0] in THREADS:
        return [f"`{module}` imported (threads run outside the checks' watch)"]
    if any(part in INTERNALS for part in module.split(".")) or _machinery(module) or _torch_door(module, []):
        return [f"`{module}` imported"]
    if isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in FORKS for a in node.names):
        return [f"`{ast.unparse(node)}`"]
    return []


def _patched(node, modules: frozenset[str]) -> list[str]:
    """An attribute of a module (or of a class or function imported from one) set or deleted, or any object's
    ``__class__`` replaced."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))):
        return []
    if node.attr == "__class__" or _root(node) in modules:
        return [f"`{ast.unparse(node)[:60]}` replaced (code the grader's side of the kernel may run)"]
    return []


def _private(node: ast.Attribute, torches: set) -> bool:  # torch._anything (torch's internals, in no lesson)
    return _on(node, torches, node.attr) and node.attr.startswith("_") and not node.attr.startswith("__")


def _workers(node) -> list[str]:
    """A ``DataLoader``'s worker processes (``num_workers`` other than a written 0): they run outside the watch."""
    if isinstance(node, ast.keyword) and node.arg == "num_workers":
        if not (isinstance(node.value, ast.Constant) and node.value.value == 0):
            return [f"`num_workers={ast.unparse(node.value)[:20]}` (worker processes run outside the checks' watch)"]
    return []


def _torch_door(module: str, names) -> bool:  # torch.ops, torch.distributions.x, from torch import ops, torch._C
    door = module.split(".")[1:2] or [a.name for a in names]
    private = [d for d in door if d.startswith("_") and not d.startswith("__")]
    return module.split(".")[0] == "torch" and (any(d in TORCH_DOORS for d in door) or bool(private))


def _machinery(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in MACHINERY_MODULES)


def _on(node: ast.Attribute, module: str | set, *attrs: str) -> bool:  # module.attr (module: a name or names)
    names = {module} if isinstance(module, str) else module
    return node.attr in attrs and isinstance(node.value, ast.Name) and node.value.id in names


def _binds(b: Binding, top: str) -> bool:  # does ``b`` bind a module of the package ``top`` (or a name from one)?
    return b.kind in ("module", "import") and b.node.split(".")[0] == top


def _hook(target) -> bool:
    return isinstance(target, ast.Attribute) and target.attr in INTERNALS
