"""Which course notebook a submission is, and the notebook the grader runs for it.

``identify`` finds a submission's course notebook and language (its cell ids, else its title). ``build_plan`` matches
its cells to the instructor version's (by nbgrader grade_id, cell id, unchanged text, or for a solution cell what it
defines) and writes the notebook to execute: every course cell from the instructor version (edited, deleted or
reordered course cells restored; checker cells unchangeable), the learner's solution cells and the code cells they
added in their places, and at each checker cell's place a capture cell (``llm_lab.exercises.grading.answering``: the
kernel remembers the learner's object; nothing is judged there).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from llm_lab.exercises.grading import kernel_cell
from tools import course as _course

# nbtool's cell ids, ``{lang}-{NN}-{index:03d}`` (any language of tools.course.LANGS: identify() keeps the course's)
CELL_ID = re.compile(r"^(.+)-(\d\d)-\d{3}$")
DEFINES = "^(?:def|class) {}\\b"


@dataclass
class CourseNotebook:
    """One instructor notebook with autograded exercises: its file, language, number, cells and exercises."""

    path: Path
    lang: str
    nn: str
    nb: nbformat.NotebookNode
    exercises: list[_course.ExerciseCells]

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
    for key, course_nb in course.items():
        if first.strip().startswith(f"# {course_nb.title}"):
            return key
    return None


def capture_code(ex: _course.ExerciseCells) -> str:
    """The cell put in a checker cell's place: the kernel remembers the object the exercise checks, as it is
    at that point of the notebook. Nothing is judged in the kernel."""
    return kernel_cell(f"capture({ex.key!r}, lambda: {ex.key})")


@dataclass
class ExecutionPlan:
    """The notebook to execute and where each exercise's pieces are in it."""

    nb: nbformat.NotebookNode
    grading: dict[str, int]  # exercise key -> index of its capture cell (the checker cell's place)
    solutions: dict[str, list[int]]  # exercise key -> indices of the learner's solution cells
    notes: list[str]
    learner: list[int] = field(default_factory=list)  # every cell the learner wrote (solutions, added cells)
    # what an instructor's review copy shows (nbgrader_course.autograded_copy), the cells this plan holds: the
    # learner's source put in for each course solution/answer cell (by its nbgrader grade_id), and the code
    # cells the learner added, run after each course cell (by its grade_id, else its cell id; "" before any)
    shown: dict[str, str] = field(default_factory=dict)
    added_after: dict[str, list[str]] = field(default_factory=dict)


def _review_key(cell) -> str:
    """A course cell's name in the review copy: its nbgrader grade_id, else its cell id."""
    meta = cell.metadata.get("nbgrader", {})
    return str(meta.get("grade_id") or cell.get("id") or "")


def _defines(key: str):
    return re.compile(DEFINES.format(re.escape(key)), re.M)


def match_cells(course_nb: CourseNotebook, submitted) -> dict[int, int]:
    """Instructor cell index -> submission cell index: by cell id, then nbgrader grade_id, then (ids lost by some
    editors) an unchanged course cell by its text, and a solution cell by what it defines."""
    course_cells = course_nb.nb.cells
    by_id = {c.get("id"): i for i, c in enumerate(course_cells)}
    by_grade_id = {
        c.metadata.get("nbgrader", {}).get("grade_id"): i
        for i, c in enumerate(course_cells)
        if c.metadata.get("nbgrader", {}).get("grade_id")
    }
    owner = {s: ex for ex in course_nb.exercises for s in ex.solutions}
    matched: dict[int, int] = {}
    for j, cell in enumerate(submitted.cells):
        i = by_grade_id.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"))
        if i is None:
            i = by_id.get(cell.get("id"))
            if i is not None and not _same_role(course_cells[i], cell, owner.get(i)):
                i = None  # ids are positions: a course that gained cells since this copy gives them to others
        if i is not None and i not in matched:
            matched[i] = j
    used = set(matched.values())
    by_source: dict[str, list[int]] = {}
    for j, cell in enumerate(submitted.cells):
        if j not in used:
            by_source.setdefault(cell.source.rstrip(), []).append(j)
    for i, cell in enumerate(course_cells):
        visible = cell.source.split(_course.BEGIN_HIDDEN)[0].rstrip()  # a checker cell as learners have it
        if i not in matched and i not in owner and by_source.get(visible):
            matched[i] = by_source[visible].pop(0)
            used.add(matched[i])
    for s, ex in owner.items():
        if s not in matched:
            pattern = _defines(ex.key)
            j = next(
                (
                    j
                    for j, c in enumerate(submitted.cells)
                    if j not in used and c.cell_type == "code" and pattern.search(c.source)
                ),
                None,
            )
            if j is not None:
                matched[s], used = j, used | {j}
    return matched


def _same_role(course_cell, cell, exercise: _course.ExerciseCells | None) -> bool:
    """May the submission's ``cell`` stand for ``course_cell`` (same id)? The same kind; for a solution cell one that
    defines that exercise's object; for a course cell no solution cell, and the same text give or take edits."""
    if course_cell.cell_type != cell.get("cell_type"):
        return False
    source = cell.get("source", "")
    if exercise is not None:
        return bool(_defines(exercise.key).search(source))
    if _course.SOLUTION in _course.tags(cell):
        return False
    # a course cell the learner may have edited: still recognisably the same cell (hidden tests aside)
    ours = course_cell.source.split(_course.BEGIN_HIDDEN)[0].rstrip()
    return source.rstrip() == ours or difflib.SequenceMatcher(None, ours, source, autojunk=False).ratio() >= 0.6


def _added(submitted, matched: dict[int, int]) -> dict[int, list]:
    """The code cells the learner added, each under the course cell it followed (-1: before any)."""
    anchor_of = {j: i for i, j in matched.items()}
    added: dict[int, list] = {}
    last = -1
    for j, cell in enumerate(submitted.cells):
        if j in anchor_of:
            last = anchor_of[j]
        elif cell.cell_type == "code" and cell.source.strip():
            added.setdefault(last, []).append(cell)
    return added


def _notes(course_nb: CourseNotebook, matched: dict[int, int], owner: dict) -> list[str]:
    """What the grader says about the submission's cells: reordered, or course cells gone."""
    notes = []
    order = [i for i, _ in sorted(matched.items(), key=lambda kv: kv[1])]
    if order != sorted(order):
        notes.append("cells were reordered: graded in the course's order")
    missing_course = [
        i
        for i, c in enumerate(course_nb.nb.cells)
        if i not in matched and c.cell_type == "code" and i not in owner and _course.CHECKER not in _course.tags(c)
    ]
    if len(missing_course) > 2:
        notes.append(
            f"{len(missing_course)} course code cells were deleted or changed beyond recognition: "
            "the course's versions were run"
        )
    return notes


def build_plan(course_nb: CourseNotebook, submitted) -> ExecutionPlan:
    """The instructor notebook with the learner's solution cells (and added cells) put in, checkers replaced
    by capture cells. Solution cells are matched by cell id, then nbgrader grade_id, then by defining the
    exercise's object (``def name`` / ``class name``)."""
    course_cells = course_nb.nb.cells
    owner = {s: ex for ex in course_nb.exercises for s in ex.solutions}
    matched = match_cells(course_nb, submitted)
    notes = _notes(course_nb, matched, owner)
    added = _added(submitted, matched)
    cells, grading, solutions, learner = [], {}, {}, []
    shown: dict[str, str] = {}
    added_after: dict[str, list[str]] = {}
    for i, j in matched.items():  # the written answers too (markdown, graded by hand): the cell matched here
        meta = course_cells[i].metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") and submitted.cells[j].cell_type == course_cells[i].cell_type:
            shown[str(meta["grade_id"])] = submitted.cells[j].source
    checker_of = {ex.checker: ex for ex in course_nb.exercises}
    for k in [-1, *range(len(course_cells))]:
        if k in owner and k in matched:
            solutions.setdefault(owner[k].key, []).append(len(cells))
            learner.append(len(cells))
            cells.append(nbformat.v4.new_code_cell(submitted.cells[matched[k]].source))
            shown[_review_key(course_cells[k])] = submitted.cells[matched[k]].source  # the code graded
        elif k in owner:
            notes.append(f"{owner[k].key}: the solution cell was deleted")
        elif k in checker_of:
            grading[checker_of[k].key] = len(cells)
            cells.append(nbformat.v4.new_code_cell(capture_code(checker_of[k])))
        elif k >= 0 and course_cells[k].cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(course_cells[k].source))
        for extra in added.get(k, []):
            learner.append(len(cells))
            cells.append(nbformat.v4.new_code_cell(extra.source))
            added_after.setdefault(_review_key(course_cells[k]) if k >= 0 else "", []).append(extra.source)
    nb = nbformat.v4.new_notebook(metadata=course_nb.nb.metadata)
    nb.cells = cells
    return ExecutionPlan(nb, grading, solutions, notes, learner, shown, added_after)
