"""Every step that reads a submission, in a process of its own per submission, bounded in time and memory.

Reading a handed-in notebook means parsing its JSON (``submissions.load``), finding its course notebook
(``matching.identify``), matching its cells to the course's (``matching.build_plan``: texts compared, cells
diffed) and reading every cell's source as IPython would (``source_checks.read``: transformed, tokenized,
parsed). Each of these costs what the file makes it cost: a 6 MB cell tokenized, or a 24 MB cell diffed against
a course cell, kept the grader's own process busy for minutes, and every other student's grade with it. So
``prepare`` runs them in a child process (forked from a server that imported this module once, so a child
costs milliseconds, not an import of torch), which

- first caps its own address space at what it had after its imports plus ``READ_MEMORY`` bytes and its CPU
  time at ``READ_SECONDS`` (RLIMIT_AS, RLIMIT_CPU), then reads the file;
- sends back the plan and the source reading, at most ``MAX_RESULT`` bytes, read as bytes with that bound;

and the grader waits for it at most ``WALL_FACTOR`` times ``READ_SECONDS`` of wall-clock time (the CPU time
judges: a busy machine must not cost an honest student the reading of a small file). A child that runs out of
either, dies or answers too much is that student's problem row (``Prepared.problem``), never an exception for the
class.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
from dataclasses import dataclass, field
from pathlib import Path

from tools.teaching.grader import matching, report, source_checks, stopping, submissions
from tools.teaching.grader.sandbox_limits import WALL_FACTOR

READ_SECONDS = 60.0  # of CPU (in the child) to read one submission; WALL_FACTOR times that of wall time
READ_MEMORY = 1 << 30  # bytes the child may add to what it holds after its imports
MAX_RESULT = 4 * submissions.MAX_SOURCE_BYTES  # bytes of the plan and reading sent back (outputs never are)


@dataclass
class Decided:
    """What the source decides for each exercise, computed where the source was read (``Reading.verdict``'s
    answers, so the grader never holds the parsed trees): the same ``verdict`` call ``judging`` makes."""

    findings: dict[tuple[str, str], source_checks.Finding | None]

    def verdict(self, key: str, exercise: str, until: int, lang: str = "en", own=()):
        return self.findings[(key, lang)]


@dataclass
class Prepared:
    """What reading one submission gave: ``problem`` (it cannot be graded, why), or its course notebook's key,
    the notebook to execute and what its source says."""

    problem: str = ""
    key: tuple[str, str] | None = None
    plan: matching.ExecutionPlan | None = None
    reading: Decided | None = None
    notes: list[str] = field(default_factory=list)


def read_submission(
    path: Path, root: Path | None, course, expected, run_unvouched: bool = False, crashed: dict | None = None
) -> Prepared:
    """The steps themselves, in whatever process calls it (``prepare`` calls it in a bounded child).
    ``run_unvouched``: for testing the sandbox on its own only: every learner cell runs, and one the grader cannot
    vouch for decides every exercise checked after it (``Reading.verdict``'s conservative answer). ``crashed``:
    learner cells (plan index: why) that killed an earlier kernel on this submission: left out like the rest."""
    nb = submissions.load(path, root)
    key = matching.identify(nb, course)
    if key is None:
        return Prepared("not one of the course notebooks (no matching cell ids or title)")
    if key[1] not in expected[1]:
        return Prepared(
            f"wrong notebook: this is {course[key].path.name}, the assignment is notebook " + " and ".join(expected[1]),
            key,
        )
    course_nb = course[key]
    plan = matching.build_plan(course_nb, nb)
    left_out = {}
    for i in crashed or {}:
        if i not in plan.learner:
            raise ValueError(f"cell {i} is not a learner cell of this submission: only those are left out")
        left_out[i], plan.nb.cells[i].source = (
            plan.nb.cells[i].source,
            source_checks.NOT_RUN_SOURCE.format(kind="crashed"),
        )
    if run_unvouched:
        source = source_checks.read(plan.nb.cells, plan.learner)
    else:
        source = source_checks.runnable(plan.nb.cells, plan.learner)  # what the grader cannot vouch for runs nothing
    for i, original in left_out.items():
        source.skipped[i] = source_checks.Skipped(original, "crashed", crashed[i])
    source.skipped = dict(sorted(source.skipped.items()))
    plan.notes += source.not_run_notes(course_nb.lang)
    findings = {}
    for ex in course_nb.exercises:
        if ex.key in plan.grading:
            until, own = plan.grading[ex.key], plan.solutions.get(ex.key, [])
            findings[(ex.key, course_nb.lang)] = source.verdict(ex.key, ex.exercise, until, course_nb.lang, own)
    return Prepared(key=key, plan=plan, reading=Decided(findings))


def _vm_size() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(conn, path, root, course, expected, seconds: float, memory: int, run_unvouched=False, crashed=None) -> None:
    """In the child: its limits first, then the reading; one answer, pickled, on ``conn``."""
    try:
        cpu = max(1, int(seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        vm = _vm_size()
        if vm:
            resource.setrlimit(resource.RLIMIT_AS, (vm + memory, vm + memory))
        try:
            result = read_submission(path, root, course, expected, run_unvouched, crashed)
        except MemoryError:
            result = Prepared(f"reading it needed more than {memory / 2**30:g} GiB: not graded")
        except ValueError as exc:
            result = Prepared(str(exc))
        except Exception as exc:  # a grader bug on this file: that student's row
            result = Prepared(f"could not be read ({type(exc).__name__}: {report.one_line(str(exc))})")
        try:
            data = pickle.dumps(result)
        except (MemoryError, RecursionError) as exc:
            data = pickle.dumps(Prepared(f"could not be read ({type(exc).__name__})"))
        conn.send_bytes(data)
    finally:
        conn.close()


_CONTEXT = None


def _context():
    """A forkserver context whose server has imported this module (and torch, through matching) once."""
    global _CONTEXT
    if _CONTEXT is None:
        if "forkserver" in multiprocessing.get_all_start_methods():
            _CONTEXT = multiprocessing.get_context("forkserver")
            _CONTEXT.set_forkserver_preload([__name__])
        else:
            _CONTEXT = multiprocessing.get_context("spawn")
    return _CONTEXT


def prepare(
    path: Path,
    root: Path | None,
    course,
    expected,
    *,
    seconds: float | None = None,
    run_unvouched: bool = False,
    crashed: dict | None = None,
) -> Prepared:
    """``read_submission`` in a child process of its own, bounded (the module's docstring); never raises but
    ``stopping.Stopped`` (the grader is stopping: the child is killed)."""
    seconds = READ_SECONDS if seconds is None else seconds
    ctx = _context()
    ours, theirs = ctx.Pipe(duplex=False)
    args = (theirs, path, root, course, expected, seconds, READ_MEMORY, run_unvouched, crashed)
    child = ctx.Process(target=_child, args=args, daemon=True)
    child.start()
    theirs.close()
    try:
        with stopping.killing(child.kill):  # a grader told to stop ends the reader: poll returns at once
            answered = ours.poll(seconds * WALL_FACTOR)
        if not answered:
            return Prepared(
                f"reading it took more than {seconds * WALL_FACTOR:g} s of wall time (a file this large or odd, or "
                "a machine this busy): not graded"
            )
        try:
            data = ours.recv_bytes(MAX_RESULT)
        except EOFError:
            child.join(5)
            code = child.exitcode
            if code is not None and -code in (getattr(os, "SIGXCPU", 24), 9):
                return Prepared(f"reading it took more than {seconds:g} s of CPU: not graded")
            return Prepared(f"reading it stopped the reader (exit status {code}): not graded")
        except OSError as exc:  # more than MAX_RESULT bytes
            return Prepared(f"reading it gave more than {MAX_RESULT / 1e6:.0f} MB ({exc}): not graded")
        return pickle.loads(data)
    finally:
        ours.close()
        if child.is_alive():
            child.kill()
        child.join(5)
