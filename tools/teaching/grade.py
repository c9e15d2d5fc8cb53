"""Grade a folder of submitted notebooks without an nbgrader course: ``make grade SUBMISSIONS=dir [OUT=dir]``.

SUBMISSIONS holds one entry per student; the student id is the entry's name:

    SUBMISSIONS/alice.ipynb                        student "alice" (the file name without .ipynb)
    SUBMISSIONS/bob/04_causal_attention_class.ipynb  student "bob" (the folder name; every .ipynb inside)

(an LMS download such as ``alice_12345_04_causal_attention_class.ipynb`` gives the student id
``alice_12345_04_causal_attention_class``: rename files or put them in one folder per student if you want
shorter ids). Each notebook is matched to its course notebook and language by its cell ids (kept by Jupyter,
JupyterHub and Colab) or its title, and graded the way nbgrader's autograde would, without a gradebook:

- every cell except the learner's solution cells (and cells they added) comes from the instructor version,
  so edited, deleted or reordered course cells are restored and checker cells cannot be changed;
- each submission runs in a fresh kernel inside the bubblewrap sandbox (``tools/teaching/sandbox.py``: no network, its
  own processes only, a read-only view of Python and llm_lab, a private /tmp, limits; ``--no-sandbox`` runs it
  with the grader's rights and every report says so), submissions in parallel on all cores; a cell that runs
  past ``--cell-timeout`` seconds is interrupted (an endless loop costs that exercise only), a submission past
  ``--max-seconds`` is stopped, output past ``--max-output`` bytes per cell is dropped; nothing in SUBMISSIONS
  is ever written, and only regular files inside it are read (``_grade_files``: a link, a pipe or a device is
  that student's problem line, never followed or opened);
- each exercise is judged when the notebook has run up to its checker cell, by llm_lab's checkers running in
  THIS process: the kernel only calls the learner's object on the inputs the checker sends and answers with
  data (``llm_lab.exercises._remote``), so nothing in the kernel can change a verdict; the inputs are drawn
  from a secret seed chosen for this run (the notebook's own checkers keep their fixed, public ones), so a
  table of the public answers is no answer; every cell's source is read too, as IPython reads it
  (``_grade_source``): an exercise scores only if the learner's own ``def``/``class`` defines it, and
  llm_lab's answer handed in, code that changes the checkers or code the grader cannot read scores 0 with a note.

Written into OUT (default ``build/grades``): ``grades.csv`` (``student, notebook, <one column per exercise>,
total, max``), ``feedback/<student>[--<notebook>].html`` (each exercise's verdict and hint, in the
notebook's language) and ``report.md`` (per exercise: how many passed, the most common named mistakes; then
every submission that could not be graded normally, with the reason). Written Predict/Explain answers are
graded by hand (docs/instructors.md). Exit status 0 unless SUBMISSIONS is missing or holds nothing.

Usage: python -m tools.teaching.grade SUBMISSIONS [--out DIR] [--notebook 04] [--jobs N] [--cell-timeout S]
       [--no-sandbox]
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

import llm_lab.exercises as exercises
from llm_lab.exercises import _remote
from tools import course as _course
from tools.teaching import _grade_files, _grade_kernel, _grade_report, _grade_source, sandbox

DEFAULT_OUT = _course.ROOT / "build" / "grades"
MAX_FILE_BYTES = _grade_files.MAX_FILE_BYTES
# nbtool's cell ids, ``{lang}-{NN}-{index:03d}`` (any language of tools.course.LANGS: identify() keeps the course's)
CELL_ID = re.compile(r"^(.+)-(\d\d)-\d{3}$")
DEFINES = "^(?:def|class) {}\\b"
SECRET = secrets.randbits(62)  # this run's inputs for the checkers (llm_lab.exercises.grade's ``secret``)


@dataclass
class Verdict:
    """One exercise of one submission: ``status`` as the checkers' grade() names it (pass, todo, fail, error,
    timeout, reference) or the grader's own (tampered, missing, not_graded); ``mistake`` the named mistake."""

    key: str
    status: str
    mistake: str = ""
    message: str = ""
    points: int = 0
    max_points: int = 0


@dataclass
class Result:
    """One submitted file. ``problem`` set: it could not be graded at all (0 points), with the reason."""

    student: str
    path: Path
    notebook: str = ""
    lang: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str = ""
    seconds: float = 0.0
    root: Path | None = None  # the folder it was handed in (read inside it only, links never followed)

    @property
    def total(self) -> int:
        return sum(v.points for v in self.verdicts)


# ---- finding and reading submissions --------------------------------------------------------------------


def discover(submissions: Path) -> list[Result]:
    """One Result per submitted file: a notebook to grade, or a problem (not a notebook, empty folder, a link,
    a pipe); nothing is followed or opened here (``_grade_files``)."""
    return [Result(f.student, f.path, problem=f.problem, root=submissions) for f in _grade_files.find(submissions)]


load = _grade_files.load  # a submitted notebook, read safely; ValueError with the reason


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- the course ------------------------------------------------------------------------------------------


@dataclass
class CourseNotebook:
    path: Path
    lang: str
    nn: str
    nb: nbformat.NotebookNode
    exercises: list[_course.Exercise]

    @property
    def title(self) -> str:
        return self.nb.cells[0].source.splitlines()[0].lstrip("# ").strip()


def load_course(src: Path = _course.INSTRUCTOR) -> dict[tuple[str, str], CourseNotebook]:
    """(lang, number) -> the instructor notebook, for every notebook with autograded exercises."""
    course = {}
    for path in _course.find_notebooks(src):
        nb = nbformat.read(str(path), as_version=4)
        exercises = _course.exercises(nb.cells)
        if exercises:
            course[(path.parent.name, path.name[:2])] = CourseNotebook(
                path, path.parent.name, path.name[:2], nb, exercises
            )
    return course


def identify(nb, course) -> tuple[str, str] | None:
    """(lang, number) of a submission: from its cell ids, else its title; None if it is no course notebook."""
    votes = Counter((m[1], m[2]) for c in nb.cells if (m := CELL_ID.match(str(c.get("id", "")))))
    for key, _ in votes.most_common():
        if key in course:
            return key
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    for key, cn in course.items():
        if first.strip().startswith(f"# {cn.title}"):
            return key
    return None


# ---- the notebook that is executed -----------------------------------------------------------------------


def capture_code(ex: _course.Exercise) -> str:
    """The cell put in a checker cell's place: the kernel remembers the object the exercise checks, as it is
    at that point of the notebook. Nothing is judged in the kernel."""
    return "\n".join(
        [
            "import llm_lab.exercises._remote as _llm_lab_remote",
            f"_llm_lab_remote.capture({ex.key!r}, lambda: {ex.key})",
        ]
    )


@dataclass
class Plan:
    """The notebook to execute and where each exercise's pieces are in it."""

    nb: nbformat.NotebookNode
    grading: dict[str, int]  # exercise key -> index of its capture cell (the checker cell's place)
    solutions: dict[str, list[int]]  # exercise key -> indices of the learner's solution cells
    notes: list[str]
    learner: list[int] = field(default_factory=list)  # every cell the learner wrote (solutions, added cells)


def _match(cn: CourseNotebook, sub) -> dict[int, int]:
    """Instructor cell index -> submission cell index: by cell id, then nbgrader grade_id, then (ids lost by some
    editors) an unchanged course cell by its text, and a solution cell by what it defines."""
    inst = cn.nb.cells
    by_id = {c.get("id"): i for i, c in enumerate(inst)}
    by_grade_id = {
        c.metadata.get("nbgrader", {}).get("grade_id"): i
        for i, c in enumerate(inst)
        if c.metadata.get("nbgrader", {}).get("grade_id")
    }
    owner = {s: ex for ex in cn.exercises for s in ex.solutions}
    matched: dict[int, int] = {}
    for j, cell in enumerate(sub.cells):
        i = by_grade_id.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"))
        if i is None:
            i = by_id.get(cell.get("id"))
            if i is not None and not _same_role(inst[i], cell, owner.get(i)):
                i = None  # ids are positions: a course that gained cells since this copy gives them to others
        if i is not None and i not in matched:
            matched[i] = j
    used = set(matched.values())
    by_source: dict[str, list[int]] = {}
    for j, cell in enumerate(sub.cells):
        if j not in used:
            by_source.setdefault(cell.source.rstrip(), []).append(j)
    for i, cell in enumerate(inst):
        visible = cell.source.split(_course.BEGIN_HIDDEN)[0].rstrip()  # a checker cell as learners have it
        if i not in matched and i not in owner and by_source.get(visible):
            matched[i] = by_source[visible].pop(0)
            used.add(matched[i])
    for s, ex in owner.items():
        if s not in matched:
            pattern = re.compile(DEFINES.format(re.escape(ex.key)), re.M)
            j = next(
                (
                    j
                    for j, c in enumerate(sub.cells)
                    if j not in used and c.cell_type == "code" and pattern.search(c.source)
                ),
                None,
            )
            if j is not None:
                matched[s], used = j, used | {j}
    return matched


def _same_role(course_cell, cell, exercise: _course.Exercise | None) -> bool:
    """May the submission's ``cell`` stand for ``course_cell`` (same id)? The same kind; for a solution cell one that
    defines that exercise's object; for a course cell no solution cell, and the same text give or take edits."""
    if course_cell.cell_type != cell.get("cell_type"):
        return False
    source = cell.get("source", "")
    if exercise is not None:
        return bool(re.search(DEFINES.format(re.escape(exercise.key)), source, re.M))
    if _course.SOLUTION in _course.tags(cell):
        return False
    # a course cell the learner may have edited: still recognisably the same cell (hidden tests aside)
    ours = course_cell.source.split(_course.BEGIN_HIDDEN)[0].rstrip()
    return source.rstrip() == ours or difflib.SequenceMatcher(None, ours, source, autojunk=False).ratio() >= 0.6


def _added(sub, matched: dict[int, int]) -> dict[int, list]:
    """The code cells the learner added, each under the course cell it followed (-1: before any)."""
    anchor_of = {j: i for i, j in matched.items()}
    added: dict[int, list] = {}
    last = -1
    for j, cell in enumerate(sub.cells):
        if j in anchor_of:
            last = anchor_of[j]
        elif cell.cell_type == "code" and cell.source.strip():
            added.setdefault(last, []).append(cell)
    return added


def plan(cn: CourseNotebook, sub) -> Plan:
    """The instructor notebook with the learner's solution cells (and added cells) put in, checkers replaced
    by capture cells. Solution cells are matched by cell id, then nbgrader grade_id, then by defining the
    exercise's object (``def name`` / ``class name``)."""
    inst = cn.nb.cells
    owner = {s: ex for ex in cn.exercises for s in ex.solutions}
    matched = _match(cn, sub)
    notes = []
    order = [i for i, _ in sorted(matched.items(), key=lambda kv: kv[1])]
    if order != sorted(order):
        notes.append("cells were reordered: graded in the course's order")
    added = _added(sub, matched)
    missing_course = [
        i
        for i, c in enumerate(inst)
        if i not in matched and c.cell_type == "code" and i not in owner and _course.CHECKER not in _course.tags(c)
    ]
    if len(missing_course) > 2:
        notes.append(
            f"{len(missing_course)} course code cells were deleted or changed beyond recognition: "
            "the course's versions were run"
        )
    cells, grading, solutions, learner = [], {}, {}, []
    checker_of = {ex.checker: ex for ex in cn.exercises}
    for k in [-1, *range(len(inst))]:
        if k in owner and k in matched:
            solutions.setdefault(owner[k].key, []).append(len(cells))
            learner.append(len(cells))
            cells.append(nbformat.v4.new_code_cell(sub.cells[matched[k]].source))
        elif k in owner:
            notes.append(f"{owner[k].key}: the solution cell was deleted")
        elif k in checker_of:
            grading[checker_of[k].key] = len(cells)
            cells.append(nbformat.v4.new_code_cell(capture_code(checker_of[k])))
        elif k >= 0 and inst[k].cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(inst[k].source))
        for extra in added.get(k, []):
            learner.append(len(cells))
            cells.append(nbformat.v4.new_code_cell(extra.source))
    nb = nbformat.v4.new_notebook(metadata=cn.nb.metadata)
    nb.cells = cells
    return Plan(nb, grading, solutions, notes, learner)


def check_budget(base: float | None = None) -> float:
    """Seconds one exercise's check may take: 3 x the checkers' own limit, stretched by the machine's load per
    core (at most 4x), so that a grading machine busy with a class (or with a test suite) does not time out a
    correct solution whose every call is a round trip to a slow kernel. An endless loop still ends in it."""
    base = 3 * exercises.TIMEOUT if base is None else base
    try:
        per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        per_core = 1.0
    return base * min(4.0, max(1.0, per_core))


def judge(cn: CourseNotebook, p: Plan, kernel: _grade_kernel.Kernel) -> list[Verdict]:
    """Each exercise's verdict, computed HERE by llm_lab's checkers on the learner's object in the kernel, right
    after the notebook ran up to that exercise's checker cell (a later cell that kills the kernel costs only the
    exercises after it)."""
    link, reading = _remote.Link(kernel.send), _grade_source.read(p.nb.cells, p.learner)
    verdicts = []
    for ex in sorted(cn.exercises, key=lambda e: p.grading[e.key]):
        kernel.run(until=p.grading[ex.key] + 1)
        pts = int(cn.nb.cells[ex.checker].metadata["nbgrader"]["points"])
        v = Verdict(ex.key, "error", max_points=pts)
        own = [e for e in (_grade_kernel.cell_error(p.nb.cells[i]) for i in p.solutions.get(ex.key, [])) if e]
        decided = reading.verdict(ex.key, ex.exercise, p.grading[ex.key], cn.lang)  # the source first: no kernel
        try:
            if decided is None:
                link.exercise = ex.exercise
                # the whole check's budget: the learner's time plus a round trip per call to a busy kernel;
                # the checkers' inputs drawn from this run's secret, not the public checkers' fixed seeds
                decided = exercises.grade(
                    ex.exercise, link.lookup(ex.key), lang=cn.lang, timeout=check_budget(), secret=SECRET
                )
            v.status, v.mistake, v.message = decided.status, decided.hint, decided.message
        except NameError as exc:
            v.status, v.mistake, v.message = "missing", "missing", str(exc)
        except TimeoutError:
            v.status = v.mistake = "timeout"
        except (_remote.RemoteFailed, _remote.WireError) as exc:
            v.status, v.mistake, v.message = "error", "error", kernel.died or str(exc)
        if own and v.status not in ("pass", "reference", "tampered"):  # the learner's cell failed: say so
            v.message = f"your solution cell failed ({own[0]}); " + (v.message or "")
            if own[0] == "timeout":
                v.status = v.mistake = "timeout"
        v.points = pts if v.status == "pass" else 0
        verdicts.append(v)
    return sorted(verdicts, key=lambda v: [e.key for e in cn.exercises].index(v.key))


def grade_one(
    r: Result,
    course,
    expected: tuple[str | None, str | None],
    cell_timeout: float,
    max_output: int,
    sandboxed: bool = True,
    max_seconds: float = 600.0,
) -> Result:
    """Grade one submitted file in place (never raises)."""
    start = time.monotonic()
    try:
        nb = load(r.path, r.root)
        key = identify(nb, course)
        if key is None:
            r.problem = "not one of the course notebooks (no matching cell ids or title)"
            return r
        r.lang, r.notebook = key[0], course[key].path.name
        want_lang, want_nn = expected
        if want_nn and key[1] != want_nn:
            r.problem = f"wrong notebook: this is {course[key].path.name}, the assignment is notebook {want_nn}"
            return r
        if want_lang and key[0] != want_lang:
            r.notes.append(f"the {key[0]} copy (the class uses {want_lang}): graded, feedback in {key[0]}")
        cn = course[key]
        p = plan(cn, nb)
        r.notes += p.notes
        if not sandboxed:
            r.notes.append("graded WITHOUT the sandbox (--no-sandbox): the code ran with the grader's rights")
        with tempfile.TemporaryDirectory(prefix="llm-lab-grade-") as tmp:
            with _grade_kernel.Kernel(p, Path(tmp), cell_timeout, max_output, sandboxed, max_seconds) as kernel:
                r.verdicts = judge(cn, p, kernel)
                cut, died = kernel.client.cut - {kernel.slot}, kernel.died
                try:
                    written = kernel.written()
                except OSError:  # the sandbox went away while we looked
                    written = []
            written += sorted(
                str(f.relative_to(tmp))
                for f in Path(tmp).rglob("*")
                if f.is_file()
                and not f.is_symlink()
                and f.parent.name not in ("kernels", "work")
                and f.name != "kernel.json"
            )
        if written:
            r.notes.append(f"the code wrote files (discarded): {', '.join(written[:5])}")
        if cut:
            r.notes.append(f"output cut at {max_output // 1000} kB in {len(cut)} cell(s)")
        if died:
            r.notes.append(died)
    except ValueError as exc:
        r.problem = str(exc)
    except Exception as exc:  # a grader bug must cost one line, not the class's run
        r.problem = f"could not be graded ({type(exc).__name__}: {_one_line(str(exc))})"
    finally:
        r.seconds = time.monotonic() - start
    return r


def expected_notebook(results, course, notebook: str | None) -> tuple[str | None, str | None]:
    """(language, number) the class was asked for: --notebook if given, else the most common submission."""
    keys = []
    for r in results:
        if not r.problem:
            try:
                keys.append(identify(load(r.path, r.root), course))
            except Exception:  # grade_one names the reason in that student's row
                pass
    counts = Counter(k for k in keys if k)
    lang = counts.most_common(1)[0][0][0] if counts else None
    if notebook:
        return lang, notebook.zfill(2)
    return lang, (Counter(k[1] for k in counts.elements()).most_common(1)[0][0] if counts else None)


class SandboxMissing(RuntimeError):
    """The sandbox cannot run here; the message names what to install (or --no-sandbox)."""


def grade(
    submissions: Path,
    out: Path,
    notebook: str | None = None,
    jobs: int | None = None,
    cell_timeout: float = 30.0,
    max_output: int = 200_000,
    src: Path = _course.INSTRUCTOR,
    echo=print,
    sandboxed: bool = True,
    max_seconds: float = 600.0,
    refused=(),
) -> list[Result]:
    """Grade every submission in ``submissions`` and write grades.csv, feedback/ and report.md into ``out``.
    Each submission's kernel runs in the bubblewrap sandbox (``sandboxed=False``: as the grader, noted in
    every feedback file); the verdicts are computed here. ``refused``: problem Results found elsewhere
    (grade_nbgrader's links and pipes), reported with the rest."""
    if not submissions.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS={submissions} is not a folder of submitted notebooks")
    if sandboxed:
        missing = sandbox.available()
        if missing:
            raise SandboxMissing(missing)
    course = load_course(src)
    results = discover(submissions) + list(refused)
    if not results:
        raise FileNotFoundError(f"{submissions} holds no submissions")
    expected = expected_notebook(results, course, notebook)
    todo = [r for r in results if not r.problem]
    os.environ.setdefault("MPLBACKEND", "Agg")  # an unsandboxed kernel inherits it: no figure windows
    jobs = jobs or os.cpu_count() or 1
    mode = f"in the bubblewrap sandbox, {sandbox.limits()}" if sandboxed else "WITHOUT a sandbox (--no-sandbox)"
    echo(f"grading {len(todo)} notebook(s) from {submissions} with {jobs} kernel(s) in parallel, {mode}")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for r in pool.map(
            lambda r: grade_one(r, course, expected, cell_timeout, max_output, sandboxed, max_seconds), todo
        ):
            mark = r.problem or f"{r.total}/{sum(v.max_points for v in r.verdicts)}"
            echo(_grade_report.visible(f"  {r.student:<24} {r.path.name:<40} {mark}"))
    if out.exists():
        shutil.rmtree(out / "feedback", ignore_errors=True)
    _grade_report.write_all(results, course, expected, out)
    echo(
        f"wrote {_grade_report.rel(out / 'grades.csv')}, {_grade_report.rel(out / 'report.md')} and "
        f"{len(results)} feedback file(s) in {_grade_report.rel(out / 'feedback')}"
    )
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("submissions", type=Path, help="folder with one notebook (or one folder) per student")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/grades)")
    ap.add_argument("--notebook", help="the assigned notebook's number, e.g. 04 (default: the most common one)")
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
        )
    except (FileNotFoundError, SandboxMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
