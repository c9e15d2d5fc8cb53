"""tests/ mirrors the code: every test module sits in a folder named for what it tests, and no test module imports
another (what several share lives in a helper module without the ``test_`` prefix; CONTRIBUTING.md, "Where the
tests are")."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# tests/<folder> -> the code it tests
MIRRORS = {
    "book": "llm_lab",  # the book's modules, the package's top level
    "exercises": "llm_lab/exercises",  # below it grading/ -> tests/exercises/grading/
    "explore": "llm_lab/explore",
    "bench": "llm_lab/bench",
    "dev": "llm_lab/dev",
    "benchmarks": "benchmarks",
    "tools": "tools",  # below it teaching/grader/ -> tests/tools/teaching/grader/, ...
}
# folders that test no one module: the stored notebooks, the repository as a whole, and the runs of their own
OTHERS = {
    "notebooks": "the stored notebooks (nbval's hygiene, Colab, quoted code)",
    "repo": "repository-wide rules (house rules, languages, Makefile, hooks, workflows, docs, the wheel)",
    "e2e": "the browser runs (make test-browser, make test-site)",
    "hub": "the JupyterHub semester (make test-hub)",
}
LOADERS = ("import_module", "spec_from_file_location", "import_path")
TEST_NAME = re.compile(r"^test(?:_\w*)?(?:\.py)?$|/test_\w+\.py$")
TEST_MODULES = sorted(p for p in TESTS.rglob("test_*.py") if "node_modules" not in p.parts)


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_test_module_sits_directly_in_tests():
    assert [rel(p) for p in TESTS.glob("test_*.py")] == []


def test_every_test_folder_names_the_code_it_mirrors():
    folders = {p.relative_to(TESTS).parts[0] for p in TEST_MODULES}
    assert folders <= set(MIRRORS) | set(OTHERS), sorted(folders - set(MIRRORS) - set(OTHERS))
    for folder, code in MIRRORS.items():
        assert (ROOT / code).is_dir(), f"tests/{folder}/ mirrors {code}/, which is gone"
    for module in TEST_MODULES:  # and each folder below one of them, the folder of the same name below the code's
        top, *below = module.relative_to(TESTS).parts[:-1]
        if top in MIRRORS and below:
            code = Path(MIRRORS[top], *below)
            assert (ROOT / code).is_dir(), f"{rel(module)}: no {code.as_posix()}/ to mirror"


def _imported_test_modules(tree: ast.AST) -> list[str]:
    """Every test module an import names: ``import test_x``, ``from test_x import y``, ``from .test_x import y``,
    ``from . import test_x``, ``importlib.import_module("test_x")`` (an f-string too) and a test file loaded by its
    path (``spec_from_file_location(..., ".../test_x.py")``)."""
    names, loaded = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names += [node.module] if node.module else [alias.name for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in LOADERS:
            strings = [n.value for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Constant)]
            loaded += [s for s in strings if isinstance(s, str) and TEST_NAME.search(s)]
    return [name for name in names if name.rsplit(".", 1)[-1].startswith("test_")] + loaded


def test_no_test_module_imports_another():
    found = {
        rel(path): imported
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts
        and (imported := _imported_test_modules(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert not found, f"move what they share into a helper module (no test_ prefix): {found}"


def test_the_import_check_sees_every_form():
    forms = [
        "import test_x",
        "from test_x import y",
        "from .test_x import y",
        "from . import test_x",
        "import tests.exercises.test_x as t",
        "importlib.import_module('test_x')",
        "importlib.import_module(f'test{name}')",
        "importlib.util.spec_from_file_location('x', ROOT / 'tests' / 'hub' / 'test_hub.py')",
    ]
    assert [len(_imported_test_modules(ast.parse(src))) for src in forms] == [1] * len(forms)
    assert _imported_test_modules(ast.parse("import _exercise_solutions\nfrom pytest import fixture")) == []
