"""The learner version of a notebook: what a Colab badge and `make lab` open.

Derived from the instructor version (``notebooks/instructor/{lang}/``, built by nbtool from the sources) so
that the two can never drift apart:

- each solution (the lines between nbgrader's solution markers) becomes the stub ``# YOUR CODE HERE`` /
  ``raise NotImplementedError()``, indented like the markers, so a function's ``def`` line and docstring stay
  and running the cell defines a function whose checker then says "not written yet" (Run All never stops);
- the solution itself is folded (``<details>``) in a markdown cell right after its checker, one click away;
- each Predict/Explain model answer becomes a cell to write in (*YOUR ANSWER HERE*) with the model answer
  folded right under it;
- checker cells lose their hidden tests and every cell its nbgrader metadata: no grading code in sight;
- the exercises section's how-to paragraph is the learner's, the header keeps its Colab badge.

After the notebook has run (nbtool execute), ``clear_exercise_outputs`` keeps only the checkers' verdicts in
the exercises section: the outputs of the cells that demonstrate a Predict answer would give it away before
the learner has thought. Cells without an execution count are run but not compared by nbval.

Tags stay (``solution``, ``checker``, ``answer``): the grader still finds the exercises in a submission made
from a learner version.
"""

from __future__ import annotations

import copy
import re

import nbformat

from tools import course as _course

SOLUTION_SUMMARY = {"en": "Solution (try first)", "zh": "参考答案（先自己试）"}
ANSWER_SUMMARY = {"en": "Model answer", "zh": "参考答案"}
FOLDED_TAG = "folded-solution"  # markdown cells this module adds (a solution, a model answer)
_DETAILS = re.compile(r"^\s*<details>\s*<summary>(.*?)</summary>\s*\n(.*)</details>\s*$", re.S)


def stub_solution(source: str, lang: str) -> str:
    """Replace each marked region by the stub, at the markers' indentation (as nbgrader's ClearSolutions)."""
    stub = _course.CODE_STUB.get(lang, _course.CODE_STUB["en"]).splitlines()
    out, inside = [], False
    for line in source.splitlines():
        if _course.BEGIN_SOLUTION in line:
            if inside:
                raise ValueError(f"two {_course.BEGIN_SOLUTION!r} markers without an end in between:\n{source}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + s for s in stub]
        elif _course.END_SOLUTION in line:
            if not inside:
                raise ValueError(f"{_course.END_SOLUTION!r} without a begin marker:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{_course.BEGIN_SOLUTION!r} without {_course.END_SOLUTION!r}:\n{source}")
    return "\n".join(out)


def shown_solution(source: str) -> str:
    """The solution as a learner reads it: the marker lines dropped, the code kept."""
    lines = [
        line for line in source.splitlines() if _course.BEGIN_SOLUTION not in line and _course.END_SOLUTION not in line
    ]
    return "\n".join(lines).strip("\n")


def without_hidden_tests(source: str) -> str:
    return source.split(_course.BEGIN_HIDDEN)[0].rstrip("\n")


def folded(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


def folded_solutions(sources: list[str], lang: str) -> str:
    code = "\n\n\n".join(shown_solution(s) for s in sources)
    return folded(SOLUTION_SUMMARY[lang], f"```python\n{code}\n```")


def folded_answer(source: str, lang: str) -> str:
    """A model answer, folded: an answer cell already written as ``<details>`` keeps its own summary."""
    m = _DETAILS.match(source)
    return folded(m[1], m[2]) if m else folded(ANSWER_SUMMARY[lang], source)


def _new_cell(kind: str, source: str, cell_id: str, tags: list[str]):
    cell = (nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell)(source)
    cell["id"] = cell_id
    if tags:
        cell.metadata["tags"] = tags
    return cell


def learner_version(nb: nbformat.NotebookNode, lang: str) -> nbformat.NotebookNode:
    """The learner version of an instructor notebook (``nb`` is not modified; outputs are dropped)."""
    out = copy.deepcopy(nb)
    howto = _course.HOWTO[_course.INSTRUCTOR_VERSION][lang], _course.HOWTO[_course.LEARNER][lang]
    cells, pending = [], []
    for cell in out.cells:
        cell.metadata.pop("nbgrader", None)
        tags = _course.tags(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if cell.cell_type == "markdown" and howto[0] in cell.source:
            cell.source = cell.source.replace(*howto)
        if _course.SOLUTION in tags:
            pending.append(cell.source)
            cell.source = stub_solution(cell.source, lang)
            cells.append(cell)
        elif _course.CHECKER in tags:
            cell.source = without_hidden_tests(cell.source)
            cells.append(cell)
            if pending:
                cells.append(
                    _new_cell("markdown", folded_solutions(pending, lang), f"{cell['id']}-solution", [FOLDED_TAG])
                )
                pending = []
        elif _course.ANSWER in tags and cell.cell_type == "markdown":
            model = folded_answer(cell.source, lang)
            cell.source = _course.TEXT_STUB.get(lang, _course.TEXT_STUB["en"])
            cells.append(cell)
            cells.append(_new_cell("markdown", model, f"{cell['id']}-model", [FOLDED_TAG]))
        else:
            cells.append(cell)
    if pending:
        raise ValueError(f"{len(pending)} solution cell(s) after the last checker: each solution needs a checker")
    leaked = [
        c["id"]
        for c in cells
        if c.cell_type == "code" and (_course.BEGIN_SOLUTION in c.source or _course.BEGIN_HIDDEN in c.source)
    ]
    if leaked:
        raise RuntimeError(f"a solution or hidden test survived in cells {leaked}")
    out.cells = cells
    return out


def exercises_start(nb: nbformat.NotebookNode) -> int | None:
    """Index of the exercises section's heading cell (tagged ``exercises``), or None."""
    return next((i for i, c in enumerate(nb.cells) if _course.EXERCISES_TAG in _course.tags(c)), None)


def clear_exercise_outputs(nb: nbformat.NotebookNode) -> None:
    """After a run: in the exercises section keep only the checkers' outputs (the verdict on the stub).

    A cell whose output is cleared loses its execution count too (nbval then runs it without comparing: its
    output would be a Predict answer). A cell that printed nothing (an import, a stub's definition) keeps its
    count, so nbval checks that it still prints nothing and raises nothing.
    """
    start = exercises_start(nb)
    if start is None:
        return
    for cell in nb.cells[start:]:
        if cell.cell_type == "code" and _course.CHECKER not in _course.tags(cell) and cell.outputs:
            cell.outputs, cell.execution_count = [], None
