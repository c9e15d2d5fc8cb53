"""No definition that nothing names: vulture reads llm_lab, tools, benchmarks and tests, and every name it finds
defined and never used must be named by a notebook source, a doc page or a README, or stand in
tests/repo/vulture_whitelist.py with the library that reads it (a hook, a setting). A planted unused function fails.
vulture counts a name listed in a module's ``__all__`` as used; so it reads the package a second time with every
``__all__`` taken out, and a function that is only exported, named by nothing, is found too."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VULTURE = Path(sys.executable).with_name("vulture")
WHITELIST = Path(__file__).with_name("vulture_whitelist.py")
CODE = ("llm_lab", "tools", "benchmarks", "tests")
# pytest finds these by name: marks, hooks, fixtures (requested as arguments it fills in)
IGNORE_NAMES = "pytestmark,pytest_*,sandbox_required,alembic_on_path,fresh_hints"
IGNORE_DECORATORS = "@pytest.fixture,@atexit.register"

pytestmark = pytest.mark.skipif(not VULTURE.exists(), reason="needs vulture (requirements.txt)")


def named_in_texts(root: Path) -> set[str]:
    """Every word of the notebook sources, the docs and the READMEs: a name they use is used."""
    paths = [*root.glob("notebooks/src/*.nbsrc"), *root.glob("docs/*.md"), *root.glob("*.md")]
    paths += [*root.glob("llm_lab/**/*.md"), root / "tools" / "colab_nbval.ipynb"]
    return {w for p in paths if p.exists() for w in re.findall(r"\w+", p.read_text(encoding="utf-8"))}


def unused(root: Path) -> list[str]:
    out = subprocess.run(
        [str(VULTURE), *CODE, str(WHITELIST), "--min-confidence", "60"]
        + ["--ignore-names", IGNORE_NAMES, "--ignore-decorators", IGNORE_DECORATORS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode in (0, 3), out.stderr  # 3: vulture found something
    words = named_in_texts(ROOT)  # the texts of the repository, whichever copy of the code is read
    found = []
    for line in out.stdout.splitlines():
        name = re.search(r"unused \w+ '([^']+)'", line)
        if name and name[1] not in words:
            found.append(line)
    return found


def copy_code(root: Path) -> Path:
    """The code and the tests, copied under ``root``."""
    for top in CODE:
        shutil.copytree(ROOT / top, root / top, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    return root


def without_all(root: Path) -> Path:
    """``root``'s copy of llm_lab with every ``__all__ = [...]`` taken out (what vulture counts as a use)."""
    for path in (root / "llm_lab").rglob("*.py"):
        lines = path.read_text(encoding="utf-8").split("\n")
        spans = [
            (node.lineno, node.end_lineno)
            for node in ast.parse("\n".join(lines)).body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
        ]
        for first, last in reversed(spans):
            del lines[first - 1 : last]
        path.write_text("\n".join(lines), encoding="utf-8")
    return root


def test_no_definition_is_unnamed():
    found = unused(ROOT)
    assert not found, "defined and never named (remove it, or whitelist it with its reason):\n" + "\n".join(found)


def test_no_exported_definition_is_unnamed(tmp_path):
    found = unused(without_all(copy_code(tmp_path)))
    assert not found, "exported in __all__ and never named (remove it, or whitelist it):\n" + "\n".join(found)


PLANTED = "def nothing_calls_this_helper():\n    return 1\n"


def test_a_planted_unused_function_is_found(tmp_path):
    copy_code(tmp_path)
    (tmp_path / "llm_lab" / "planted_helper.py").write_text(PLANTED, encoding="utf-8")
    found = unused(tmp_path)
    assert len(found) == 1 and "nothing_calls_this_helper" in found[0], found


def test_a_planted_function_only_exported_is_found(tmp_path):
    """The same function listed in its module's ``__all__``: vulture misses it, and finds it once ``__all__`` is
    taken out."""
    copy_code(tmp_path)
    exported = '__all__ = ["nothing_calls_this_helper"]\n\n\n' + PLANTED
    (tmp_path / "llm_lab" / "planted_helper.py").write_text(exported, encoding="utf-8")
    assert [line for line in unused(tmp_path) if "nothing_calls_this_helper" in line] == []
    found = [line for line in unused(without_all(tmp_path)) if "nothing_calls_this_helper" in line]
    assert len(found) == 1, found
