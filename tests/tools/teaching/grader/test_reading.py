"""One file cannot stop the class: reading a submission (its JSON, which course notebook it is, matching and
diffing its cells, reading every cell's source) runs in a process of its own per submission
(``tools.teaching.grader.reading``), bounded in CPU and wall-clock time and in memory; a file past a bound is that
student's row with a note. Read in the grader's own process, the 24 MB cell below took 194 s and 2.9 GB of
memory."""

from __future__ import annotations

import csv
import resource
import time

import _course_fixture as fx
import nbformat
import pytest

from tools.teaching.grader import cli, reading


def diffed(notebooks):
    """A course code cell kept under its id with 24 MB appended: matching diffs it against the course's text."""
    nb = fx.filled(notebooks)
    cell = next(
        c
        for c in nb.cells
        if c.cell_type == "code" and "solution" not in c.metadata.get("tags", []) and "nbgrader" not in c.metadata
    )
    cell.source += "\n#" + "ab" * 12_000_000
    return nb


def tokenized(notebooks):
    """A solution cell of 450,000 lines (a 5 MB file): IPython's transformer and the parser read every token."""
    nb = fx.filled(notebooks)
    cell = fx.solution_cells(nb)[0]
    cell.source += "\nx = (1 +\n" + "1,\n" * 450_000 + ")\n"
    return nb


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_file_too_slow_or_too_big_to_read_is_that_students_row(tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "READ_SECONDS", 3.0)
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    for student in ("alice", "bob"):
        nbformat.write(fx.filled(notebooks), str(subs / f"{student}.ipynb"))
    nbformat.write(diffed(notebooks), str(subs / "diff24.ipynb"))
    nbformat.write(tokenized(notebooks), str(subs / "tok5.ipynb"))
    peak, start = _peak_mb(), time.monotonic()
    results = cli.grade(subs, tmp_path / "out", "01", jobs=2, src=notebooks, echo=lambda *a: None, sandboxed=False)
    seconds, grown = time.monotonic() - start, _peak_mb() - peak
    by = {r.student: r for r in results}
    full = sum(fx.points(notebooks).values())
    assert by["alice"].total == full and by["bob"].total == full, (by["alice"], by["bob"])
    bounds = (
        "reading it needed more than 1 GiB: not graded",
        "reading it took more than 3 s",
        "reading it took more than 9 s",
    )
    assert by["diff24"].problem.startswith(bounds), by["diff24"]  # whichever bound it meets first
    assert by["tok5"].problem.startswith(bounds[1:]), by["tok5"]  # 3 s of CPU, or 3 times that of wall time
    rows = list(csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8")))
    assert sorted(r["student"] for r in rows) == ["alice", "bob", "diff24", "tok5"]
    assert by["diff24"].problem in (tmp_path / "out" / "report.md").read_text(encoding="utf-8").replace("\\", "")
    assert seconds < 120, seconds  # 194 s for the diff alone in the grader's process
    assert grown < 400, f"the grader's own peak memory grew by {grown:.0f} MB"  # 2.9 GB in the grader's process


def test_the_reader_is_bounded_on_its_own(tmp_path):
    """``reading.prepare`` itself: an honest file read in a child gives the plan and the source's findings; the
    child's memory bound holds (a 24 MB diff) and its time bound too (a 1 s limit on the 5 MB cell)."""
    notebooks = fx.build_course(tmp_path)
    from tools.teaching.grader import matching

    course = matching.load_course(notebooks)
    expected = cli.assignment(course, "01")
    for name, nb in (("alice", fx.filled(notebooks)), ("diff24", diffed(notebooks)), ("tok5", tokenized(notebooks))):
        nbformat.write(nb, str(tmp_path / f"{name}.ipynb"))
    honest = reading.prepare(tmp_path / "alice.ipynb", tmp_path, course, expected)
    assert honest.problem == "" and honest.key == ("en", "01") and honest.plan.grading
    # every cell compiles: one finding per exercise, for "no cell ran nothing"
    assert set(honest.reading.findings) == {(k, "en") for k in fx.points(notebooks)}
    assert all(f is None for f in honest.reading.findings.values())  # nothing in the source decides
    big = reading.prepare(tmp_path / "diff24.ipynb", tmp_path, course, expected)
    assert big.problem == "reading it needed more than 1 GiB: not graded"
    slow = reading.prepare(tmp_path / "tok5.ipynb", tmp_path, course, expected, seconds=1)
    assert slow.problem.startswith(("reading it took more than 1 s", "reading it took more than 3 s")), slow.problem
    wrong = reading.prepare(tmp_path / "alice.ipynb", tmp_path, course, cli.assignment(course, "02"))
    assert wrong.problem.startswith("wrong notebook: this is 01_demo.ipynb") and wrong.key == ("en", "01")


def test_nbgrader_path_a_file_too_big_to_read_is_that_students_row(tmp_path):
    pytest.importorskip("nbgrader", reason=fx.NO_NBGRADER)
    import _nbgrader_course as nbc

    course, notebooks = nbc.release(tmp_path)
    for student, nb in (("alice", fx.filled(notebooks)), ("diff24", diffed(notebooks))):
        target = course / "submitted" / student / "ps1" / fx.NAME
        target.parent.mkdir(parents=True)
        nbformat.write(nb, str(target))
    peak = _peak_mb()
    by = {r.student: r for r in nbc.run(course, sandboxed=False, src=notebooks)}
    assert by["alice"].total == sum(fx.points(notebooks).values())
    assert by["diff24"].problem == "reading it needed more than 1 GiB: not graded"
    assert nbc.scores(course, "alice")[fx.NAME.removesuffix(".ipynb")] == by["alice"].total
    assert _peak_mb() - peak < 400


def _with_typos(notebooks, count: int):
    """The honest notebook with ``count`` cells that do not compile added before the first solution cell, and a
    typo in the first solution itself."""
    nb = fx.filled(notebooks, causal_mask="def causal_mask(n:\n    pass\n")
    at = nb.cells.index(fx.solution_cells(nb)[0])
    for i in range(count):
        nb.cells.insert(at, nbformat.v4.new_code_cell(f"x{i} = (\n"))
    return nb


@pytest.mark.parametrize("added", [0, 6])
def test_cells_that_do_not_compile_are_left_out_of_the_plan(tmp_path, added):
    """The child leaves every learner cell that does not compile out of the notebook the kernel runs (a comment in
    its place), however many: the typo in the first solution costs that exercise only, the added ones nothing, and
    the notes name each; the findings sent back are those of reading the plan that runs."""
    from tools.teaching.grader import matching, source_checks

    notebooks = fx.build_course(tmp_path)
    course = matching.load_course(notebooks)
    nbformat.write(_with_typos(notebooks, added), str(tmp_path / "gus.ipynb"))
    prepared = reading.read_submission(tmp_path / "gus.ipynb", tmp_path, course, cli.assignment(course, "01"))
    plan, decided = prepared.plan, prepared.reading
    left_out = [i for i in plan.learner if plan.nb.cells[i].source.startswith("# llm-lab grader:")]
    assert len(left_out) == added + 1
    assert sum("was not run" in n for n in plan.notes) == added + 1
    again = source_checks.runnable(plan.nb.cells, plan.learner)  # the plan as it runs: nothing left to leave out
    assert again.skipped == {}
    first, second = (ex.key for ex in course[("en", "01")].exercises)
    mine = decided.verdict(first, "", plan.grading[first], "en")
    assert mine is not None and mine.hint == "does_not_compile"
    assert decided.verdict(second, "", plan.grading[second], "en") is None
    control = fx.filled(notebooks)  # the honest notebook: nothing left out
    nbformat.write(control, str(tmp_path / "alice.ipynb"))
    honest = reading.read_submission(tmp_path / "alice.ipynb", tmp_path, course, cli.assignment(course, "01"))
    assert not any(c.source.startswith("# llm-lab grader:") for c in honest.plan.nb.cells)


def test_a_cell_that_killed_the_kernel_is_left_out_when_read_again(tmp_path):
    """``crashed`` (``cli._run``, after the code killed a kernel): the learner cell it names is left out of the plan
    read again, its own exercise decided with the reason, the others not; the notes name it. A course cell cannot
    be named, and without ``crashed`` the same file runs every cell (the control)."""
    from tools.teaching.grader import matching

    notebooks = fx.build_course(tmp_path)
    course = matching.load_course(notebooks)
    nbformat.write(fx.filled(notebooks, causal_mask=fx.RIGHT_THEN_EXIT), str(tmp_path / "bea.ipynb"))
    args = (tmp_path / "bea.ipynb", tmp_path, course, cli.assignment(course, "01"))
    first, second = (ex.key for ex in course[("en", "01")].exercises)
    control = reading.read_submission(*args)
    cell = control.plan.solutions[first][0]
    assert "os._exit" in control.plan.nb.cells[cell].source and control.reading.findings[(first, "en")] is None
    again = reading.read_submission(*args, crashed={cell: "the kernel died (a test)"})
    assert again.plan.nb.cells[cell].source == "# llm-lab grader: this cell of yours was not run (crashed)"
    mine = again.reading.findings[(first, "en")]
    assert (mine.status, mine.hint) == ("error", "crashed") and "the kernel died (a test)" in mine.message, mine
    assert again.reading.findings[(second, "en")] is None
    assert any("stopped the kernel" in n and "import os" in n for n in again.plan.notes), again.plan.notes
    course_cell = next(i for i in range(len(again.plan.nb.cells)) if i not in again.plan.learner)
    with pytest.raises(ValueError, match="not a learner cell"):
        reading.read_submission(*args, crashed={course_cell: "x"})
