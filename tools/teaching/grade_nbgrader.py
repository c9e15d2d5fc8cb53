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
import os
import stat
import sys
import tempfile
from pathlib import Path

import nbformat

from tools import course as _course
from tools.teaching import _grade_files, _grade_report, grade

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


def collect(course: Path, assignment: str, into: Path) -> tuple[dict[str, str], list[grade.Result]]:
    """Lay ``submitted/<student>/<assignment>/`` out as grade.py's SUBMISSIONS (one folder per student),
    copying only regular files read safely (``_grade_files.read``: no link followed, no pipe or device opened,
    at most MAX_FILE_BYTES); returns ({student: timestamp}, a problem Result for everything else)."""
    submitted = course / "submitted"
    stamps: dict[str, str] = {}
    refused: list[grade.Result] = []
    for student in sorted(os.listdir(submitted)) if submitted.is_dir() else []:
        folder = submitted / student / assignment
        problem = (
            None if student.startswith(".") else _not_a_folder(submitted, Path(student), Path(student, assignment))
        )
        if problem is None:
            continue  # nothing handed in for this assignment
        stamps[student] = ""
        if problem:
            refused.append(grade.Result(student, folder, problem=problem))
            continue
        before = len(refused)
        (into / student).mkdir(parents=True)  # left empty: "no .ipynb notebook in the folder"
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".ipynb"):
                continue
            try:
                (into / student / name).write_bytes(_grade_files.read(folder / name, submitted))
            except (_grade_files.Unreadable, OSError) as exc:
                refused.append(grade.Result(student, folder / name, problem=str(exc)))
        if len(refused) > before and not any((into / student).iterdir()):
            (into / student).rmdir()  # its refused files are its rows
        stamps[student] = small_file(folder / "timestamp.txt", submitted).decode("utf-8", "replace").strip()
    return stamps, refused


def _not_a_folder(root: Path, *rels: Path) -> str | None:
    """ "" when every ``root/rel`` is a real folder (not a link), None when one does not exist, else the reason."""
    for rel in rels:
        try:
            mode = os.lstat(root / rel).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"submitted/{rel}: could not be looked at ({exc.strerror})"
        if not stat.S_ISDIR(mode):
            return _grade_files.refused(f"submitted/{rel}", mode)
    return ""


def small_file(path: Path, root: Path, limit: int = 4096) -> bytes:
    """A small regular file inside ``root`` (timestamp.txt, submission_secret.txt), read safely; b"" if it is
    missing, a link, a pipe or larger than ``limit``."""
    try:
        return _grade_files.read(path, root, limit)
    except (_grade_files.Unreadable, OSError):
        return b""


def autograded_copy(
    release: Path, sub: nbformat.NotebookNode | None, verdicts: dict[str, grade.Verdict]
) -> nbformat.NotebookNode:
    """The released notebook with the learner's solution/answer cells (by nbgrader grade_id) and the verdicts;
    ``sub`` None (the submission could not be read): the release's stubs stay."""
    nb = nbformat.read(str(release), as_version=4)
    theirs = {}
    for c in sub.cells if sub is not None else []:
        meta = c.metadata.get("nbgrader")  # the learner's: anything at all
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str):
            theirs[meta["grade_id"]] = c
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
                    icon = _grade_report.ICON.get(v.status, "")
                    text = f"{icon} {v.points}/{v.max_points}: {_grade_report.visible(v.message or v.status)}\n"
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
                try:
                    gb.add_submission(
                        assignment, r.student, **({"timestamp": stamps[r.student]} if stamps.get(r.student) else {})
                    )
                except (ValueError, OverflowError):  # a timestamp.txt nbgrader cannot read: recorded without it
                    gb.db.rollback()
                    gb.add_submission(assignment, r.student)
            nn = name[:2]
            by_key = {v.key: v for v in r.verdicts}
            for cell in gb.find_notebook(name, assignment).grade_cells:
                if not cell.name.endswith("-test"):
                    continue  # a written answer: graded by hand in formgrader
                key = cell.name[len(f"ex{nn}-") : -len("-test")]
                g = gb.find_grade(cell.name, name, assignment, r.student)
                v = by_key.get(key)
                g.auto_score = float(v.points) if v else 0.0
                try:
                    c = gb.find_comment(f"ex{nn}-{key}", name, assignment, r.student)
                    c.auto_comment = _grade_report.visible(
                        (v.message or v.status) if v else (r.problem or "not graded")
                    )
                except MissingEntry:
                    pass
            gb.db.commit()
            target = course / "autograded" / r.student / assignment
            target.mkdir(parents=True, exist_ok=True)
            try:
                sub = None if r.problem else grade.load(r.path, course / "submitted")
            except Exception:  # unreadable now: the release's stubs stay
                sub = None
            nbformat.write(
                autograded_copy(course / "release" / assignment / r.path.name, sub, by_key), str(target / r.path.name)
            )
            if stamps.get(r.student):
                (target / "timestamp.txt").write_text(stamps[r.student], encoding="utf-8")
            secret = small_file(
                course / "submitted" / r.student / assignment / "submission_secret.txt", course / "submitted"
            )
            if secret:  # release_feedback looks for it here, as after autograde
                (target / "submission_secret.txt").write_bytes(secret)
            written += 1
    return written


def run(
    course: Path, assignment: str, *, jobs: int | None = None, sandboxed: bool = True, echo=print, **kw
) -> list[grade.Result]:
    if not (course / "release" / assignment).is_dir():
        raise FileNotFoundError(
            f"{course / 'release' / assignment} does not exist: run `nbgrader generate_assignment {assignment}` first"
        )
    with tempfile.TemporaryDirectory(prefix="llm-lab-nbgrader-") as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        stamps, refused = collect(course, assignment, subs)
        if not stamps:
            raise FileNotFoundError(f"no submissions in {course / 'submitted'}/*/{assignment}")
        results = grade.grade(
            subs,
            course / "llm-lab-grades" / assignment,
            jobs=jobs,
            sandboxed=sandboxed,
            echo=echo,
            refused=refused,
            **kw,
        )
        copied = {id(r) for r in results} - {id(r) for r in refused}
        for r in results:  # the paths pointed into the temporary copy: keep them readable after it goes
            if id(r) in copied:
                r.path = course / "submitted" / r.student / assignment / r.path.name
        n = write_gradebook(course, assignment, results, stamps)
    echo(
        f"wrote {n} submission(s) into the gradebook and {course / 'autograded'}; next: nbgrader "
        f"generate_feedback {assignment}"
    )
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("course", type=Path, help="the nbgrader course folder (with nbgrader_config.py)")
    ap.add_argument("assignment", help="the assignment's name, e.g. ps1")
    ap.add_argument("--jobs", type=int, help="notebooks graded at once (default: all cores)")
    ap.add_argument("--no-sandbox", action="store_true", help="run kernels without bubblewrap (reports say so)")
    ap.add_argument(
        "--src",
        type=Path,
        default=_course.INSTRUCTOR,
        help="the instructor notebooks (default: this checkout's notebooks/instructor/)",
    )
    args = ap.parse_args(argv)
    try:
        run(args.course.resolve(), args.assignment, jobs=args.jobs, sandboxed=not args.no_sandbox, src=args.src)
    except (FileNotFoundError, grade.SandboxMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
