"""Grade an nbgrader course's submissions the trusted way and write the scores into its gradebook.

``make grade-nbgrader COURSE=dir ASSIGNMENT=ps1`` (or ``python -m tools.teaching.grader.nbgrader_course COURSE
ASSIGNMENT``) is the replacement for ``nbgrader autograde`` in an llm-lab course. ``nbgrader autograde`` runs the
hidden tests inside each learner's kernel, with the instructor's rights: a submission can rewrite them, fake their
output or read the course. This command grades ``COURSE/submitted/<student>/ASSIGNMENT/*.ipynb`` with the grader
(``cli``: each kernel in the bubblewrap sandbox, every verdict computed in the grader's own process) and then,
through nbgrader's own API:

- records each submission in the gradebook (``COURSE/gradebook.db`` or the configured ``db_url``) with the
  score of every autograded cell, and the verdict as the comment of the exercise's solution cell;
- writes ``COURSE/autograded/<student>/ASSIGNMENT/<notebook>.ipynb``: the released notebook with the learner's
  solution and answer cells put in and each checker cell showing its verdict. No output of the learner's
  kernel is copied (nothing the submission printed or displayed reaches formgrader's pages). The submission's
  ``timestamp.txt`` and ``submission_secret.txt`` go beside it, as ``autograde`` puts them
  (``release_feedback`` needs the secret).

Then formgrader (manual grading of the written answers), ``nbgrader generate_feedback``, ``release_feedback``
and ``export`` work as after ``autograde``. The assignment must have been generated first (``nbgrader
generate_assignment``), as for autograde. The grader's own gradebook, feedback and class report are
written to ``COURSE/llm-lab-grades/ASSIGNMENT/``.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
import unicodedata
from pathlib import Path

import nbformat

from tools import course as _course
from tools.teaching.grader import cli, judging, report, stopping, submissions


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


MAX_STUDENT_BYTES = 250_000_000  # copied from one student's submitted/<student>/<assignment>/ at most
MAX_CLASS_BYTES = 4_000_000_000  # copied from the whole class at most


# a student id the gradebook and its exports hold as it is: never a control character or line break (a CSV row of
# its own in nbgrader export), nor a spreadsheet formula (=, +, -, @ first); look-alike and zero-width ids are
# graded and named by the report instead (report.look_alikes)
NOT_AN_ID = (
    "the folder name is not a student id the gradebook can hold (a control character or line break, a formula's "
    "first character = + - @, or more than 100 characters): not graded, not recorded"
)


def student_id(name: str) -> bool:
    """Can the gradebook, and nbgrader's CSV export, hold ``name`` as it is?"""
    bad = any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name)
    return 0 < len(name) <= 100 and not bad and name[0] not in "=+-@"


def collect(
    course: Path, assignment: str, into: Path, notebooks: set[str] | None = None
) -> tuple[dict[str, str], list[submissions.Submission]]:
    """Lay ``submitted/<student>/<assignment>/`` out as the grader's SUBMISSIONS (one folder per student),
    copying only regular files read safely (``submissions.copy``: no link followed, no pipe or device opened,
    in chunks); returns ({student: timestamp}, a problem Result for everything else). What is copied is bounded
    by apparent size, counted while copying (a sparse file counts what reading it gives, never the blocks it
    holds): at most MAX_FILE_BYTES per file, MAX_STUDENT_BYTES per student and MAX_CLASS_BYTES in all; a file
    past a bound is not copied (nothing of it stays) and is its student's row, with the bound it passed. Only the
    assignment's ``notebooks`` (file names; all ``.ipynb`` files if None) are copied; a folder whose name is not a
    ``student_id`` is a row of its own, never in the gradebook."""
    submitted = course / "submitted"
    stamps: dict[str, str] = {}
    refused: list[submissions.Submission] = []
    class_left = MAX_CLASS_BYTES
    for student in sorted(os.listdir(submitted)) if submitted.is_dir() else []:
        folder = submitted / student / assignment
        problem = (
            None if student.startswith(".") else _not_a_folder(submitted, Path(student), Path(student, assignment))
        )
        if problem is None:
            continue  # nothing handed in for this assignment
        stamps[student] = ""
        problem = problem or ("" if student_id(student) else NOT_AN_ID)
        if problem:
            refused.append(submissions.Submission(student, folder, problem=problem))
            continue
        before, student_left = len(refused), MAX_STUDENT_BYTES
        (into / student).mkdir(parents=True)  # left empty: "no .ipynb notebook in the folder"
        names = sorted(os.listdir(folder))
        others = [n for n in names if n.endswith(".ipynb") and notebooks is not None and n not in notebooks]
        if others:  # a renamed download ("01_x (1).ipynb"), a copy: said, never graded
            refused.append(
                submissions.Submission(student, folder / others[0], problem=_not_released(others, notebooks))
            )
        for name in names:
            if not name.endswith(".ipynb") or name in others:
                continue
            limit = min(submissions.MAX_FILE_BYTES, student_left, class_left)
            try:
                size = submissions.copy(folder / name, submitted, into / student / name, limit)
            except (submissions.Unreadable, OSError) as exc:
                refused.append(submissions.Submission(student, folder / name, problem=_over(exc, limit, student_left)))
                continue
            student_left, class_left = student_left - size, class_left - size
        if len(refused) > before and not any((into / student).iterdir()):
            (into / student).rmdir()  # its refused files are its rows
        stamps[student] = small_file(folder / "timestamp.txt", submitted).decode("utf-8", "replace").strip()
    return stamps, refused


def _not_released(others: list[str], notebooks) -> str:
    shown = ", ".join(repr(n) for n in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return (
        f"not a notebook of this assignment: {shown}; not graded (the assignment's notebooks: "
        f"{', '.join(sorted(notebooks))}: hand yours in under that name)"
    )


def _over(exc: Exception, limit: int, student_left: int) -> str:
    """The problem line of a file not copied: the bound it passed, when that is the student's or the class's."""
    if not isinstance(exc, submissions.TooLarge) or limit == submissions.MAX_FILE_BYTES:
        return str(exc)
    if limit == student_left:
        return (
            f"with this file the student's notebooks for the assignment are more than "
            f"{MAX_STUDENT_BYTES / 1e6:.0f} MB in all (their size as read; the files before it, by name, are graded)"
        )
    return (
        f"with this file the class's notebooks are more than {MAX_CLASS_BYTES / 1e6:.0f} MB in all "
        "(their size as read; the files collected before it are graded)"
    )


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
            return submissions.refused(f"submitted/{rel}", mode)
    return ""


def small_file(path: Path, root: Path, limit: int = 4096) -> bytes:
    """A small regular file inside ``root`` (timestamp.txt, submission_secret.txt), read safely; b"" if it is
    missing, a link, a pipe or larger than ``limit``."""
    try:
        return submissions.read(path, root, limit)
    except (submissions.Unreadable, OSError):
        return b""


def autograded_copy(
    release: Path,
    shown: dict[str, str] | None,
    verdicts: dict[str, judging.Verdict],
    added_after: dict[str, list[str]] | None = None,
) -> nbformat.NotebookNode:
    """The released notebook with the cells the grader ran as the learner's and the verdicts: ``shown``, the
    learner's source of each solution/answer cell by its nbgrader grade_id, and ``added_after``, the code cells
    the learner added, after the course cell they followed (its grade_id, else its cell id; "" before any), both
    as the grading plan holds them (``matching.ExecutionPlan``), never chosen again from the learner's file (its
    metadata is the learner's: two cells with one grade_id must not show one and grade the other). ``shown``
    None (the submission could not be read): the release's stubs stay."""
    nb = nbformat.read(str(release), as_version=4)
    shown, added_after = shown or {}, dict(added_after or {})
    cells = [nbformat.v4.new_code_cell(source) for source in added_after.pop("", [])]
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if meta.get("solution") and gid in shown:
            cell.source = shown[gid] if cell.cell_type == "code" else as_text(shown[gid])
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if meta.get("grade") and not meta.get("solution"):  # a checker cell: its verdict
                call = _course.checker_call(cell.source)
                verdict = verdicts.get(call[1]) if call else None
                if verdict is not None:
                    icon = report.ICON.get(verdict.status, "")
                    said = report.visible(verdict.message or verdict.status)
                    text = f"{icon} {verdict.points}/{verdict.max_points}: {said}\n"
                    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        cells.append(cell)
        key = str(gid or cell.get("id") or "")
        cells += [nbformat.v4.new_code_cell(source) for source in added_after.pop(key, [])]
    for sources in added_after.values():  # after a course cell this release lacks: at the end
        cells += [nbformat.v4.new_code_cell(source) for source in sources]
    nb.cells = cells
    return nb


def as_text(markdown: str) -> str:
    """A learner's written answer as an indented code block: Markdown shows it as typed, so no HTML, image or
    link in it reaches the feedback page or formgrader live (every line is indented: nothing can close the block)."""
    lines = markdown.splitlines() or [""]
    return "\n".join("    " + line for line in lines)


def _in_gradebook(course: Path, assignment: str) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    db_url, course_id = course_config(course)
    with Gradebook(db_url, course_id) as gradebook:
        try:
            gradebook.find_assignment(assignment)
        except MissingEntry:
            raise cli.UsageError(
                f"the gradebook ({db_url}) has no assignment {assignment!r}: run `nbgrader generate_assignment "
                f"{assignment}` (it records the assignment and its notebooks) first"
            ) from None


def write_gradebook(
    course: Path, assignment: str, results: list[submissions.Submission], stamps: dict[str, str]
) -> int:
    """Put every graded notebook's scores into the gradebook and autograded/; returns how many were written."""
    from nbgrader.api import Gradebook

    db_url, course_id = course_config(course)
    written = 0
    with Gradebook(db_url, course_id) as gradebook:
        known = {nb.name for nb in gradebook.find_assignment(assignment).notebooks}
        for submission in results:
            if submission.path.stem not in known:
                continue
            _record_scores(gradebook, assignment, submission, stamps.get(submission.student, ""))
            gradebook.db.commit()
            _write_autograded(course, assignment, submission, stamps.get(submission.student, ""))
            written += 1
    return written


def _record_scores(gradebook, assignment: str, submission: submissions.Submission, stamp: str) -> None:
    """The student, the submission (with its timestamp when nbgrader can read it), each autograded cell's score
    and the verdict as the comment of the exercise's solution cell."""
    from nbgrader.api import MissingEntry

    name, student = submission.path.stem, submission.student
    gradebook.update_or_create_student(student)
    try:
        gradebook.find_submission(assignment, student)
    except MissingEntry:
        try:
            gradebook.add_submission(assignment, student, **({"timestamp": stamp} if stamp else {}))
        except (ValueError, OverflowError):  # a timestamp.txt nbgrader cannot read: recorded without it
            gradebook.db.rollback()
            gradebook.add_submission(assignment, student)
    nn = name[:2]
    by_key = {verdict.key: verdict for verdict in submission.verdicts}
    for cell in gradebook.find_notebook(name, assignment).grade_cells:
        if not cell.name.endswith("-test"):
            continue  # a written answer: graded by hand in formgrader
        key = cell.name[len(f"ex{nn}-") : -len("-test")]
        verdict = by_key.get(key)
        gradebook.find_grade(cell.name, name, assignment, student).auto_score = (
            float(verdict.points) if verdict else 0.0
        )
        try:
            comment = gradebook.find_comment(f"ex{nn}-{key}", name, assignment, student)
        except MissingEntry:
            continue
        message = (verdict.message or verdict.status) if verdict else (submission.problem or "not graded")
        left_out = [n for n in submission.notes if "not run" in n or "没有运行" in n]  # nbgrader shows no notes
        comment.auto_comment = auto_comment(" · ".join([message, *left_out]))


def auto_comment(message: str) -> str:
    """A verdict as nbgrader's comment on the exercise: nbgrader's feedback renders comments as Markdown, raw HTML
    included, and a message quotes the learner's own cells and exceptions, so it goes in as literal text
    (``report.md_text``: no HTML, link, image or code span of the learner's survives)."""
    return report.md_text(message)


def _write_autograded(course: Path, assignment: str, submission: submissions.Submission, stamp: str) -> None:
    """``autograded/<student>/<assignment>/``: the autograded copy, and the timestamp and secret beside it."""
    target = course / "autograded" / submission.student / assignment
    target.mkdir(parents=True, exist_ok=True)
    shown = None if submission.problem else submission.shown  # the cells graded, as the grader ran them
    by_key = {verdict.key: verdict for verdict in submission.verdicts}
    release = course / "release" / assignment / submission.path.name
    copy = autograded_copy(release, shown, by_key, None if submission.problem else submission.added_after)
    nbformat.write(copy, str(target / submission.path.name))
    if stamp:
        (target / "timestamp.txt").write_text(stamp, encoding="utf-8")
    secret = small_file(
        course / "submitted" / submission.student / assignment / "submission_secret.txt", course / "submitted"
    )
    if secret:  # release_feedback looks for it here, as after autograde
        (target / "submission_secret.txt").write_bytes(secret)


def released(course: Path, assignment: str) -> list[str]:
    """The numbers of the notebooks nbgrader released for ``assignment`` (``release/<assignment>/NN_*.ipynb``):
    the assignment is what the instructor released, every one of its notebooks graded, never what students
    handed in."""
    names = sorted(p.name for p in (course / "release" / assignment).glob("*.ipynb"))
    numbers = [name[:2] for name in names if name[:2].isdigit()]
    if not numbers:
        raise cli.UsageError(
            f"{course / 'release' / assignment} holds no course notebook (NN_name.ipynb): nothing to grade"
        )
    return numbers


def run(
    course: Path, assignment: str, *, jobs: int | None = None, sandboxed: bool = True, echo=print, **kw
) -> list[submissions.Submission]:
    if not (course / "release" / assignment).is_dir():
        raise FileNotFoundError(
            f"{course / 'release' / assignment} does not exist: run `nbgrader generate_assignment {assignment}` first"
        )
    _in_gradebook(course, assignment)  # before any grading: a missing entry is a usage error, not a traceback
    with tempfile.TemporaryDirectory(prefix="llm-lab-nbgrader-") as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        stamps, refused = collect(course, assignment, subs)  # every notebook handed in: each is its own row
        if not stamps:
            raise FileNotFoundError(f"no submissions in {course / 'submitted'}/*/{assignment}")
        results = cli.grade(
            subs,
            course / "llm-lab-grades" / assignment,
            released(course, assignment),
            jobs=jobs,
            sandboxed=sandboxed,
            echo=echo,
            refused=refused,
            **kw,
        )
        copied = {id(submission) for submission in results} - {id(submission) for submission in refused}
        for submission in results:  # the paths pointed into the temporary copy: keep them readable after it goes
            if id(submission) in copied:
                submission.path = course / "submitted" / submission.student / assignment / submission.path.name
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
    stopping.on_sigterm()  # SIGTERM ends the run as an error would: temporary folders removed, kernels stopped
    try:
        run(args.course.resolve(), args.assignment, jobs=args.jobs, sandboxed=not args.no_sandbox, src=args.src)
    except cli.UsageError as exc:
        print(f"usage error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, cli.SandboxMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
