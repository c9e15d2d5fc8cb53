"""How long `make grade` takes for a class: 30 submissions of one notebook, graded in parallel on all cores.

Target: <= 180 s on the 2-core reference machine, with the sandbox on (the same class is then graded with
``--no-sandbox`` too, and the ratio printed). The class is made from the real instructor
notebook: a third correct, a third untouched student copies, a third with one exercise wrong. Prints the
time, the ratio to the target (< 1 is within it) and the load average, since a shared machine is slower.

Usage: python -m benchmarks.bench_grade [--notebook 04] [--lang en] [--students 30] [--jobs N] [--out FILE]

With ``--out docs/benchmarks.md`` (what ``make bench`` does) the lines also go into that report, between
``<!-- grade:begin -->`` and ``<!-- grade:end -->`` (the section is replaced, or appended the first time).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from benchmarks import report as _report
from tools import course as _course
from tools.teaching import student
from tools.teaching.grader import cli

ROOT = Path(__file__).resolve().parent.parent

TARGET_S = 180.0
BEGIN, END = "<!-- grade:begin -->", "<!-- grade:end -->"


def write_section(path: Path, lines: list[str]) -> None:
    """Put ``lines`` into the report at ``path`` as its grading section."""
    _report.replace_section(
        path,
        BEGIN,
        END,
        [
            "## Grading a class (`make grade`)",
            "",
            "Written by `benchmarks/bench_grade.py`; never edit the numbers by hand.",
            "",
            *[f"- {line}" for line in lines],
        ],
    )


def make_class(path: Path, folder: Path, n: int) -> None:
    """``n`` submissions of the instructor notebook ``path`` in ``folder``."""
    lang = path.parent.name
    instructor = nbformat.read(str(path), as_version=4)
    solutions = {c.id: c.source for c in instructor.cells if _course.SOLUTION in _course.tags(c)}
    for i in range(n):
        nb = nbformat.reads(student.make_student_copy(instructor, lang, path.name), as_version=4)
        cells = [c for c in nb.cells if c.id in solutions]
        if i % 3 != 1:  # correct, or correct but for the first exercise
            for c in cells:
                c.source = solutions[c.id]
        if i % 3 == 2:
            cells[0].source = solutions[cells[0].id].replace("### BEGIN SOLUTION", "return None  # wrong\n")
        nbformat.write(nb, str(folder / f"student{i:02d}.ipynb"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notebook", default="04")
    ap.add_argument("--lang", default="en", choices=_course.LANGS)
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--out", type=Path, help="also write the result into this report (e.g. docs/benchmarks.md)")
    args = ap.parse_args(argv)
    [path] = [p for p in _course.find_notebooks(only=args.notebook, langs=(args.lang,))]
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        make_class(path, subs, args.students)
        runs = {}
        for sandboxed in (True, False):  # the sandbox is what `make grade` uses; the other run shows its cost
            load_before = os.getloadavg()[0]
            start = time.perf_counter()
            results = cli.grade(
                subs, Path(tmp) / "out", args.notebook, args.jobs, echo=lambda *a: None, sandboxed=sandboxed
            )
            runs[sandboxed] = (time.perf_counter() - start, load_before, os.getloadavg()[0], results)
    seconds, load_before, load_after, results = runs[True]
    bare = runs[False][0]
    problems = [r for r in results if r.problem]
    lines = [
        f"{len(results)} submissions of {path.name} ({args.lang}) on {os.cpu_count()} cores, "
        f"{args.jobs or os.cpu_count()} at once, a fresh kernel each in the bubblewrap sandbox",
        f"time {seconds:.1f} s, target {TARGET_S:.0f} s: ratio {seconds / TARGET_S:.2f} (< 1 meets it); "
        f"{seconds / len(results):.2f} s per submission",
        f"the same class with --no-sandbox: {bare:.1f} s; sandboxed / unsandboxed: {seconds / bare:.2f}",
        f"load average before {load_before:.1f}, after {load_after:.1f} (other work on a shared machine slows this)",
    ]
    print("make grade: " + "\n".join(lines))
    if args.out and not problems:
        write_section(args.out if args.out.is_absolute() else ROOT / args.out, lines)
        print(f"wrote {args.out}")
    if problems:
        print(f"{len(problems)} submission(s) could not be graded: {problems[0].problem}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
