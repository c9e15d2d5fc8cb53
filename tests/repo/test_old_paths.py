"""The eight old module paths (``llm_lab.heads`` before ``llm_lab.explore.heads``, ...): each is the moved module
itself until it is removed (CHANGELOG: deprecated in 0.2.0, removed in 0.3.0), importing one raises a
``DeprecationWarning`` naming the new path, and the project's own code, forms, docs and notebooks name only the new
paths (so no stored output shows that warning)."""

import importlib
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MOVED = {
    "llm_lab.benchmark": "llm_lab.bench.benchmark",
    "llm_lab.variants": "llm_lab.bench.variants",
    "llm_lab.env": "llm_lab.dev.env",
    "llm_lab.gpu_check": "llm_lab.dev.gpu_check",
    "llm_lab.heads": "llm_lab.explore.heads",
    "llm_lab.induction": "llm_lab.explore.induction",
    "llm_lab.plotting": "llm_lab.explore.plotting",
    "llm_lab.widgets": "llm_lab.explore.widgets",
}
SHORT = "|".join(old.split(".")[1] for old in MOVED)
OLD_NAME = re.compile(rf"\bllm_lab[./](?:{SHORT})\b(?!\.py\b)|\bfrom llm_lab import [^\n#]*\b(?:{SHORT})\b")
# Where an old path may be named: the shims themselves, the history, the package README's paragraph on them, the
# tests of the aliases; elsewhere a line may name one only if it says so ("old name" / "old path") in the line.
ALLOWED = {f"llm_lab/{old.split('.')[1]}.py" for old in MOVED} | {
    "CHANGELOG.md",
    "llm_lab/README.md",
    "tests/repo/test_old_paths.py",
    "tests/repo/test_wheel.py",
}
MARKED = re.compile(r"old (?:name|path)", re.I)


@pytest.mark.parametrize(("old", "new"), MOVED.items())
def test_each_old_path_is_the_moved_module_with_the_same_objects(old, new):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the next test sees it
        module, moved = importlib.import_module(old), importlib.import_module(new)
    assert module is moved
    public = [name for name in getattr(moved, "__all__", dir(moved)) if not name.startswith("_")]
    assert public and all(getattr(module, name) is getattr(moved, name) for name in public)


def test_the_projects_own_files_name_no_old_path():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        if name in ALLOWED or not path.is_file() or path.suffix in (".pt", ".png", ".ttf", ".txt"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OLD_NAME.search(line) and not MARKED.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, "old module paths (use the new ones, see CHANGELOG 0.2.0):\n" + "\n".join(found)


def test_the_pattern_catches_every_spelling():
    for line in (
        "import llm_lab.heads",
        "from llm_lab.induction import train",
        "python -m llm_lab.env",
        "from llm_lab import gpt2_tokenizer, heads",
        '"-m", "llm_lab.gpu_check"',
    ):
        assert OLD_NAME.search(line), line
    for line in (
        "from llm_lab.explore import heads",
        "python -m llm_lab.dev.env",
        "llm_lab.explore.induction",
        "from llm_lab import MultiHeadAttention",
        "llm_lab/explore/heads.py",
    ):
        assert not OLD_NAME.search(line), line


def test_each_old_path_warns_naming_the_new_one():
    """In a fresh interpreter (an old path warns once, when it is first imported), as a notebook imports it."""
    code = f"""if True:
        import importlib, json, warnings
        import llm_lab
        found = {{}}
        for old in {list(MOVED)!r}:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                importlib.import_module(old)
            found[old] = [(w.category.__name__, str(w.message)) for w in caught]
        print(json.dumps(found))
    """
    env_path = {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env_path, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    for old, caught in json.loads(proc.stdout).items():
        assert caught == [["DeprecationWarning", f"{old} is deprecated and removed in 0.3.0: use {MOVED[old]}"]], (
            old,
            caught,
        )


def test_no_stored_notebook_shows_the_warning():
    found = []
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                text = json.dumps(output)
                if "DeprecationWarning" in text and "llm_lab." in text:
                    found.append(f"{path.relative_to(ROOT)}: {text[:120]}")
    assert not found, "\n".join(found)
