"""The grader's command: grade a folder of submitted notebooks, ``make grade SUBMISSIONS=dir NB=04 [OUT=dir]``.

SUBMISSIONS holds one entry per student; the student id is the entry's name:

    SUBMISSIONS/alice.ipynb                        student "alice" (the file name without .ipynb)
    SUBMISSIONS/bob/04_causal_attention_class.ipynb  student "bob" (the folder name; every .ipynb inside)

(an LMS download such as ``alice_12345_04_causal_attention_class.ipynb`` gives the student id
``alice_12345_04_causal_attention_class``: rename files or put them in one folder per student if you want
shorter ids). Each notebook is read in a process of its own, bounded in time and memory (``reading``: a file
that takes more is that student's row, never the class's run), matched to its course notebook and language by
its cell ids (kept by Jupyter, JupyterHub and Colab) or its title, and graded the way nbgrader's autograde would,
without a gradebook:

- every cell except the learner's solution cells (and cells they added) comes from the instructor version,
  so edited, deleted or reordered course cells are restored and checker cells cannot be changed;
- each submission runs in a fresh kernel inside the bubblewrap sandbox (``sandbox``: no network, its
  own processes only, a read-only view of Python and llm_lab, a private /tmp, limits; ``--no-sandbox`` runs it
  with the grader's rights and every report says so), submissions in parallel on all cores; a cell that runs
  past ``--cell-timeout`` seconds is interrupted (an endless loop costs that exercise only), a submission past
  ``--max-seconds`` is stopped, output past ``--max-output`` bytes per cell is dropped; nothing in SUBMISSIONS
  is ever written, and only regular files inside it are read (``submissions``: a link, a pipe or a device is
  that student's problem line, never followed or opened);
- each exercise is judged when the notebook has run up to its checker cell, by llm_lab's checkers running in
  THIS process (``judging``): the kernel only calls the learner's object on the inputs the checker sends and
  answers with data (``llm_lab.exercises.grading``), so nothing in the kernel can change a verdict; the inputs are drawn
  from a secret seed chosen for this run (the notebook's own checkers keep their fixed, public ones), so a
  table of the public answers is no answer; every cell's source is read too, as IPython reads it
  (``source_checks``): an exercise scores only if the learner's own ``def``/``class`` defines it, and
  llm_lab's answer handed in, code that changes the checkers or code the grader cannot read scores 0 with a note.

Written into OUT (default ``build/grades``): ``grades.csv`` (``student, notebook, <one column per exercise>,
total, max``), ``feedback/<student>[--<notebook>].html`` (each exercise's verdict and hint, in the
notebook's language) and ``report.md`` (per exercise: how many passed, the most common named mistakes; then
every submission that could not be graded normally, with the reason). Written Predict/Explain answers are
graded by hand (docs/instructors.md). Exit status 0 unless SUBMISSIONS is missing or holds nothing.

Usage: python -m tools.teaching.grader SUBMISSIONS --notebook 04 [--out DIR] [--lang en] [--jobs N]
       [--cell-timeout S] [--no-sandbox]

The assignment is named by the instructor (``--notebook``, required; several: ``04,05``), never inferred from what
students handed in: a submission of another notebook is that student's "wrong notebook" row.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from tools import course as _course
from tools.teaching.grader import identities, judging, matching, reading, report, sandbox, stopping, submissions
from tools.teaching.grader.kernel import Kernel
from tools.teaching.grader.report import one_line

DEFAULT_OUT = _course.ROOT / "build" / "grades"


class KernelSettings(NamedTuple):
    """The limits one submission's kernel runs under (``kernel.Kernel``'s arguments after the plan and folder)."""

    cell_timeout: float
    max_output: int
    sandboxed: bool
    max_seconds: float
    notebooks: tuple[str, ...] = ()  # the submission's notebook: the sandbox holds the llm_lab sealed for it


def grade_submission(
    submission: submissions.Submission,
    course,
    expected: tuple[str | None, tuple[str, ...]],
    cell_timeout: float,
    max_output: int,
    sandboxed: bool = True,
    max_seconds: float = 600.0,
    run_unvouched: bool = False,
) -> submissions.Submission:
    """Grade one submitted file in place (never raises). ``run_unvouched``: ``reading.read_submission``'s."""
    start = time.monotonic()
    try:
        if stopping.stopped():
            raise stopping.Stopped()
        prepared = reading.prepare(submission.path, submission.root, course, expected, run_unvouched=run_unvouched)
        if prepared.key is not None:
            submission.lang, submission.notebook = prepared.key[0], course[prepared.key].path.name
        if prepared.problem:
            submission.problem = prepared.problem
            return submission
        key, plan, want_lang = prepared.key, prepared.plan, expected[0]
        submission.shown, submission.added_after = plan.shown, plan.added_after  # what the review copy shows
        if want_lang and key[0] != want_lang:
            submission.notes.append(f"the {key[0]} copy (the class uses {want_lang}): graded, feedback in {key[0]}")
        submission.notes += plan.notes
        if not sandboxed:
            submission.notes.append("graded WITHOUT the sandbox (--no-sandbox): the code ran with the grader's rights")
        # the seal is this file's notebook's: an assignment of 01 and 04 grades 04 with the package 04 holds
        # (01's answers built earlier are there), and 01 without anything 01 or a later notebook answers
        settings = KernelSettings(cell_timeout, max_output, sandboxed, max_seconds, (key[1],))

        def reread(crashed):  # the same reading, bounded, with the learner cells that killed a kernel left out
            return reading.prepare(
                submission.path, submission.root, course, expected, run_unvouched=run_unvouched, crashed=crashed
            )

        _run(submission, course[key], plan, settings, prepared.reading, reread)
    except ValueError as exc:
        submission.problem = str(exc)
    except stopping.Stopped as exc:
        submission.problem = str(exc)
    except Exception as exc:  # a grader bug must cost one line, not the class's run
        submission.problem = f"could not be graded ({type(exc).__name__}: {one_line(str(exc))})"
    finally:
        submission.seconds = time.monotonic() - start
    return submission


MAX_RESTARTS = 3  # kernels started again on one submission after its code killed one (``_run``)


def _run(submission: submissions.Submission, course_nb, plan, settings: KernelSettings, source=None, reread=None):
    """Execute ``plan`` in a kernel of its own, judge each exercise on the way, and note what else happened: files
    the code wrote, output cut, a kernel that died. A kernel the learner's code killed (a crash, ``os._exit``,
    memory) costs only what depends on that code: the exercises checked before keep their verdicts, and a new
    kernel runs the notebook again for the rest, without the learner cell that killed it (``reread(crashed)``:
    the submission read again with those cells left out; where a course cell died, the last learner cell before
    it, whose code the course cell ran) or, where a check's call killed it, with nothing left out; at most
    ``MAX_RESTARTS`` times, every kernel within what is left of the submission's ``max_seconds``."""
    done, crashed, notes, start = {}, {}, [], time.monotonic()
    for attempt in range(MAX_RESTARTS + 1):
        left = settings.max_seconds - (time.monotonic() - start)
        verdicts, lost, died, died_in = _one_kernel(
            course_nb, plan, settings._replace(max_seconds=left), source, done, notes
        )
        submission.verdicts = verdicts
        if isinstance(died_in, int) and died_in not in plan.learner:  # a course cell, running the learner's code
            earlier = [i for i in plan.learner if i < died_in and i not in crashed]  # (a function the cell calls)
            died_in, died = (earlier[-1], f"{died}, in a course cell after it") if earlier else (died_in, died)
        if isinstance(died_in, int):  # a learner cell's death: every check after it ran on a dead kernel
            lost = {v.key for v in verdicts if v.key not in done and plan.grading.get(v.key, -1) > died_in}
        restart = (
            died_in is not None
            and reread is not None
            and lost
            and attempt < MAX_RESTARTS
            and settings.max_seconds - (time.monotonic() - start) > RESTART_AT_LEAST * settings.max_seconds
        )
        if restart and died_in in plan.learner:
            crashed[died_in] = died
            prepared = reread(dict(crashed))
            if prepared.problem or prepared.plan is None:
                restart = False
            else:
                plan, source = prepared.plan, prepared.reading
                notes += [n for n in plan.notes if n not in submission.notes and n not in notes]
        elif restart and died_in == "check":  # a check's call: the kernel again, nothing left out
            checked = [v.key for v in verdicts if v.key not in lost and v.key not in done]
            what = f"`{checked[-1]}` was checked" if checked else "an exercise was checked"
            notes.append(f"the kernel died while {what} ({died}): the grader ran the notebook again for the rest")
        else:
            restart = False
        if not restart:
            if died:
                notes.append(died)
            break
        done = {v.key: v for v in verdicts if v.key not in lost}
    submission.notes += list(dict.fromkeys(notes))


RESTART_AT_LEAST = 0.1  # of the submission's max_seconds left, for a kernel to be started again


def _one_kernel(course_nb, plan, settings: KernelSettings, source, done: dict, notes: list[str]):
    """One kernel's run of ``plan`` (``judging.judge``): its verdicts, the exercises lost to its death, why it died
    and where (``Kernel.died_in``: a plan cell, "check" for a check's call); what it wrote and cut added to
    ``notes``."""
    with tempfile.TemporaryDirectory(prefix="llm-lab-grade-") as tmp:
        with Kernel(plan, Path(tmp), *settings) as kernel:
            verdicts, lost = judging.judge(course_nb, plan, kernel, source, done)
            cut, died = kernel.client.cut - {kernel.slot}, kernel.died
            died_in = "check" if kernel.died_in == kernel.slot else kernel.died_in
            try:
                written = kernel.written()
            except OSError:  # the sandbox went away while we looked
                written = []
        del plan.nb.cells[kernel.slot :]  # the kernel's own cells (warm-up, requests): the plan as it was
        written += sorted(
            str(f.relative_to(tmp))
            for f in Path(tmp).rglob("*")
            if f.is_file()
            and not f.is_symlink()
            and f.parent.name not in ("kernels", "work")
            and f.name != "kernel.json"
        )
    if written:
        notes.append(f"the code wrote files (discarded): {', '.join(written[:5])}")
    if cut:
        notes.append(f"output cut at {settings.max_output // 1000} kB in {len(cut)} cell(s)")
    return verdicts, lost, died, died_in


class UsageError(ValueError):
    """The command was called wrongly (no or an unknown --notebook); the message says what is allowed."""


def assignment(course, notebook, lang: str | None = None) -> tuple[str | None, tuple[str, ...]]:
    """(language or None, the assigned notebook numbers), as the instructor named them: ``notebook`` is "04",
    "04,05" or a list of numbers. Never inferred from the submissions (a few crafted files would decide for the
    class); UsageError naming the notebooks this course grades when it is missing or unknown."""
    known = sorted({nn for _lang, nn in course})
    allowed = ", ".join(known) or "none: the course has no autograded notebooks"
    items = notebook.split(",") if isinstance(notebook, str) else list(notebook or ())
    wanted = tuple(dict.fromkeys(str(n).strip().zfill(2) for n in items if str(n).strip()))
    if not wanted:
        raise UsageError(
            f"name the assigned notebook: --notebook NN (make grade NB=NN), one of {allowed}; several as 04,05"
        )
    unknown = [nn for nn in wanted if nn not in known]
    if unknown:
        raise UsageError(f"--notebook {','.join(unknown)}: not an autograded notebook of this course; one of {allowed}")
    langs = sorted({lg for lg, _nn in course})
    if lang is not None and lang not in langs:
        raise UsageError(f"--lang {lang}: not a language of this course; one of {', '.join(langs)}")
    return lang, wanted


class SandboxMissing(RuntimeError):
    """The sandbox cannot run here; the message names what to install (or --no-sandbox)."""


def grade(
    folder: Path,
    out: Path,
    notebook,
    jobs: int | None = None,
    cell_timeout: float = 30.0,
    max_output: int = 200_000,
    src: Path = _course.INSTRUCTOR,
    echo=print,
    sandboxed: bool = True,
    max_seconds: float = 600.0,
    refused=(),
    lang: str | None = None,
    run_unvouched: bool = False,
) -> list[submissions.Submission]:
    """Grade every submission in ``folder`` and write grades.csv, feedback/ and report.md into ``out``.
    Each submission's kernel runs in the bubblewrap sandbox (``sandboxed=False``: as the grader, noted in
    every feedback file); the verdicts are computed here. ``refused``: problem Submissions found elsewhere
    (nbgrader_course's links and pipes), reported with the rest. ``notebook``: the assigned notebook's number
    ("04"; several: "04,05" or a list), named by the instructor (``assignment``); ``lang``: the class's language
    (a copy in another one is graded and noted), None: any. ``run_unvouched``: to test the sandbox on its own only
    (``reading.read_submission``): the cells the grader would leave out run too."""
    if not folder.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS={folder} is not a folder of submitted notebooks")
    course = matching.load_course(src)
    expected = assignment(course, notebook, lang)
    if sandboxed:
        missing = sandbox.available()
        if missing:
            raise SandboxMissing(missing)
    found = submissions.find(folder) + list(refused)
    if not found:
        raise FileNotFoundError(f"{folder} holds no submissions")
    _cap_files_per_student(found, len(expected[1]))
    todo = [s for s in found if not s.problem]
    os.environ.setdefault("MPLBACKEND", "Agg")  # an unsandboxed kernel inherits it: no figure windows
    jobs = jobs or os.cpu_count() or 1
    mode = f"in the bubblewrap sandbox, {sandbox.limits()}" if sandboxed else "WITHOUT a sandbox (--no-sandbox)"
    echo(f"grading {len(todo)} notebook(s) from {folder} with {jobs} kernel(s) in parallel, {mode}")

    def one(submission):
        return grade_submission(
            submission, course, expected, cell_timeout, max_output, sandboxed, max_seconds, run_unvouched
        )

    _in_parallel(one, todo, jobs, echo)
    identities.mark_look_alikes(found)  # ids that differ where no one sees it, each named on its row
    identities.mark_duplicates(found)  # one row per student and notebook
    if out.exists():
        shutil.rmtree(out / "feedback", ignore_errors=True)
    report.write_all(found, course, expected, out)
    echo(
        f"wrote {report.rel(out / 'grades.csv')}, {report.rel(out / 'report.md')} and "
        f"{len(found)} feedback file(s) in {report.rel(out / 'feedback')}"
    )
    return found


def _in_parallel(one, todo: list[submissions.Submission], jobs: int, echo) -> None:
    """``one`` on each submission, ``jobs`` at a time, a line each as they end. Interrupted (SIGTERM through
    ``stopping.on_sigterm``, Ctrl-C, an error): what runs is ended, nothing more starts, and the workers are
    waited for (their kernels killed, they end at once) before the exception goes on."""
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        for done in pool.map(one, todo):
            mark = done.problem or f"{done.total}/{sum(v.max_points for v in done.verdicts)}"
            echo(report.visible(f"  {done.student:<24} {done.path.name:<40} {mark}"))
    except BaseException:
        stopping.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


FILES_PER_NOTEBOOK = 3  # files graded per student and assigned notebook: a copy or two is honest, 500 are not


def _cap_files_per_student(found, notebooks: int) -> None:
    """Each student's files past ``FILES_PER_NOTEBOOK`` per assigned notebook (in path order) become problem rows,
    so that one student's folder costs the class at most that many kernel runs per notebook."""
    seen: dict[str, int] = {}
    for submission in found:
        if submission.problem:
            continue
        seen[submission.student] = seen.get(submission.student, 0) + 1
        if seen[submission.student] > FILES_PER_NOTEBOOK * notebooks:
            submission.problem = (
                f"not graded: more than {FILES_PER_NOTEBOOK * notebooks} notebook files from this student "
                f"({FILES_PER_NOTEBOOK} per assigned notebook are graded)"
            )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.teaching.grader", description=__doc__.split("\n\n")[0])
    ap.add_argument("submissions", type=Path, help="folder with one notebook (or one folder) per student")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/grades)")
    ap.add_argument(
        "--notebook", help="the assigned notebook's number, e.g. 04 (required; several: 04,05); never guessed"
    )
    ap.add_argument("--lang", help="the class's language (a copy in another one is graded and noted)")
    ap.add_argument("--jobs", type=int, help="notebooks graded at once (default: all cores)")
    ap.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per cell (default: 30)")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=600.0,
        help="seconds per submission in all, then its kernel is stopped (default: 600)",
    )
    ap.add_argument("--max-output", type=int, default=200_000, help="output bytes kept per cell (default: 200000)")
    ap.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the submissions' kernels without bubblewrap, with your rights (every report says so)",
    )
    args = ap.parse_args(argv)
    stopping.on_sigterm()  # SIGTERM ends the run as an error would: temporary folders removed, kernels stopped
    try:
        grade(
            args.submissions,
            args.out,
            args.notebook,
            args.jobs,
            args.cell_timeout,
            args.max_output,
            sandboxed=not args.no_sandbox,
            max_seconds=args.max_seconds,
            lang=args.lang,
        )
    except UsageError as exc:
        print(f"usage error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, SandboxMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
