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
- each exercise is graded in its checker cell's place by a fresh copy of the checkers (a redefined
  ``check_*``, a patched ``llm_lab.exercises`` or llm_lab's own reference scores 0, with a note);
- each submission runs in a fresh kernel in its own temporary folder (files it writes land there and are
  dropped; nothing in SUBMISSIONS is ever written), submissions run in parallel on all cores, a cell that
  runs past ``--cell-timeout`` seconds is interrupted (an endless loop costs that exercise only), and output
  past ``--max-output`` bytes per cell is dropped.

Written into OUT (default ``build/grades``): ``grades.csv`` (``student, notebook, <one column per exercise>,
total, max``), ``feedback/<student>[--<notebook>].html`` (each exercise's verdict and hint, in the
notebook's language) and ``report.md`` (per exercise: how many passed, the most common named mistakes; then
every submission that could not be graded normally, with the reason). Written Predict/Explain answers are
graded by hand (docs/instructors.md). Exit status 0 unless SUBMISSIONS is missing or holds nothing.

Usage: python tools/grade.py SUBMISSIONS [--out DIR] [--notebook 04] [--jobs N] [--cell-timeout S]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import textwrap
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import _course
import _grade_report
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

DEFAULT_OUT = _course.ROOT / "build" / "grades"
MAX_FILE_BYTES = 50_000_000
CELL_ID = re.compile(r"^(en|zh)-(\d\d)-\d{3}$")
DEFINES = "^(?:def|class) {}\\b"


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

    @property
    def total(self) -> int:
        return sum(v.points for v in self.verdicts)


# ---- finding and reading submissions --------------------------------------------------------------------


def discover(submissions: Path) -> list[Result]:
    """One Result per submitted file: a notebook to grade, or a problem (not a notebook, empty folder)."""
    found = []
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith((".", "__MACOSX")):
            continue
        if entry.is_dir():
            notebooks = sorted(p for p in entry.rglob("*.ipynb")
                               if not any(part.startswith(".") for part in p.relative_to(entry).parts))
            found += [Result(entry.name, p) for p in notebooks]
            if not notebooks:
                others = ", ".join(sorted(p.name for p in entry.rglob("*") if p.is_file())[:5]) or "nothing"
                found.append(Result(entry.name, entry, problem=f"no .ipynb notebook in the folder (found: {others})"))
        elif entry.suffix == ".ipynb":
            found.append(Result(entry.stem, entry))
        else:
            found.append(Result(entry.stem, entry, problem=f"not a notebook: {entry.name} (expected a .ipynb file)"))
    return found


def load(path: Path) -> nbformat.NotebookNode:
    """Read a submitted notebook; ValueError with a clear reason when it cannot be one."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"file is {size / 1e6:.0f} MB, more than {MAX_FILE_BYTES / 1e6:.0f} MB: not graded")
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not a text file (binary content), so not a notebook") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON (line {exc.lineno}: {exc.msg}): damaged, or not a notebook") from None
    if not isinstance(data, dict) or "cells" not in data:
        raise ValueError("valid JSON but not a Jupyter notebook (no 'cells')")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
    except Exception as exc:  # nbformat raises several types for malformed notebooks
        raise ValueError(f"not a valid Jupyter notebook ({type(exc).__name__}: {_one_line(str(exc))})") from None
    for cell in nb.cells:
        if "source" not in cell or "cell_type" not in cell:
            raise ValueError("not a valid Jupyter notebook (a cell without source)")
    return nb


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


def load_course(src: Path = _course.NOTEBOOKS) -> dict[tuple[str, str], CourseNotebook]:
    """(lang, number) -> the instructor notebook, for every notebook with autograded exercises."""
    course = {}
    for path in _course.find_notebooks(src):
        nb = nbformat.read(str(path), as_version=4)
        exercises = _course.exercises(nb.cells)
        if exercises:
            course[(path.parent.name, path.name[:2])] = CourseNotebook(path, path.parent.name, path.name[:2], nb,
                                                                       exercises)
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


def grading_code(ex: _course.Exercise, nonce: str, lang: str | None = None) -> str:
    """A cell that grades one exercise and prints ``nonce`` + a JSON verdict (never raises)."""
    body = textwrap.indent(_course.verdict_code(ex.exercise, ex.key, lang), "    ")
    return "\n".join([
        "import json as _json",
        "",
        "try:",
        body,
        "except NameError as _e:",
        '    _status, _mistake, _note = "missing", "missing", str(_e)',
        "except KeyboardInterrupt:",
        '    _status, _mistake, _note = "timeout", "timeout", ""',
        "except BaseException as _e:",
        '    _status, _mistake, _note = "error", "error", f"{type(_e).__name__}: {_e}"',
        f'print("{nonce}" + _json.dumps({{"status": _status, "mistake": _mistake, "note": str(_note)}}))',
    ])


@dataclass
class Plan:
    """The notebook to execute and where each exercise's pieces are in it."""

    nb: nbformat.NotebookNode
    grading: dict[str, int]  # exercise key -> index of its grading cell
    solutions: dict[str, list[int]]  # exercise key -> indices of the learner's solution cells
    notes: list[str]


def plan(cn: CourseNotebook, sub, nonce: str) -> Plan:
    """The instructor notebook with the learner's solution cells (and added cells) put in, checkers replaced
    by grading cells. Solution cells are matched by cell id, then nbgrader grade_id, then by defining the
    exercise's object (``def name`` / ``class name``)."""
    inst = cn.nb.cells
    by_id = {c.get("id"): i for i, c in enumerate(inst)}
    by_grade_id = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(inst)
                   if c.metadata.get("nbgrader", {}).get("grade_id")}
    owner = {s: ex for ex in cn.exercises for s in ex.solutions}
    matched: dict[int, int] = {}  # instructor index -> submission index
    for j, cell in enumerate(sub.cells):
        i = by_id.get(cell.get("id"))
        if i is None:
            i = by_grade_id.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"))
        if i is not None and i not in matched:
            matched[i] = j
    used = set(matched.values())
    by_source: dict[str, list[int]] = {}
    for j, cell in enumerate(sub.cells):
        if j not in used:
            by_source.setdefault(cell.source, []).append(j)
    for i, cell in enumerate(inst):  # ids lost by some editors: an unchanged course cell is found by its text
        if i not in matched and i not in owner and by_source.get(cell.source):
            matched[i] = by_source[cell.source].pop(0)
            used.add(matched[i])
    for s, ex in owner.items():  # and a solution cell by what it defines
        if s not in matched:
            pattern = re.compile(DEFINES.format(re.escape(ex.key)), re.M)
            j = next((j for j, c in enumerate(sub.cells)
                      if j not in used and c.cell_type == "code" and pattern.search(c.source)), None)
            if j is not None:
                matched[s], used = j, used | {j}
    notes = []
    order = [i for i, _ in sorted(matched.items(), key=lambda kv: kv[1])]
    if order != sorted(order):
        notes.append("cells were reordered: graded in the course's order")
    # cells the learner added, each kept after the course cell it followed
    anchor_of = {j: i for i, j in matched.items()}
    added: dict[int, list] = {}
    last = -1
    for j, cell in enumerate(sub.cells):
        if j in anchor_of:
            last = anchor_of[j]
        elif cell.cell_type == "code" and cell.source.strip():
            added.setdefault(last, []).append(cell)
    missing_course = [i for i, c in enumerate(inst) if i not in matched and c.cell_type == "code"
                      and i not in owner and _course.CHECKER not in _course.tags(c)]
    if len(missing_course) > 2:
        notes.append(f"{len(missing_course)} course code cells were deleted or changed beyond recognition: "
                     "the course's versions were run")
    cells, grading, solutions = [], {}, {}
    checker_of = {ex.checker: ex for ex in cn.exercises}
    for k in [-1, *range(len(inst))]:
        if k >= 0:
            c = inst[k]
            if k in owner:
                if k in matched:
                    solutions.setdefault(owner[k].key, []).append(len(cells))
                    cells.append(nbformat.v4.new_code_cell(sub.cells[matched[k]].source))
                else:
                    notes.append(f"{owner[k].key}: the solution cell was deleted")
            elif k in checker_of:
                grading[checker_of[k].key] = len(cells)
                cells.append(nbformat.v4.new_code_cell(grading_code(checker_of[k], nonce, cn.lang)))
            elif c.cell_type == "code":
                cells.append(nbformat.v4.new_code_cell(c.source))
        for extra in added.get(k, []):
            cells.append(nbformat.v4.new_code_cell(extra.source))
    nb = nbformat.v4.new_notebook(metadata=cn.nb.metadata)
    nb.cells = cells
    return Plan(nb, grading, solutions, notes)


# ---- running -----------------------------------------------------------------------------------------------


class CappedClient(NotebookClient):
    """nbclient that keeps at most ``max_output`` bytes of output per cell (the rest is dropped and noted)."""

    def __init__(self, nb, max_output: int, **kw):
        super().__init__(nb, **kw)
        self.max_output, self.sizes, self.cut = max_output, Counter(), set()

    def output(self, outs, msg, display_id, cell_index):
        size = len(json.dumps(msg.get("content", {})))
        self.sizes[cell_index] += size
        if self.sizes[cell_index] > self.max_output:
            self.cut.add(cell_index)
            return None
        return super().output(outs, msg, display_id, cell_index)


def execute(p: Plan, workdir: Path, cell_timeout: float, max_output: int) -> tuple[set[int], str]:
    """Run the plan's notebook in a fresh kernel in ``workdir``; returns (cells whose output was cut,
    a problem line if the kernel died)."""
    client = CappedClient(
        p.nb, max_output, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
        interrupt_on_timeout=True, startup_timeout=120,
        error_on_timeout={"ename": "CellTimeout", "evalue": f"the cell ran past {cell_timeout:g} s",
                          "traceback": []},
        resources={"metadata": {"path": str(workdir)}},
    )
    try:
        client.execute()
    except DeadKernelError:
        return client.cut, "the kernel died (the code called os._exit, crashed or ran out of memory)"
    except Exception as exc:  # a kernel that cannot start or answer must not end the whole run
        return client.cut, f"the notebook could not be run ({type(exc).__name__}: {_one_line(str(exc))})"
    return client.cut, ""


def cell_error(cell) -> str:
    for o in cell.get("outputs", []):
        if o.get("output_type") == "error":
            if o.get("ename") in ("CellTimeout", "KeyboardInterrupt"):  # the grader's interrupt: the time limit
                return "timeout"
            return f"{o.get('ename')}: {_one_line(o.get('evalue'))}"
    return ""


def read_verdicts(cn: CourseNotebook, p: Plan, nonce: str, died: str) -> list[Verdict]:
    verdicts = []
    for ex in cn.exercises:
        pts = int(cn.nb.cells[ex.checker].metadata["nbgrader"]["points"])
        v = Verdict(ex.key, "error", max_points=pts)
        cell = p.nb.cells[p.grading[ex.key]]
        lines = [o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
        found = [line[len(nonce):] for line in "".join(lines).splitlines() if line.startswith(nonce)]
        if found:
            data = json.loads(found[-1])
            v.status, v.mistake, v.message = data["status"], data["mistake"], data["note"]
        elif cell_error(cell) == "timeout":
            v.status = v.mistake = "timeout"
        else:
            v.status, v.mistake = "error", "error"
            v.message = died or cell_error(cell) or "the grading cell did not run"
        own = [cell_error(p.nb.cells[i]) for i in p.solutions.get(ex.key, [])]
        own = [e for e in own if e]
        if own and v.status != "pass":  # the learner's own cell failed: say so, it explains the verdict
            v.message = f"your solution cell failed ({own[0]}); " + (v.message or "")
            if own[0] == "timeout":
                v.status = v.mistake = "timeout"
        v.points = pts if v.status == "pass" else 0
        verdicts.append(v)
    return verdicts


def grade_one(r: Result, course, expected: tuple[str | None, str | None], cell_timeout: float,
              max_output: int) -> Result:
    """Grade one submitted file in place (never raises)."""
    start = time.monotonic()
    try:
        nb = load(r.path)
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
        nonce = "LLMLAB-VERDICT-" + secrets.token_hex(8) + " "
        p = plan(cn, nb, nonce)
        r.notes += p.notes
        with tempfile.TemporaryDirectory(prefix="llm-lab-grade-") as tmp:
            work = Path(tmp) / "work"  # one level down: "../x" written by the code still lands in tmp
            work.mkdir()
            cut, died = execute(p, work, cell_timeout, max_output)
            written = sorted(str(f.relative_to(tmp)) for f in Path(tmp).rglob("*") if f.is_file())
        if written:
            r.notes.append(f"the code wrote files (discarded): {', '.join(written[:5])}")
        if cut:
            r.notes.append(f"output cut at {max_output // 1000} kB in {len(cut)} cell(s)")
        if died:
            r.notes.append(died)
        r.verdicts = read_verdicts(cn, p, nonce, died)
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
                keys.append(identify(load(r.path), course))
            except (ValueError, OSError):
                pass
    counts = Counter(k for k in keys if k)
    lang = counts.most_common(1)[0][0][0] if counts else None
    if notebook:
        return lang, notebook.zfill(2)
    return lang, (Counter(k[1] for k in counts.elements()).most_common(1)[0][0] if counts else None)


def grade(submissions: Path, out: Path, notebook: str | None = None, jobs: int | None = None,
          cell_timeout: float = 30.0, max_output: int = 200_000, src: Path = _course.NOTEBOOKS,
          echo=print) -> list[Result]:
    """Grade every submission in ``submissions`` and write grades.csv, feedback/ and report.md into ``out``."""
    if not submissions.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS={submissions} is not a folder of submitted notebooks")
    course = load_course(src)
    results = discover(submissions)
    if not results:
        raise FileNotFoundError(f"{submissions} holds no submissions")
    expected = expected_notebook(results, course, notebook)
    todo = [r for r in results if not r.problem]
    os.environ.setdefault("MPLBACKEND", "Agg")  # kernels inherit it: no figure windows
    jobs = jobs or os.cpu_count() or 1
    echo(f"grading {len(todo)} notebook(s) from {submissions} with {jobs} kernel(s) in parallel")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for r in pool.map(lambda r: grade_one(r, course, expected, cell_timeout, max_output), todo):
            mark = r.problem or f"{r.total}/{sum(v.max_points for v in r.verdicts)}"
            echo(f"  {r.student:<24} {r.path.name:<40} {mark}")
    if out.exists():
        shutil.rmtree(out / "feedback", ignore_errors=True)
    _grade_report.write_all(results, course, expected, out)
    echo(f"wrote {_grade_report.rel(out / 'grades.csv')}, {_grade_report.rel(out / 'report.md')} and "
         f"{len(results)} feedback file(s) in {_grade_report.rel(out / 'feedback')}")
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("submissions", type=Path, help="folder with one notebook (or one folder) per student")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/grades)")
    ap.add_argument("--notebook", help="the assigned notebook's number, e.g. 04 (default: the most common one)")
    ap.add_argument("--jobs", type=int, help="notebooks graded at once (default: all cores)")
    ap.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per cell (default: 30)")
    ap.add_argument("--max-output", type=int, default=200_000, help="output bytes kept per cell (default: 200000)")
    args = ap.parse_args(argv)
    try:
        grade(args.submissions, args.out, args.notebook, args.jobs, args.cell_timeout, args.max_output)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
