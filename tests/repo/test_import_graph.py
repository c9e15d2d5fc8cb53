"""The plan of the house, checked by import-linter: the contracts in pyproject.toml (``[tool.importlinter]``),
which ``make lint`` and pre-commit run as ``lint-imports``, hold on the repository, and each of them fails on a
copy of the repository with one wrong import planted in it (docs/architecture.md, "The house rules").

import-linter reads the imports of ``llm_lab``, ``tools`` and ``benchmarks`` from their source (grimp; nothing is
imported), at any depth of a module's code. It sees modules, not names: that the tools and the benchmarks import
no private *name* (``from llm_lab.exercises import _CHECKS``) is ruff's rule PLC2701 in ``make lint``
(pyproject.toml), shown failing by the last test here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("llm_lab", "tools", "benchmarks")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="needs import-linter (requirements.txt)")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` as make lint runs it, on the packages under ``root`` (found there first: PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_repository_keeps_every_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout, result.stdout


def test_make_lint_runs_the_contracts():
    assert "lint-imports --no-logo --no-cache" in (ROOT / "Makefile").read_text(encoding="utf-8")


# Each plant: (file written into the copy, its text, the contract that must break, what the report names).
PLANTS = {
    "private import from the benchmarks": (
        "benchmarks/planted.py",
        "from llm_lab.exercises import _harness\n",
        "a private module (_name) of llm_lab is imported only inside its own package",
        "benchmarks.planted -> llm_lab.exercises._harness",
    ),
    "private import from the package's top level, inside a function": (
        "llm_lab/planted.py",
        "def later():\n    from llm_lab.exercises._core import one_line\n",
        "a private module (_name) of llm_lab is imported only inside its own package",
        "llm_lab.planted -> llm_lab.exercises._core",
    ),
    "the package importing the tools": (
        "llm_lab/planted.py",
        "import tools.course\n",
        "llm_lab never imports tools or benchmarks",
        "llm_lab.planted -> tools.course",
    ),
    "one room reaching into another": (
        "llm_lab/bench/planted.py",
        "from llm_lab.explore import heads\n",
        "explore, bench, dev and exercises do not import each other",
        "llm_lab.bench.planted -> llm_lab.explore.heads",
    ),
    "a circle between two modules of one package": (
        "llm_lab/explore/planted.py",
        "from . import copy_data\n",
        "no import circle among the modules of one package",
        "",
    ),
}


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("house")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
    return root


@pytest.mark.parametrize("plant", PLANTS)
def test_each_contract_fails_on_a_planted_import(copy_root, plant):
    path, text, contract, named = PLANTS[plant]
    target = copy_root / path
    changed = [target]
    if plant.startswith("a circle"):  # copy_data imports the planted module back: explore.copy_data <-> planted
        data = copy_root / "llm_lab/explore/copy_data.py"
        original = data.read_text(encoding="utf-8")
        data.write_text(original + "\nfrom . import planted  # noqa\n", encoding="utf-8")
    target.write_text(text, encoding="utf-8")
    try:
        result = lint_imports(copy_root)
    finally:
        for p in changed:
            p.unlink()
        if plant.startswith("a circle"):
            data.write_text(original, encoding="utf-8")
    assert result.returncode != 0, result.stdout
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert f"{contract}" in broken and named in broken, result.stdout
    assert "1 broken" in result.stdout, result.stdout  # that plant breaks its own contract and no other


RUFF = Path(sys.executable).with_name("ruff")


@pytest.mark.parametrize(
    ("path", "flagged"),
    [("tools/planted.py", True), ("benchmarks/planted.py", True), ("llm_lab/planted.py", False)],
)
def test_make_lints_ruff_flags_a_private_name_from_the_tools(tmp_path, path, flagged):
    """``from llm_lab.exercises import _CHECKS`` in the tools or the benchmarks fails ``ruff check`` with the
    repository's configuration (PLC2701); inside the package, where import-linter keeps the private modules home,
    it does not."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / path).parent.mkdir()
    (tmp_path / path).write_text("from llm_lab.exercises import _CHECKS\n\nprint(_CHECKS)\n", encoding="utf-8")
    result = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--output-format", "concise", path],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode != 0) == flagged, result.stdout + result.stderr
    assert ("import-private-name" in result.stdout and "`_CHECKS`" in result.stdout) == flagged, result.stdout
