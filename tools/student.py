"""Write learners' copies of the notebooks, solutions removed.

For every ``notebooks/{zh,en}/NN_*.ipynb`` this writes ``build/student/{zh,en}/NN_*.ipynb`` where

- each solution (the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` of a cell carrying
  nbgrader's ``solution`` metadata) is replaced by ``# YOUR CODE HERE`` / ``raise NotImplementedError()``,
  by nbgrader's own ``ClearSolutions`` preprocessor run through nbconvert;
- the outputs and execution counts of solution cells and of ``checker`` cells are cleared (they would
  give the answer away, and the checker would still say "passed");
- everything else is kept: other outputs (so learners see the figures), cell ids, tags and the nbgrader
  cell metadata (``grade_id``, ``solution: true``) that nbgrader needs to grade a submission.

An existing student copy that differs from what would be written (a learner's work, or a copy made from
an older notebook) is never overwritten unless ``--force``. The run reports each file as written,
unchanged or skipped. Exit status: 0 unless something really failed (no notebooks, a broken notebook,
unmatched solution markers); skipping an edited copy is not a failure.

Usage: python tools/student.py [--force] [--out DIR] [--src DIR] [--only 01,03]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import ClearSolutions
from traitlets import Unicode
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
LANGS = ("zh", "en")
DEFAULT_SRC = ROOT / "notebooks"
DEFAULT_OUT = ROOT / "build" / "student"
PATTERN = "[0-9][0-9]_*.ipynb"
# Learners read the stub in their own language; nbgrader's default is the English one.
CODE_STUB = {
    "en": "# YOUR CODE HERE\nraise NotImplementedError()",
    "zh": "# 在这里写你的代码（YOUR CODE HERE）\nraise NotImplementedError()",
}
FORCE_HINT = "rerun with --force (make student FORCE=1) to overwrite it"


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def is_solution_cell(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


class ClearExerciseOutputs(Preprocessor):
    """Clear outputs and execution counts of solution and checker cells; keep every other output."""

    def preprocess_cell(self, cell, resources, index):
        if "solution" in _tags(cell) and not is_solution_cell(cell):
            # ClearSolutions only looks at nbgrader metadata: without it this solution would reach learners.
            raise ValueError(f"cell {index} is tagged 'solution' but has no nbgrader solution metadata; "
                             "rebuild the notebook with `make execute`")
        if cell.cell_type == "code" and (is_solution_cell(cell) or "checker" in _tags(cell)):
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
        return cell, resources


STUDENT_NOTE = {
    "en": "*Student copy: the exercise solutions are removed. Write yours where a cell raises "
          "`NotImplementedError`, then run the checker cell below it.*",
    "zh": "*学生版：练习答案已移除。请在抛出 `NotImplementedError` 的单元中写下你的答案，然后运行其下方的检查单元。*",
}


class StudentHeader(Preprocessor):
    """Swap the header's Open-in-Colab badge (it opens the instructor notebook, solutions included) for a note."""

    lang = Unicode("en", help="the notebook's language: en or zh")

    def preprocess_cell(self, cell, resources, index):
        if index == 0 and cell.cell_type == "markdown" and "colab-badge.svg" in cell.source:
            lines = [line for line in cell.source.splitlines() if "colab-badge.svg" not in line]
            cell.source = "\n".join(lines).rstrip() + "\n\n" + STUDENT_NOTE.get(self.lang, STUDENT_NOTE["en"])
        return cell, resources


BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"  # nbgrader's default delimiters, kept for nbgrader compatibility


class CheckSolutionMarkers(Preprocessor):
    """Fail with a clear message where ClearSolutions would fail obscurely (or leak a solution).

    nbgrader takes EVERY line containing ``BEGIN SOLUTION`` or ``END SOLUTION`` for a marker, in any cell,
    markdown included: the words may appear only as the marker lines of solution cells."""

    def preprocess_cell(self, cell, resources, index):
        marks = [line for line in cell.source.splitlines() if BEGIN in line or END in line]
        if not marks:
            return cell, resources
        where = f"cell {index} ({cell.cell_type}, starting {cell.source.splitlines()[0][:60]!r})"
        if not is_solution_cell(cell):
            raise ValueError(f"{where} contains {BEGIN!r} or {END!r} but is not a solution cell; nbgrader takes "
                             "every line containing these words for a solution marker: reword it")
        kinds = ["both" if BEGIN in line and END in line else "begin" if BEGIN in line else "end" for line in marks]
        if kinds != ["begin", "end"] * (len(kinds) // 2):
            raise ValueError(f"{where}: each '### {BEGIN}' needs one '### {END}' after it, each on its own line")
        return cell, resources


def exporter(lang: str) -> NotebookExporter:
    c = Config()
    # enforce_metadata (nbgrader's default, kept): markers in a cell without nbgrader solution metadata
    # are an error, not silently stripped, because nbgrader could not grade that cell.
    c.ClearSolutions.enforce_metadata = True
    c.ClearSolutions.begin_solution_delimeter, c.ClearSolutions.end_solution_delimeter = BEGIN, END
    c.ClearSolutions.code_stub = {"python": CODE_STUB.get(lang, CODE_STUB["en"])}
    exp = NotebookExporter(config=c)
    exp.register_preprocessor(CheckSolutionMarkers, enabled=True)
    exp.register_preprocessor(ClearSolutions, enabled=True)
    exp.register_preprocessor(ClearExerciseOutputs, enabled=True)
    exp.register_preprocessor(StudentHeader(lang=lang), enabled=True)
    return exp


def make_student_copy(nb: nbformat.NotebookNode, lang: str = "en") -> str:
    """Return the student copy of an instructor notebook as notebook JSON text (input is not modified)."""
    body, _ = exporter(lang).from_notebook_node(nb)
    if not body.endswith("\n"):
        body += "\n"
    leftover = [c for c in nbformat.reads(body, as_version=4).cells if BEGIN in c.source]
    if leftover:  # cannot happen with ClearSolutions, but a leaked solution must never reach a learner
        raise RuntimeError("a solution marker survived ClearSolutions")
    return body


def same_notebook(path: Path, text: str) -> bool:
    """Compare as JSON, so whitespace or key order (e.g. re-saved by Jupyter) does not count as an edit."""
    try:
        return json.loads(path.read_text(encoding="utf-8")) == json.loads(text)
    except (OSError, ValueError):
        return False


def find_notebooks(src: Path, only: str | None) -> list[Path]:
    found = [p for lang in LANGS for p in sorted((src / lang).glob(PATTERN))]
    if only:
        found = [p for p in found if p.name.startswith(tuple(x.strip() for x in only.split(",")))]
    return found


def generate(src: Path = DEFAULT_SRC, out: Path = DEFAULT_OUT, force: bool = False, only: str | None = None,
             echo=print) -> dict[str, list]:
    """Write the student copies; return {'written': [...], 'unchanged': [...], 'skipped': [...],
    'errors': [...]} (paths, or (path, reason) pairs for skipped and errors)."""
    notebooks = find_notebooks(src, only)
    if not notebooks:
        where = ", ".join(str(src / lang / PATTERN) for lang in LANGS)
        if only and find_notebooks(src, None):
            raise FileNotFoundError(f"--only {only} matches no notebook: use two-digit numbers such as 01,03")
        raise FileNotFoundError(f"no notebooks found ({where}); build them first with `make execute`")
    report: dict[str, list] = {"written": [], "unchanged": [], "skipped": [], "errors": []}
    for path in notebooks:
        lang = path.parent.name
        target = out / lang / path.name
        shown = _rel(target)
        try:
            text = make_student_copy(nbformat.read(str(path), as_version=4), lang)
        except Exception as exc:  # report every broken notebook, then fail
            reason = f"{type(exc).__name__}: {exc}"
            report["errors"].append((path, reason))
            echo(f"error      {_rel(path)}: {reason}")
            continue
        if target.exists() and same_notebook(target, text):
            report["unchanged"].append(target)
            echo(f"unchanged  {shown}")
            continue
        if target.exists() and not force:
            reason = "differs from a fresh copy (a learner's edits, or made from an older notebook)"
            report["skipped"].append((target, reason))
            echo(f"skipped    {shown}: {reason}; {FORCE_HINT}")
            continue
        overwrite = target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        report["written"].append(target)
        echo(f"{'overwrote' if overwrite else 'written':<10} {shown}")
    return report


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="overwrite student copies that were edited")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/student)")
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC,
                    help="folder holding en/ and zh/ instructor notebooks (default: notebooks)")
    ap.add_argument("--only", help="comma-separated number prefixes, e.g. 01,03")
    args = ap.parse_args(argv)
    try:
        report = generate(args.src, args.out, args.force, args.only)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{len(v)} {k}" for k, v in report.items() if v or k != "errors")
    print(f"student copies in {_rel(args.out)}: {counts}")
    if report["skipped"]:
        print(f"{len(report['skipped'])} edited cop{'y' if len(report['skipped']) == 1 else 'ies'} kept; "
              "make student FORCE=1 (or --force) overwrites them")
    if report["errors"]:
        print("error: some notebooks could not be converted (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
