"""Write learners' copies of the notebooks: nbgrader release versions that give nothing away.

For every instructor version ``notebooks/instructor/<lang>/NN_*.ipynb`` this writes
``build/student/<lang>/NN_*.ipynb``, produced by exactly the preprocessors ``nbgrader generate_assignment``
runs (its own list, in its order, without the gradebook step), so a copy is an nbgrader release:
``nbgrader autograde`` grades submissions made from it. In a copy

- each solution (between ``### BEGIN SOLUTION`` and ``### END SOLUTION``) is a stub that raises
  ``NotImplementedError``; each Predict/Explain model answer (``answer`` cells) reads "YOUR ANSWER HERE";
  both in the copy's language;
- the hidden tests of checker cells (``### BEGIN HIDDEN TESTS`` ...) are removed; nbgrader's autograde puts
  them back from the instructor version;
- every output is cleared (nbgrader's default: no Predict output gives an answer away), checker and answer
  cells are locked or graded with nbgrader checksums;
- the header's note on the instructor version (or an Open-in-Colab badge) becomes the student note, and the
  exercises' how-to paragraph the student copy's.

The badge swap happens first, on the instructor notebook: ``--nbgrader-source DIR`` writes those
"nbgrader source" notebooks (with an ``nbgrader_config.py`` per language) for an nbgrader course, whose
``nbgrader generate_assignment`` then releases exactly the copies written here (see docs/instructors.md).

An existing student copy that differs from what would be written (a learner's work, or a copy made from
an older notebook) is never overwritten unless ``--force``. The run reports each file as written,
unchanged or skipped. Exit status: 0 unless something really failed (no notebooks, a broken notebook,
unmatched solution markers); skipping an edited copy is not a failure.

Usage: python -m tools.teaching.student [--force] [--out DIR] [--src DIR] [--only 01,03] [--nbgrader-source DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Unicode
from traitlets.config import Config

from tools import course as _course

ROOT = _course.ROOT
LANGS = _course.LANGS
DEFAULT_SRC = _course.INSTRUCTOR
DEFAULT_OUT = ROOT / "build" / "student"
PATTERN = _course.PATTERN
CODE_STUB, TEXT_STUB = _course.CODE_STUB, _course.TEXT_STUB
FORCE_HINT = "rerun with --force (make student FORCE=1) to overwrite it"
_tags = _course.tags


def is_solution_cell(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


STUDENT_NOTE = {
    "en": "*Student copy: the exercise solutions are removed. Write yours where a cell raises "
    "`NotImplementedError` and run the checker cell below it; answer the questions where it says "
    "YOUR ANSWER HERE.*",
    "zh": "*学生版：练习答案已移除。请在抛出 `NotImplementedError` 的单元中写下你的代码，然后运行其下方的检查单元；"
    "在写着“在这里写下你的答案”的单元里回答问题。*",
}


class StudentHeader(Preprocessor):
    """Swap the header's note on the instructor version (or a Colab badge: it would open another version) for
    the student note, and the exercises' how-to paragraph for the student copy's."""

    lang = Unicode("en", help=f"the notebook's language, one of {', '.join(LANGS)}")

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "markdown":
            return cell, resources
        lang = self.lang if self.lang in STUDENT_NOTE else "en"
        note = _course.INSTRUCTOR_NOTE[lang].split("{name}")[0]
        if index == 0 and ("colab-badge.svg" in cell.source or note in cell.source):
            lines = [
                line for line in cell.source.splitlines() if "colab-badge.svg" not in line and not line.startswith(note)
            ]
            cell.source = "\n".join(lines).rstrip() + "\n\n" + STUDENT_NOTE[lang]
        howto = _course.HOWTO[_course.INSTRUCTOR_VERSION][lang]
        if howto in cell.source:
            cell.source = cell.source.replace(howto, _course.HOWTO["student"][lang])
        return cell, resources


BEGIN, END = _course.BEGIN_SOLUTION, _course.END_SOLUTION


class CheckSolutionMarkers(Preprocessor):
    """Fail with a clear message where ClearSolutions would fail obscurely (or leak a solution).

    nbgrader takes EVERY line containing ``BEGIN SOLUTION`` or ``END SOLUTION`` for a marker, in any cell,
    markdown included: the words may appear only as the marker lines of solution cells. A cell tagged
    ``solution`` or ``answer`` without nbgrader metadata would reach learners unchanged: also an error."""

    def preprocess_cell(self, cell, resources, index):
        for tag in (_course.SOLUTION, _course.ANSWER):
            if tag in _tags(cell) and not is_solution_cell(cell):
                raise ValueError(
                    f"cell {index} is tagged {tag!r} but has no nbgrader solution metadata; "
                    "rebuild the notebook with `make execute`"
                )
        marks = [line for line in cell.source.splitlines() if BEGIN in line or END in line]
        if not marks:
            return cell, resources
        where = f"cell {index} ({cell.cell_type}, starting {cell.source.splitlines()[0][:60]!r})"
        if not is_solution_cell(cell):
            raise ValueError(
                f"{where} contains {BEGIN!r} or {END!r} but is not a solution cell; nbgrader takes "
                "every line containing these words for a solution marker: reword it"
            )
        kinds = ["both" if BEGIN in line and END in line else "begin" if BEGIN in line else "end" for line in marks]
        if kinds != ["begin", "end"] * (len(kinds) // 2):
            raise ValueError(f"{where}: each '### {BEGIN}' needs one '### {END}' after it, each on its own line")
        return cell, resources


def nbgrader_config(lang: str) -> Config:
    """The nbgrader settings of a course in ``lang`` (also written as nbgrader_config.py by --nbgrader-source)."""
    c = Config()
    # enforce_metadata (nbgrader's default, kept): markers in a cell without nbgrader solution metadata
    # are an error, not silently stripped, because nbgrader could not grade that cell.
    c.ClearSolutions.enforce_metadata = True
    c.ClearSolutions.code_stub = {"python": CODE_STUB.get(lang, CODE_STUB["en"])}
    c.ClearSolutions.text_stub = TEXT_STUB.get(lang, TEXT_STUB["en"])
    return c


def config_file_text(lang: str) -> str:
    c = nbgrader_config(lang).ClearSolutions
    return (
        f"# nbgrader settings for the llm-lab notebooks in {lang!r} (written by tools/teaching/student.py)\n"
        "c = get_config()  # noqa: F821\n"
        f"c.ClearSolutions.code_stub = {dict(c.code_stub)!r}\n"
        f"c.ClearSolutions.text_stub = {c.text_stub!r}\n"
    )


def source_exporter(lang: str) -> NotebookExporter:
    """Instructor notebook -> nbgrader source: markers checked, the badge swapped for the student note."""
    exp = NotebookExporter(config=Config())
    exp.register_preprocessor(CheckSolutionMarkers, enabled=True)
    exp.register_preprocessor(StudentHeader(lang=lang), enabled=True)
    return exp


def release_exporter(lang: str) -> NotebookExporter:
    """nbgrader source -> release: generate_assignment's own preprocessors, minus the gradebook (SaveCells)."""
    try:  # here, not at the top: the rest of this module (and the tests that import it) needs no nbgrader
        from nbgrader.converters import GenerateAssignment
        from nbgrader.preprocessors import SaveCells
    except ImportError as exc:
        raise SystemExit(
            "student copies are made by nbgrader's own preprocessors, and nbgrader is not installed: "
            "run make instructor-setup (requirements-instructor.txt)"
        ) from exc
    exp = NotebookExporter(config=nbgrader_config(lang))
    for pp in GenerateAssignment.class_traits()["preprocessors"].default():
        if pp is not SaveCells:
            exp.register_preprocessor(pp, enabled=True)
    return exp


def _export(exporter: NotebookExporter, nb: nbformat.NotebookNode, name: str) -> str:
    resources = {
        "unique_key": name.removesuffix(".ipynb"),
        "nbgrader": {"notebook": name.removesuffix(".ipynb"), "assignment": "", "db_url": ""},
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body if body.endswith("\n") else body + "\n"


def make_source(nb: nbformat.NotebookNode, lang: str = "en", name: str = "notebook.ipynb") -> str:
    """The nbgrader source version of an instructor notebook, as notebook JSON text."""
    return _export(source_exporter(lang), nb, name)


def make_student_copy(nb: nbformat.NotebookNode, lang: str = "en", name: str = "notebook.ipynb") -> str:
    """Return the student copy of an instructor notebook as notebook JSON text (input is not modified)."""
    source = nbformat.reads(make_source(nb, lang, name), as_version=4)
    body = _export(release_exporter(lang), source, name)
    leaked = [
        i
        for i, c in enumerate(nbformat.reads(body, as_version=4).cells)
        if BEGIN in c.source or _course.BEGIN_HIDDEN in c.source
    ]
    if leaked:  # cannot happen with nbgrader's preprocessors, but a solution must never reach a learner
        raise RuntimeError(f"a solution or hidden test survived in cells {leaked}")
    return body


def same_notebook(path: Path, text: str) -> bool:
    """Compare as JSON, so whitespace or key order (e.g. re-saved by Jupyter) does not count as an edit."""
    try:
        return json.loads(path.read_text(encoding="utf-8")) == json.loads(text)
    except (OSError, ValueError):
        return False


def find_notebooks(src: Path, only: str | None) -> list[Path]:
    return _course.find_notebooks(src, only)


def generate(
    src: Path = DEFAULT_SRC, out: Path = DEFAULT_OUT, force: bool = False, only: str | None = None, echo=print
) -> dict[str, list]:
    """Write the student copies; return {'written': [...], 'unchanged': [...], 'skipped': [...],
    'errors': [...]} (paths, or (path, reason) pairs for skipped and errors)."""
    notebooks = find_notebooks(src, only)
    if not notebooks:
        where = ", ".join(str(src / lang / PATTERN) for lang in LANGS)
        if only and find_notebooks(src, None):
            raise FileNotFoundError(f"--only {only} matches no notebook: use notebook numbers such as 01,03")
        raise FileNotFoundError(f"no notebooks found ({where}); build them first with `make execute`")
    report: dict[str, list] = {"written": [], "unchanged": [], "skipped": [], "errors": []}
    for path in notebooks:
        lang = path.parent.name
        target = out / lang / path.name
        shown = _rel(target)
        try:
            text = make_student_copy(nbformat.read(str(path), as_version=4), lang, path.name)
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


def write_sources(src: Path, out: Path, only: str | None = None) -> list[Path]:
    """Write the nbgrader source notebooks, ``out/{lang}/NN_*.ipynb``, and ``out/{lang}/nbgrader_config.py``."""
    written = []
    for path in find_notebooks(src, only):
        lang = path.parent.name
        target = out / lang / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make_source(nbformat.read(str(path), as_version=4), lang, path.name), encoding="utf-8")
        (out / lang / "nbgrader_config.py").write_text(config_file_text(lang), encoding="utf-8")
        written.append(target)
    return written


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="overwrite student copies that were edited")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/student)")
    ap.add_argument(
        "--src",
        type=Path,
        default=DEFAULT_SRC,
        help="the instructor notebooks, one folder per language (default: notebooks/instructor)",
    )
    ap.add_argument("--only", help="comma-separated number prefixes, e.g. 01,03")
    ap.add_argument(
        "--nbgrader-source",
        type=Path,
        metavar="DIR",
        help="also write the nbgrader source notebooks (and nbgrader_config.py) to DIR/<lang>/",
    )
    args = ap.parse_args(argv)
    try:
        if args.nbgrader_source:
            sources = write_sources(args.src, args.nbgrader_source, args.only)
            print(f"nbgrader source notebooks in {_rel(args.nbgrader_source)}: {len(sources)} written")
        report = generate(args.src, args.out, args.force, args.only)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{len(v)} {k}" for k, v in report.items() if v or k != "errors")
    print(f"student copies in {_rel(args.out)}: {counts}")
    if report["skipped"]:
        print(
            f"{len(report['skipped'])} edited cop{'y' if len(report['skipped']) == 1 else 'ies'} kept; "
            "make student FORCE=1 (or --force) overwrites them"
        )
    if report["errors"]:
        print("error: some notebooks could not be converted (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
