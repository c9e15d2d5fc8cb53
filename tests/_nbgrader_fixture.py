"""An nbgrader course of the fixture's 01_demo (tests/_course_fixture.py), released by nbgrader's own
generate_assignment: what the make grade-nbgrader tests grade."""

from __future__ import annotations

import os
import subprocess
import sys

import _course_fixture as fx

ASSIGNMENT = "ps1"

# nbgrader runs `alembic` from PATH (its gradebook migrations): the venv's bin must come first.
VENV_BIN = os.path.dirname(sys.executable)


def nbgrader(course, *args):
    env = {**os.environ, "MPLBACKEND": "Agg", "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def release(root, timeout: int = 120):
    """The fixture course's 01_demo as nbgrader's source of ``ASSIGNMENT``, released by generate_assignment;
    plain ``nbgrader autograde`` stops a cell after ``timeout`` s. Returns (the course folder, the notebooks)."""
    notebooks = fx.build_course(root / "instructor")
    course = root / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        'c.CourseDirectory.course_id = "llm-lab-test"\n'
        f"c.Execute.timeout = {timeout}\n" + fx.student.config_file_text("en").split("\n", 2)[2],
        encoding="utf-8",
    )
    fx.student.write_sources(notebooks, root / "sources", only="01")
    (course / "source" / ASSIGNMENT / fx.NAME).write_bytes((root / "sources" / "en" / fx.NAME).read_bytes())
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    return course, notebooks


def grade_course(course, notebooks) -> subprocess.CompletedProcess:
    """`make grade-nbgrader` on ``course``: the grader's own entry point, as the instructor runs it."""
    env = {**os.environ, "MPLBACKEND": "Agg", "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")}
    argv = [sys.executable, "-m", "tools.teaching.grader.nbgrader_course", str(course), ASSIGNMENT]
    return subprocess.run(
        [*argv, "--src", str(notebooks)], capture_output=True, text=True, env=env, timeout=900, cwd=fx.ROOT
    )
