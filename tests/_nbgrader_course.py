"""A temporary nbgrader course released by ``nbgrader generate_assignment`` from the fixture course's notebooks
(``_course_fixture``), and the class's files handed in: for tests of ``make grade-nbgrader``
(``tools.teaching.grader.nbgrader_course``) that need more than one notebook or a file of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _course_fixture as fx

VENV_BIN = os.path.dirname(sys.executable)  # nbgrader runs alembic from PATH


def env() -> dict[str, str]:
    return {**os.environ, "MPLBACKEND": "Agg", "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")}


def release(root: Path, names=(fx.NAME,), assignment: str = "ps1") -> tuple[Path, Path]:
    """(the course folder, the instructor notebooks): ``names`` of the fixture course released as ``assignment``."""
    notebooks = fx.build_course(root / "instructor")
    course = root / "course"
    (course / "source" / assignment).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "llm-lab-test"\n'
        + fx.student.config_file_text("en").split("\n", 2)[2],
        encoding="utf-8",
    )
    fx.student.write_sources(notebooks, root / "sources", only=",".join(n[:2] for n in names))
    for name in names:
        (course / "source" / assignment / name).write_bytes((root / "sources" / "en" / name).read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force"],
        cwd=course,
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return course, notebooks


def run(course: Path, assignment: str = "ps1", **kw):
    """``nbgrader_course.run`` with the venv's bin on PATH (the gradebook's alembic)."""
    from tools.teaching.grader import nbgrader_course

    old = os.environ.get("PATH", "")
    os.environ["PATH"] = env()["PATH"]
    try:
        return nbgrader_course.run(course, assignment, echo=lambda *a: None, **kw)
    finally:
        os.environ["PATH"] = old


def scores(course: Path, student: str, assignment: str = "ps1") -> dict[str, float]:
    """notebook name -> the score the gradebook holds for ``student``."""
    from nbgrader.api import Gradebook

    old = os.environ.get("PATH", "")
    os.environ["PATH"] = env()["PATH"]
    try:
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "llm-lab-test") as gb:
            return {nb.name: nb.score for nb in gb.find_submission(assignment, student).notebooks}
    finally:
        os.environ["PATH"] = old
