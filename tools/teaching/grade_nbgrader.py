"""Grade an nbgrader course's submissions the trusted way and write the scores into its gradebook.

``make grade-nbgrader COURSE=dir ASSIGNMENT=ps1`` (or ``python -m tools.teaching.grade_nbgrader COURSE ASSIGNMENT``) is
the replacement for ``nbgrader autograde`` in an llm-lab course. ``nbgrader autograde`` runs the hidden tests
inside each learner's kernel, with the instructor's rights: a submission can rewrite them, fake their output or
read the course. This command grades ``COURSE/submitted/<student>/ASSIGNMENT/*.ipynb`` with ``tools/teaching/grade.py``
(each kernel in the bubblewrap sandbox, every verdict computed in the grader's own process) and then, through
nbgrader's own API:

- records each submission in the gradebook (``COURSE/gradebook.db`` or the configured ``db_url``) with the
  score of every autograded cell, and the verdict as the comment of the exercise's solution cell;
- writes ``COURSE/autograded/<student>/ASSIGNMENT/<notebook>.ipynb``: the released notebook with the learner's
  solution and answer cells put in and each checker cell showing its verdict. No output of the learner's
  kernel is copied (nothing the submission printed or displayed reaches formgrader's pages). The submission's
  ``timestamp.txt`` and ``submission_secret.txt`` go beside it, as ``autograde`` puts them
  (``release_feedback`` needs the secret).

Then formgrader (manual grading of the written answers), ``nbgrader generate_feedback``, ``release_feedback``
and ``export`` work as after ``autograde``. The assignment must have been generated first (``nbgrader
generate_assignment``), as for autograde. ``tools/teaching/grade.py``'s own gradebook, feedback and class report are
written to ``COURSE/llm-lab-grades/ASSIGNMENT/``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from tools import course as _course
from tools.teaching import grade

STUB_TEXT = "# (graded by llm-lab's sandboxed grader)"


def course_config(course: Path) -> tuple[str, str]:
    """(db_url, course_id) from the course's ``nbgrader_config.py``, with nbgrader's defaults."""
    from traitlets.config.loader import PyFileConfigLoader

    db_url, course_id = f"sqlite:///{course / 'gradebook.db'}", "default_course"
    if (course / "nbgrader_config.py").is_file():
        cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
        cd = cfg.get("CourseDirectory", {})
        db_url = cd.get("db_url", db_url) or db_url
        course_id = cd.get("course_id", course_id) or course_id
    return db_url, course_id


def collect(course: Path, assignment: str, into: Path) -> dict[str, str]:
    """Lay ``submitted/<student>/<assignment>/`` out as grade.py's SUBMISSIONS (one folder per student);
    returns {student: timestamp}."""
    stamps = {}
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        target = into / student
        target.mkdir(parents=True)
        for nb in folder.glob("*.ipynb"):
            shutil.copyfile(nb, target / nb.name)
        stamp = folder / "timestamp.txt"
        stamps[student] = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else ""
    return stamps


def autograded_copy(release: Path, submitted: Path, verdicts: dict[str, grade.Verdict]) -> nbformat.NotebookNode:
    """The released notebook with the learner's solution/answer cells (by nbgrader grade_id) and the verdicts."""
    nb = nbformat.read(str(release), as_version=4)
    try:
        sub = nbformat.read(str(submitted), as_version=4)
        theirs = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in sub.cells}
    except Exception:  # an unreadable submission: the release's stubs stay
        theirs = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if meta.get("solution") and gid in theirs and theirs[gid].cell_type == cell.cell_type:
            cell.source = theirs[gid].source
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if meta.get("grade") and not meta.get("solution"):  # a checker cell: its verdict
                call = _course.checker_call(cell.source)
                v = verdicts.get(call[1]) if call else None
                if v is not None:
                    icon = grade._grade_report.ICON.get(v.status, "")
                    text = f"{icon} {v.points}/{v.max_points}: {v.message or v.status}\n"
                    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return nb


def write_gradebook(course: Path, assignment: str, results: list[grade.Result], stamps: dict[str, str]) -> int:
    """Put every graded notebook's scores into the gradebook and autograded/; returns how many were written."""
    from nbgrader.api import Gradebook, MissingEntry

    db_url, course_id = course_config(course)
    written = 0
    with Gradebook(db_url, course_id) as gb:
        known = {nb.name for nb in gb.find_assignment(assignment).notebooks}
        for r in results:
            name = r.path.stem
            if name not in known:
                continue
            gb.update_or_create_student(r.student)
            try:
                gb.find_submission(assignment, r.student)
            except MissingEntry:
                gb.add_submission(assignment, r.student, **({"timestamp": stamps[r.student]}
                                                            if stamps.get(r.student) else {}))
            nn = name[:2]
            by_key = {v.key: v for v in r.verdicts}
            for cell in gb.find_notebook(name, assignment).grade_cells:
                if not cell.name.endswith("-test"):
                    continue  # a written answer: graded by hand in formgrader
                key = cell.name[len(f"ex{nn}-"):-len("-test")]
                g = gb.find_grade(cell.name, name, assignment, r.student)
                v = by_key.get(key)
                g.auto_score = float(v.points) if v else 0.0
                try:
                    c = gb.find_comment(f"ex{nn}-{key}", name, assignment, r.student)
                    c.auto_comment = (v.message or v.status) if v else (r.problem or "not graded")
                except MissingEntry:
                    pass
            gb.db.commit()
            target = course / "autograded" / r.student / assignment
            target.mkdir(parents=True, exist_ok=True)
            nbformat.write(autograded_copy(course / "release" / assignment / r.path.name, r.path, by_key),
                           str(target / r.path.name))
            if stamps.get(r.student):
                (target / "timestamp.txt").write_text(stamps[r.student], encoding="utf-8")
            secret = course / "submitted" / r.student / assignment / "submission_secret.txt"
            if secret.is_file() and not secret.is_symlink() and secret.stat().st_size < 4096:
                shutil.copyfile(secret, target / secret.name)  # release_feedback looks for it here, as autograde
            written += 1
    return written


def run(course: Path, assignment: str, *, jobs: int | None = None, sandboxed: bool = True, echo=print,
        **kw) -> list[grade.Result]:
    if not (course / "release" / assignment).is_dir():
        raise FileNotFoundError(f"{course / 'release' / assignment} does not exist: run `nbgrader "
                                f"generate_assignment {assignment}` first")
    with tempfile.TemporaryDirectory(prefix="llm-lab-nbgrader-") as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        stamps = collect(course, assignment, subs)
        if not stamps:
            raise FileNotFoundError(f"no submissions in {course / 'submitted'}/*/{assignment}")
        results = grade.grade(subs, course / "llm-lab-grades" / assignment, jobs=jobs, sandboxed=sandboxed,
                              echo=echo, **kw)
        for r in results:  # the paths pointed into the temporary copy: keep them readable after it goes
            r.path = course / "submitted" / r.student / assignment / r.path.name
        n = write_gradebook(course, assignment, results, stamps)
    echo(f"wrote {n} submission(s) into the gradebook and {course / 'autograded'}; next: nbgrader "
         f"generate_feedback {assignment}")
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("course", type=Path, help="the nbgrader course folder (with nbgrader_config.py)")
    ap.add_argument("assignment", help="the assignment's name, e.g. ps1")
    ap.add_argument("--jobs", type=int, help="notebooks graded at once (default: all cores)")
    ap.add_argument("--no-sandbox", action="store_true", help="run kernels without bubblewrap (reports say so)")
    ap.add_argument("--src", type=Path, default=_course.INSTRUCTOR,
                    help="the instructor notebooks (default: this checkout's notebooks/instructor/)")
    args = ap.parse_args(argv)
    try:
        run(args.course.resolve(), args.assignment, jobs=args.jobs, sandboxed=not args.no_sandbox, src=args.src)
    except (FileNotFoundError, grade.SandboxMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
