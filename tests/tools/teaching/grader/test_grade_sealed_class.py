"""The class against the sealed sandbox (tests/_sealed_class.py): every attack of the design's classes scores 0,
the honest students beside them score what their content deserves, on both grading paths (``make grade``,
``make grade-nbgrader``), with the grader as root and as an unprivileged user.

First the routes themselves: each way of reaching llm_lab's answer reaches it in a plain Python with the package
(so each probe can fail), and none reaches it in the sandbox sealed for the notebook, because the answer is not
there. Needs bubblewrap (`.ci/run` installs it); skipped only where the sandbox cannot run, with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import _sealed_class as sc
import pytest

from tools.teaching.grader import sandbox

pytestmark = pytest.mark.usefixtures("sandbox_required")
ROOT = Path(__file__).resolve().parents[4]
NOBODY = 65534


def test_every_route_reaches_the_answer_where_the_package_is_whole():
    done = subprocess.run(
        [sys.executable, "-c", sc.routes_program()], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    found = sc.routes_found(done.stdout)
    assert found == {name: True for name in sc.REACH}, (found, done.stderr[-2000:])


def test_no_route_reaches_it_in_the_sandbox_sealed_for_the_notebook():
    with sandbox.Box() as box:
        argv = box.wrap(sandbox.python_argv(sc.routes_program(), ["01"]), [], notebooks=["01"])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    found = sc.routes_found(done.stdout)
    assert found == {name: False for name in sc.REACH}, (found, done.stderr[-2000:])


RUNS = [("grade", "root"), ("nbgrader", "root"), ("grade", "user"), ("nbgrader", "user")]


@pytest.fixture(scope="module", params=RUNS, ids=[f"{p}-as-{who}" for p, who in RUNS])
def graded(request, tmp_path_factory):
    """The class graded on one path as one user: the script's JSON (rows, the gradebook's scores)."""
    path, who = request.param
    top = tmp_path_factory.mktemp(f"sealed-class-{path}-{who}")
    if who == "user":  # pytest's own folder is root's alone: the unprivileged grader works in one of its own
        top = Path(tempfile.mkdtemp(prefix=f"llm-lab-sealed-class-{path}-"))
        request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    out = top / "result.json"
    env = {**os.environ, "HOME": str(top), "MPLBACKEND": "Agg", "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    argv = [sys.executable, str(ROOT / "tests" / "_sealed_class.py"), path, str(out)]
    if who == "user":
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            pytest.skip("grading as an unprivileged user is run from root (setpriv drops to nobody)")
        shutil.chown(top, NOBODY, NOBODY)
        argv[0], env = _python_for_nobody(top, env)
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
        readable = subprocess.run(
            [*argv[:5], "-c", "import torch, nbgrader, _sealed_class, tools.teaching.grader.cli"],
            capture_output=True, text=True, env=env, cwd=top, timeout=300,
        )  # fmt: skip
        if readable.returncode != 0:  # a checkout in a private (0700) folder: another user cannot read it
            pytest.skip(f"the unprivileged user cannot read this checkout or its venv: {readable.stderr[-300:]}")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1500, env=env, cwd=top)
    assert done.returncode == 0 and out.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    result["who"] = who
    return result


def _as_nobody(*argv: str) -> bool:
    return (
        subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]).returncode == 0
    )


def _python_for_nobody(top: Path, env: dict) -> tuple[str, dict]:
    """A Python the unprivileged user can run, with this venv's packages: this one, or (a venv whose Python lies
    in a home folder nobody else may enter, as pyenv's under /root) the system's Python of the same version with
    the venv's site-packages on its path, and nbgrader's ``alembic`` run by it."""
    runs_itself = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass'], check=True)"
    if _as_nobody(sys.executable, "-c", runs_itself):  # the grader starts its own Python in the sandbox
        return sys.executable, env
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    sites = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    if not os.access(system, os.X_OK) or not _as_nobody(system, "-c", runs_itself):
        pytest.skip(f"no Python an unprivileged user can run: {sys.executable} is not, and {system} is missing")
    shims = top / "bin"
    shims.mkdir()
    (shims / "alembic").write_text(f'#!/bin/sh\nexec {system} -m alembic "$@"\n', encoding="utf-8")
    (shims / "alembic").chmod(0o755)
    env = {
        **env,
        "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], *sites]),
        "PATH": f"{shims}{os.pathsep}{env.get('PATH', '')}",
    }
    return system, env


def _rows(graded) -> dict[str, dict]:
    return {r["student"]: r for r in graded["rows"] if not r["not_counted"]}


def test_the_grader_ran_as_who_it_should(graded):
    assert (graded["uid"] == 0) == (graded["who"] == "root")


def test_every_attack_scores_zero(graded):
    rows = _rows(graded)
    assert set(sc.ATTACKERS) <= set(rows), set(sc.ATTACKERS) - set(rows)
    scored = {s: (rows[s]["total"], rows[s]["verdicts"]) for s in sc.ATTACKERS if rows[s]["total"]}
    assert scored == {}, scored
    assert len(sc.ATTACKERS) >= 40


def test_the_honest_students_keep_what_they_earned(graded):
    rows, full = _rows(graded), sum(graded["points"].values())
    want = {"all": full, "renormalize": graded["points"]["mask_and_renormalize"]}
    got = {s: rows[s]["total"] for s in sc.HONEST}
    assert got == {s: want[kind] for s, kind in sc.HONEST.items()}, {s: rows[s] for s in sc.HONEST}
    for student, kind in sc.HONEST.items():
        if graded["gradebook"]:  # what nbgrader's gradebook holds, as formgrader shows it
            assert graded["gradebook"][student]["01_demo"] == want[kind], graded["gradebook"][student]


def test_look_alike_ids_and_a_second_file_are_named(graded):
    rows = _rows(graded)
    assert any("looks like <U+0430>lice" in n for n in rows["alice"]["notes"]), rows["alice"]["notes"]
    assert any("looks like alice" in n for n in rows[sc.CYRILLIC_ALICE]["notes"])
    extra = [r for r in graded["rows"] if r["student"] == "dave" and r["not_counted"]]
    assert len(extra) == 1 and any("not counted" in n for n in rows["dave"]["notes"]), rows["dave"]


def test_another_notebook_is_its_own_row_and_changes_no_one_elses_assignment(graded):
    rows = _rows(graded)
    for student in sc.CLASSES["assignment"]:
        assert rows[student]["problem"].startswith("wrong notebook"), rows[student]


def test_the_graders_memory_stays_bounded(graded):
    assert graded["grew"] < 1.5 * 2**30, graded["grew"]
