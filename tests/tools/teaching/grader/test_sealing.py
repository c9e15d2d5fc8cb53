"""tools/teaching/grader/sealing.py: the llm_lab the sandbox grading notebook N holds has none of N's answers,
nothing the later notebooks introduce and none of the checkers, keeps what the earlier notebooks built, and
imports; in the real sandbox it is the only llm_lab there is, and a submission that reaches for an answer finds
nothing (it scores 0) while an honest one keeps full marks."""

from __future__ import annotations

import ast
import functools
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import _course_fixture as fx
import nbformat
import pytest

import llm_lab
from llm_lab.exercises import REGISTRY
from tools import course as _course
from tools.teaching.grader import cli, matching, sandbox, seal_plan, sealing

NOTEBOOKS = sorted({ex.notebook for ex in REGISTRY.values()})
PACKAGE = Path(llm_lab.__file__).resolve().parent
# Code only the later notebooks use, each with the first notebook that uses it: absent from every earlier seal.
LATER = {
    "kv_cache.KVCache": "07",
    "kv_cache.causal_mask_bottom_right": "07",
    "bench.variants.build_contestants": "07",
    "explore.induction.train": "08",
    "explore.circuit.path_effects": "08",
    "dataset.GPTDatasetV1": "06",
}
CHECKERS = ("_registry.py", "_shared.py", "_modules.py", "checkers.py", "_ex01_masks.py", "_ex07_tiled.py")


def references(nn: str) -> set[tuple[str, str]]:
    """(module file under llm_lab, name) of every reference of notebook ``nn``'s exercises outside the checkers."""
    found = set()
    for ex in REGISTRY.values():
        if ex.notebook == nn:
            for dotted in ex.references:
                module, _, name = dotted.rpartition(".")
                if not module.startswith("exercises"):
                    found.add((module, name))
    return found


def _defines(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name for n in tree.body
    )


def _module_file(top: Path, module: str) -> Path:
    path = top / "llm_lab" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def answers_present(top: Path, nn: str) -> list[str]:
    """What of notebook ``nn``'s answers ``top/llm_lab`` holds: a reference defined in its module, a reference's
    ``def``/``class`` line anywhere (source or bytecode), later notebooks' code, the checkers, any bytecode."""
    found = []
    files = [p for p in top.rglob("*") if p.is_file()]
    blobs = {p: p.read_bytes() for p in files if p.suffix in (".py", ".pyc")}
    later = [d for d, first in LATER.items() if first > nn]
    for module, name in sorted(references(nn)) + [tuple(d.rsplit(".", 1)) for d in later]:
        path = _module_file(top, module)
        if path.is_file() and _defines(ast.parse(path.read_text(encoding="utf-8")), name):
            found.append(f"{module}.{name} defined")
        for p, blob in blobs.items():
            if f"def {name}(".encode() in blob or f"class {name}(".encode() in blob:
                found.append(f"{module}.{name} in {p.relative_to(top)}")
    texts = blobs.values()
    found += [f"hint text: {hint}" for hint, text in _hint_texts().items() if any(text in b for b in texts)]
    found += [f"checkers: {p.name}" for p in files if p.name in CHECKERS]
    found += [f"bytecode: {p.relative_to(top)}" for p in files if p.suffix == ".pyc"]
    return found


@functools.cache
def _hint_texts() -> dict[str, bytes]:
    """Every concept line and fix text the checkers show (the shared tables and each exercise's own), as bytes of
    its longest line: what the sealed copy must not hold, since a fix names the answer."""
    from llm_lab.exercises import _messages

    tables = [_messages.MESSAGES, _messages.FIXES]
    tables += [t for ex in REGISTRY.values() for t in (ex.messages, ex.fixes)]
    return {
        f"{hint}/{lang}": max(text.splitlines(), key=len).encode()
        for table in tables
        for hint, langs in table.items()
        for lang, text in langs.items()
        if len(text) > 30
    }


@functools.cache
def sealed(nn: str, root: str) -> Path:
    top = Path(root) / f"sealed-{nn}"
    if not top.exists():
        top.mkdir()
        sealing.build([nn], top)
    return top


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("sealing"))


def test_the_check_finds_the_answers_in_the_full_package(tmp_path):
    full = tmp_path / "full"
    shutil.copytree(PACKAGE, full / "llm_lab")
    for nn in NOTEBOOKS:
        present = answers_present(full, nn)
        assert any("defined" in f for f in present) and any("checkers" in f for f in present), (nn, present)
        assert any("hint text" in f for f in present), (nn, present)


@pytest.mark.parametrize("nn", NOTEBOOKS)
def test_the_sealed_copy_holds_no_answer_of_its_notebook(nn, root):
    top = sealed(nn, root)
    assert answers_present(top, nn) == []
    assert not list(top.rglob("__pycache__"))


@pytest.mark.parametrize("nn", NOTEBOOKS)
def test_a_data_file_goes_where_its_readers_go(nn, root):
    """The trained heads (whose state holds a causal mask: 01's answer) are only in the copies that keep
    ``heads.load_trained`` (08 on); the text only where ``load_text`` is kept; the figure font everywhere."""
    files = {p.name for p in sealed(nn, root).rglob("*") if p.is_file()}
    kept = "explore.heads.load_trained" not in seal_plan.removed([nn])
    assert ("heads-verdict.pt" in files) == kept == (nn >= "08"), (nn, kept)
    assert ("the-verdict.txt" in files) == ("load_text" not in seal_plan.removed([nn]))
    assert "NotoSansSC-llmlab-subset.ttf" in files


@pytest.mark.parametrize("nn", NOTEBOOKS)
def test_the_sealed_copy_keeps_what_the_earlier_notebooks_built(nn, root):
    """Every reference of an earlier notebook that is no answer of this one is there, with its source."""
    top = sealed(nn, root)
    own = references(nn)
    kept = [
        (module, name)
        for earlier in NOTEBOOKS
        if earlier < nn
        for module, name in references(earlier) - own
        if f"{module}.{name}" not in seal_plan.removed([nn])
    ]
    for module, name in kept:
        assert _defines(ast.parse(_module_file(top, module).read_text(encoding="utf-8")), name), (module, name)
    if nn > "01":  # the causal mask the learner built in 01 is llm_lab's from then on
        assert _defines(ast.parse((top / "llm_lab" / "masks.py").read_text(encoding="utf-8")), "causal_mask")
    removed = seal_plan.removed([nn])
    assert not [r for r in removed if r in {f"{m}.{n}" for m, n in kept}]


IMPORT_ALL = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    sys.path.insert(0, sys.argv[1])
    import llm_lab, llm_lab.exercises.grading.answering
    assert llm_lab.__file__.startswith(sys.argv[1]), llm_lab.__file__
    for name in llm_lab.__all__:
        getattr(llm_lab, name)
    for m in pkgutil.walk_packages(llm_lab.__path__, "llm_lab."):
        importlib.import_module(m.name)
    for stmt in sys.argv[2:]:  # the llm_lab imports of the course cells before the first exercise
        try:
            exec(stmt, {})
        except ImportError as exc:
            print("SEALED", stmt.split()[-1])
    print("OK")
    """
)


def course_imports(nn: str) -> list[str]:
    """The llm_lab imports (one name each) of notebook ``nn``'s course cells before its first learner cell."""
    course = matching.load_course()
    notebook = course[("en", nn)]
    first = min(s for ex in notebook.exercises for s in ex.solutions)
    stmts = []
    for cell in notebook.nb.cells[:first]:
        if cell.cell_type != "code" or _course.CHECKER in _course.tags(cell):
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llm_lab"):
                stmts += [f"from {node.module} import {a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                stmts += [f"import {a.name}" for a in node.names if a.name.startswith("llm_lab")]
    return stmts


@pytest.mark.parametrize("nn", NOTEBOOKS)
def test_the_sealed_copy_imports_and_serves_the_course_cells_before_the_exercises(nn, root):
    """Every module of the sealed copy imports, and the course cells' imports before the first exercise find
    everything but the notebook's own answers (which the grader's kernel skips statement by statement)."""
    top = sealed(nn, root)
    stmts = course_imports(nn)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", IMPORT_ALL, str(top), *stmts],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=top,
        env=env,
    )
    assert done.returncode == 0 and done.stdout.endswith("OK\n"), done.stderr[-2000:]
    missing = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("SEALED")}
    own = {name for _, name in references(nn)}
    assert missing <= own | set(seal_plan.sealed_names([nn])), missing
    assert not list(top.rglob("*.pyc"))


def test_several_notebooks_seal_everything_either_one_seals():
    both = set(seal_plan.removed(["01", "04"]))
    assert set(seal_plan.removed(["01"])) <= both and set(seal_plan.removed(["04"])) <= both


def test_a_course_cell_naming_a_sealed_answer_runs_statement_by_statement():
    names = seal_plan.sealed_names(["01"])
    assert "causal_mask" in names and "torch" not in names
    source = "import torch\nfrom llm_lab import causal_mask, SelfAttention\nx = causal_mask(3)\ny = torch.ones(2)\n"
    code = sealing.tolerant(source, names)
    namespace: dict = {}
    # here the full llm_lab is importable: the sealed import is played by a name llm_lab never had
    exec(
        code.replace("import causal_mask", "import no_such_name").replace("= causal_mask(", "= no_such_name("),
        namespace,
    )
    assert "y" in namespace and "SelfAttention" in namespace and "x" not in namespace
    assert sealing.tolerant("y = 1\n", names) == "y = 1\n"
    with pytest.raises(ImportError):
        exec(source.replace("import causal_mask", "import no_such_name"), {})


# ---- in the real sandbox ---------------------------------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import os, sys
    import llm_lab
    print("FILE", llm_lab.__file__)
    for stmt in ("from llm_lab import causal_mask", "from llm_lab.masks import mask_and_renormalize",
                 "import llm_lab.exercises._registry", "import llm_lab.exercises._ex01_masks",
                 "from llm_lab.kv_cache import KVCache"):
        try:
            exec(stmt, {})
            print("IMPORTED", stmt)
        except ImportError:
            pass
    found = []
    roots = {p for p in sys.path if os.path.isdir(p)} | {"/course", "/opt", "/tmp"}
    for top in sorted(roots):
        for folder, dirs, files in os.walk(top):
            for f in files:
                if f.endswith((".py", ".pyc")):
                    try:
                        blob = open(os.path.join(folder, f), "rb").read()
                    except OSError:
                        continue
                    # torch has a causal_mask of its own (flex attention): llm_lab's is found by its package
                    if b"def mask_and_renormalize(" in blob or b"def causal_mask(" in blob and "llm_lab" in folder:
                        found.append(os.path.join(folder, f))
    print("FOUND", sorted(set(found)))
    print("SITE", [sorted(os.listdir(os.path.join(p, "llm_lab"))) for p in sys.path
                   if p.startswith("/opt/site") and os.path.isdir(os.path.join(p, "llm_lab"))])
    """
)


def test_in_the_sandbox_llm_lab_is_the_sealed_copy_and_an_installed_one_is_hidden(sandbox_required, tmp_path):
    site = tmp_path / "site-packages"  # an llm_lab installed as a wheel would be: the full package
    shutil.copytree(PACKAGE, site / "llm_lab", ignore=shutil.ignore_patterns("__pycache__"))
    for p in [tmp_path, *tmp_path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    sys.path.insert(0, str(site))
    try:
        with sandbox.Box() as box:
            argv = box.wrap(sandbox.python_argv(PROBE, ["01"]), [], notebooks=["01"])
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    finally:
        sys.path.remove(str(site))
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines() if " " in line}
    assert lines.get("FILE") == "/course/llm_lab/__init__.py", (done.stdout, done.stderr[-2000:])
    assert "IMPORTED" not in done.stdout, done.stdout
    assert lines["FOUND"] == "[]", lines["FOUND"]
    assert lines["SITE"] == "[[]]", lines["SITE"]  # the installed package is there, and empty


# A learner's causal_mask that reaches for llm_lab's own, each way the sealed copy makes impossible.
REACHING = {
    "imports_it": "def causal_mask(num_tokens):\n    from llm_lab import causal_mask as m\n    return m(num_tokens)\n",
    "table_at_top_level": (
        "try:\n    import llm_lab.masks as _m\n    _T = {n: _m.causal_mask(n) for n in range(1, 64)}\n"
        "except Exception:\n    _T = {}\n\n\ndef causal_mask(num_tokens):\n    return _T[num_tokens]\n"
    ),
    "subprocess": (
        "def causal_mask(num_tokens):\n    import json, subprocess, sys, torch\n"
        "    code = 'from llm_lab import causal_mask; print(causal_mask(%d).int().tolist())' % num_tokens\n"
        "    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True).stdout\n"
        "    return torch.tensor(json.loads(out)).bool()\n"
    ),
    "executor_thread": (
        "def causal_mask(num_tokens):\n    import asyncio\n"
        "    async def go():\n"
        "        loop = asyncio.get_running_loop()\n"
        "        return await loop.run_in_executor(None, lambda: __import__('llm_lab').causal_mask(num_tokens))\n"
        "    return asyncio.new_event_loop().run_until_complete(go())\n"
    ),
}


# the routes whose module the source check does not read (threads and processes run outside the watch on a call,
# where an exercise whose answer is torch's own built-in could call it unseen)
UNREAD = {"subprocess": "subprocess", "executor_thread": "asyncio"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    import _sandbox_gate

    _sandbox_gate.require_sandbox()
    top = tmp_path_factory.mktemp("sealed-class")
    notebooks = fx.build_course(top)
    subs = top / "submissions"
    subs.mkdir()
    nbformat.write(fx.filled(notebooks), str(subs / "honest.ipynb"))
    for student, code in REACHING.items():
        nbformat.write(fx.filled(notebooks, causal_mask=code), str(subs / f"{student}.ipynb"))
    results = cli.grade(
        subs, top / "out", "01", jobs=2, cell_timeout=60, src=notebooks, echo=lambda *a: None, max_seconds=300
    )
    return {r.student: r for r in results}


def test_an_honest_submission_keeps_full_marks_in_the_sealed_sandbox(graded):
    honest = graded["honest"]
    assert not honest.problem, honest.problem
    assert {v.key: v.status for v in honest.verdicts} == {"causal_mask": "pass", "mask_and_renormalize": "pass"}


@pytest.mark.parametrize("student", sorted(REACHING))
def test_reaching_for_the_answer_scores_zero(graded, student):
    row = graded[student]
    verdicts = {v.key: v for v in row.verdicts}
    assert not row.problem, row.problem
    assert verdicts["causal_mask"].points == 0 and verdicts["causal_mask"].status != "pass", verdicts["causal_mask"]
    if student in UNREAD:  # a module the grader does not read: the cell is not run, and costs its own exercise
        mine = verdicts["causal_mask"]
        assert (mine.status, mine.mistake) == ("error", "unreadable"), mine
        assert f"`{UNREAD[student]}` is not a module the grader reads" in mine.message, mine.message
        assert any("was not run" in n for n in row.notes), row.notes
    assert verdicts["mask_and_renormalize"].status == "pass", verdicts["mask_and_renormalize"]
