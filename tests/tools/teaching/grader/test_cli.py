"""make grade (tools/teaching/grader): a synthetic class of submissions, each a careless or bad case, asserted totals.

The class hands in the small fixture course's 01_demo (two autograded exercises, 2 points each, see
tests/_course_fixture.py); grading it once takes about a minute on 2 cores, shared by every test below.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import importlib.util
import json
import os
import types
from pathlib import Path

import _course_fixture as fx
import nbformat
import pytest

from tools.authoring import learner
from tools.teaching.grader import cli, judging, matching, submissions

LOOP_FN = "def mask_and_renormalize(attn_weights):\n    while True:\n        pass\n"
PATCH_EVALUATE = (
    "import llm_lab.exercises as ex\n\n"
    "ex.evaluate = lambda name, obj: ex.CheckResult(name, 'passed', 'passed', 'ok')\n"
    "ex.grade = lambda name, obj, **kw: ex.CheckResult(name, 'pass', 'passed', 'ok')\n\n"
    "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"
)
SHADOWED = (
    "import sys\n\nopen('/tmp/statistics.py', 'w').write(\n"
    "    'import torch\\ndef mask(n):\\n    return torch.ones(n, n, dtype=torch.bool).triu(1)\\n'\n)\n"
    "sys.path.insert(0, '/tmp')\nimport statistics\n\n\ndef causal_mask(num_tokens):\n"
    "    return statistics.mask(num_tokens)\n"
)
EXIT_WHEN_CALLED = "import os\n\n\ndef causal_mask(num_tokens):\n    os._exit(3)\n"
REDEFINE_CHECK = (
    "def causal_mask(num_tokens):\n    return None\n\n\n"
    "def check_causal_mask(fn):\n    print('✅ causal_mask: correct')\n"
)


def class_of(notebooks: Path, subs: Path) -> dict[str, tuple[int, str]]:
    """Write the synthetic class into ``subs``; return {student: (expected total, what the case is)}.
    ``put``'s ``scores`` names the exercises that should score: "both", "mask" (causal_mask), "renorm" or "none"."""
    subs.mkdir()
    expect = {}
    pts = fx.points(notebooks)
    totals = {"both": sum(pts.values()), "mask": pts["causal_mask"], "renorm": pts["mask_and_renormalize"], "none": 0}

    def put(student, nb, scores, case, folder=False):
        target = subs / student / fx.NAME if folder else subs / f"{student}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
        expect[student] = (totals[scores], case)

    put("alice", fx.filled(notebooks), "both", "correct")
    put("bob", fx.student_copy(notebooks), "none", "handed in untouched")
    put(
        "carol",
        fx.filled(
            notebooks,
            causal_mask="def causal_mask(n):\n    import torch\n    return torch.ones(n, n, dtype=torch.bool).triu()\n",
        ),
        "renorm",
        "diagonal masked",
    )
    # a cell that changes the checkers is not run: it costs its own exercise, the right second one still scores
    put("dan", fx.filled(notebooks, causal_mask=REDEFINE_CHECK), "renorm", "redefines check_causal_mask")
    put("erin", fx.filled(notebooks, mask_and_renormalize=PATCH_EVALUATE), "mask", "patches llm_lab.exercises")
    put("fay", fx.filled(notebooks, causal_mask="from llm_lab import causal_mask\n"), "renorm", "llm_lab's own")
    # a cell that does not compile ran nothing: it costs its own exercise only
    put("gus", fx.filled(notebooks, causal_mask="def causal_mask(n:\n    pass\n"), "renorm", "syntax error")
    put("hal", fx.filled(notebooks, causal_mask="import sys\n\nsys.exit()\n"), "renorm", "sys.exit()")
    put("ivy", fx.filled(notebooks, causal_mask="while True:\n    pass\n"), "renorm", "endless loop in the cell")
    put("jon", fx.filled(notebooks, mask_and_renormalize=LOOP_FN), "mask", "endless loop in the function")
    huge = fx.filled(notebooks)
    fx.solution_cells(huge)[0].source += "\nprint('x' * 3_000_000)\n"
    put("kim", huge, "both", "huge output")
    writer = fx.filled(notebooks)
    fx.solution_cells(writer)[0].source += "\nopen('stolen.txt', 'w').write('x')\nopen('../escape.txt', 'w')\n"
    put("lee", writer, "both", "writes files")
    deleted = fx.filled(notebooks)
    deleted.cells = [c for c in deleted.cells if c is not fx.solution_cells(deleted)[1] and c.cell_type != "markdown"]
    put("max", deleted, "mask", "deleted cells")
    reordered = fx.filled(notebooks)
    cells = reordered.cells
    a, b = (cells.index(c) for c in fx.solution_cells(reordered))
    cells[a], cells[b] = cells[b], cells[a]
    cells.insert(1, cells.pop(len(cells) - 1))
    put("ned", reordered, "both", "reordered cells")
    put("ola", fx.filled(notebooks, lang="zh"), "both", "the other language's copy")
    put("pat", fx.filled(notebooks, name="02_other.ipynb"), "none", "the wrong notebook")
    (subs / "quinn.txt").write_text("my answers are in the email")
    expect["quinn"] = (0, "not a notebook")
    (subs / "rita.ipynb").write_text('{"cells": [ {"cell_type": "code", ')
    expect["rita"] = (0, "invalid JSON")
    (subs / "sam.ipynb").write_bytes(bytes(range(256)) * 4)
    expect["sam"] = (0, "binary garbage")
    put("tess", fx.filled(notebooks), "both", "folder per student", folder=True)
    (subs / "uma").mkdir()
    (subs / "uma" / "report.pdf").write_bytes(b"%PDF-1.4")
    expect["uma"] = (0, "folder without a notebook")
    colab = fx.filled(notebooks)  # an editor that drops cell ids and nbgrader metadata: matched by title/defs
    colab.nbformat_minor = 4
    for c in colab.cells:
        c.pop("id", None)
        c.metadata.pop("nbgrader", None)
    put("vic", colab, "both", "cell ids lost")
    put("wes", fx.filled(notebooks, mask_and_renormalize="import os\n\nos._exit(1)\n"), "mask", "kills the kernel")
    # a kernel the code kills costs what depends on that code: graded again without the cell, or past the check
    put("bea", fx.filled(notebooks, causal_mask=fx.RIGHT_THEN_EXIT), "renorm", "kills the kernel first")
    put("cyd", fx.filled(notebooks, causal_mask=EXIT_WHEN_CALLED), "renorm", "a function that kills the kernel")
    # a module the notebook wrote under a readable module's name: the kernel imported the real one before any
    # learner cell ran, so `import statistics` finds it in sys.modules (the sixth red team's file won)
    put("gil", fx.filled(notebooks, causal_mask=SHADOWED), "renorm", "a written module under statistics' name")
    helper = fx.filled(notebooks, causal_mask="def causal_mask(n):\n    return helper(n)\n")
    helper.cells.insert(
        helper.cells.index(fx.solution_cells(helper)[0]),
        nbformat.v4.new_code_cell("def helper(n):\n    return torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)\n"),
    )
    put("xan", helper, "both", "adds a helper cell")
    # a learner version (what Colab opens): handed in as it comes, and with its folded solutions pasted in
    instructor = nbformat.read(str(notebooks / "en" / fx.NAME), as_version=4)
    own = learner.learner_version(instructor, "en")
    put("yan", own, "none", "learner version untouched")
    pasted = learner.learner_version(instructor, "en")
    by_id = {c.id: c.source for c in instructor.cells}
    for c in pasted.cells:
        if "solution" in c.metadata.get("tags", []):
            c.source = learner.shown_solution(by_id[c.id])
    put("zed", pasted, "both", "learner version, folded solutions pasted in")
    older = fx.filled(notebooks)  # made from a release whose notebook had two cells fewer: every id is off by two
    for c in older.cells:
        c.metadata.pop("nbgrader", None)
        lang, nn, i = c.id.split("-")
        c.id = f"{lang}-{nn}-{int(i) - 2:03d}"
    put("ari", older, "both", "an older release's cell ids")
    return expect


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sandbox_required):
    root = tmp_path_factory.mktemp("course")
    notebooks = fx.build_course(root)
    subs = root / "submissions"
    expect = class_of(notebooks, subs)
    before = digest(subs)
    out = root / "out"
    results = cli.grade(subs, out, "01", cell_timeout=10, src=notebooks, echo=lambda *a: None, lang="en")
    return {
        "expect": expect,
        "results": {r.student: r for r in results},
        "out": out,
        "subs": subs,
        "before": before,
        "root": root,
    }


def test_every_case_gets_its_total(graded):
    assert len(graded["expect"]) >= 20
    got = {s: r.total for s, r in graded["results"].items()}
    want = {s: t for s, (t, _) in graded["expect"].items()}
    wrong = {
        f"{s} ({graded['expect'][s][1]})": (
            got.get(s),
            want[s],
            [(v.key, v.status, v.message[:200]) for v in graded["results"][s].verdicts]
            if s in graded["results"]
            else None,
        )
        for s in want
        if got.get(s) != want[s]
    }
    assert not wrong, f"(got, want) per student: {wrong}"


def verdict(graded, student, key):
    return next(v for v in graded["results"][student].verdicts if v.key == key)


@pytest.mark.parametrize(
    "student,key,status",
    [
        ("bob", "causal_mask", "todo"),
        ("carol", "causal_mask", "fail"),
        ("dan", "causal_mask", "fail"),  # check_causal_mask's redefinition left out, his own mask runs
        ("fay", "causal_mask", "reference"),
        ("ivy", "causal_mask", "timeout"),
        ("jon", "mask_and_renormalize", "timeout"),
        ("max", "mask_and_renormalize", "missing"),
        ("alice", "mask_and_renormalize", "pass"),
    ],
)
def test_verdicts_name_what_happened(graded, student, key, status):
    assert verdict(graded, student, key).status == status


def test_a_kernel_the_code_kills_costs_only_what_depends_on_that_code(graded):
    bea, cyd = graded["results"]["bea"], graded["results"]["cyd"]
    # bea's solution cell killed the kernel: run again without it, her exercise 0 with the reason, the next one graded
    mine = verdict(graded, "bea", "causal_mask")
    assert (mine.status, mine.mistake, mine.points) == ("error", "crashed", 0), mine
    assert "stopped the kernel" in mine.message and "kernel died" in mine.message, mine
    assert any("import os" in n and "ran the notebook again without it" in n for n in bea.notes), bea.notes
    # cyd's function killed the kernel when the check called it: that check errs, the notebook runs again for the rest
    mine = verdict(graded, "cyd", "causal_mask")
    assert (mine.status, mine.mistake, mine.points) == ("error", "crashed", 0), mine
    assert "stopped the kernel when the check called it" in mine.message and "kernel died" in mine.message, mine
    assert any("while `causal_mask` was checked" in n for n in cyd.notes), cyd.notes
    for student in ("bea", "cyd"):
        assert verdict(graded, student, "mask_and_renormalize").status == "pass"
    # wes killed it in the last exercise's cell: that exercise is named crashed, the first keeps its pass
    assert verdict(graded, "wes", "causal_mask").status == "pass"
    assert verdict(graded, "wes", "mask_and_renormalize").mistake == "crashed"


def test_a_patched_checker_gives_zero_and_is_named(graded):
    v = verdict(graded, "erin", "mask_and_renormalize")  # the patch is left out: her stub is what runs
    notes = " ".join(graded["results"]["erin"].notes)
    assert v.points == 0 and "changes the checkers" in notes
    assert "evaluate" in notes and "grade" in notes


def test_bad_submissions_get_a_clear_line(graded):
    report = (graded["out"] / "report.md").read_text(encoding="utf-8")
    for student, words in [
        ("quinn", "not a notebook"),
        ("rita", "invalid JSON"),
        ("sam", "not a text file"),
        ("uma", "no .ipynb notebook"),
        ("pat", "wrong notebook"),
        ("lee", "wrote files"),
        ("kim", "output cut"),
        ("ned", "reordered"),
        ("ola", "the zh copy"),
        ("wes", "kernel died"),
        ("gus", "SyntaxError"),
        ("hal", "SystemExit"),
    ]:
        line = next((ln for ln in report.splitlines() if f"**{student}**" in ln), "")
        if student in ("gus", "hal"):  # a failing solution cell is named in that exercise's hint
            line = verdict(graded, student, "causal_mask").message
        assert words in line, f"{student}: {words!r} not in {line!r}"


def test_lost_cell_ids_are_matched_by_text_and_definitions(graded):
    vic = graded["results"]["vic"]
    assert vic.notebook == fx.NAME and vic.lang == "en" and not vic.notes


def test_nothing_in_submissions_is_modified(graded):
    assert digest(graded["subs"]) == graded["before"]
    assert not (graded["root"] / "escape.txt").exists() and not (graded["subs"] / "escape.txt").exists()


def test_gradebook_feedback_and_report(graded):
    out = graded["out"]
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert list(rows[0]) == ["student", "notebook", "causal_mask", "mask_and_renormalize", "total", "max"]
    assert {r["student"] for r in rows} == set(graded["expect"])
    alice = next(r for r in rows if r["student"] == "alice")
    pts = fx.points(graded["root"] / "notebooks")
    full = sum(pts.values())
    assert [int(alice[k]) for k in ("causal_mask", "mask_and_renormalize", "total", "max")] == [
        pts["causal_mask"],
        pts["mask_and_renormalize"],
        full,
        full,
    ]
    assert sum(int(r["total"]) for r in rows) == sum(t for t, _ in graded["expect"].values())
    feedback = sorted(p.stem for p in (out / "feedback").glob("*.html"))
    assert feedback == sorted(graded["expect"])
    zh = (out / "feedback" / "ola.html").read_text(encoding="utf-8")
    assert 'lang="zh-CN"' in zh and "通过" in zh
    carol = (out / "feedback" / "carol.html").read_text(encoding="utf-8")
    assert "diagonal" in carol and f"{pts['mask_and_renormalize']} / {full}" in carol
    report = (out / "report.md").read_text(encoding="utf-8")
    row = next(ln for ln in report.splitlines() if ln.startswith("| `causal_mask`"))
    graded_n = sum(1 for r in graded["results"].values() if not r.problem)
    passed = sum(
        1 for r in graded["results"].values() if not r.problem and verdict(graded, r.student, "causal_mask").points
    )
    assert f"{passed} / {graded_n}" in row and "`diagonal_masked` (1)" in row


def test_cli_reports_a_missing_folder(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope")]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_load_names_the_problem(tmp_path):
    p = tmp_path / "x.ipynb"
    p.write_text(json.dumps({"cells": [{"cell_type": "code"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(ValueError, match="not a valid Jupyter notebook"):
        submissions.load(p)
    p.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a Jupyter notebook"):
        submissions.load(p)


def test_grading_cells_are_derived_from_tags_not_a_list():
    """A new checker cell is graded without touching the grader: exercises come from the tags."""
    spec = importlib.util.find_spec("tools.course")
    assert spec is not None
    from tools import course as _course

    nb = copy.deepcopy(nbformat.v4.new_notebook())
    nb.cells = [
        nbformat.v4.new_code_cell("def brand_new(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("check_something_new(brand_new)"),
    ]
    nb.cells[0].metadata["tags"], nb.cells[1].metadata["tags"] = ["solution"], ["checker"]
    [ex] = _course.exercises(nb.cells)
    assert (ex.key, ex.exercise, ex.checker, ex.solutions) == ("brand_new", "something_new", 1, (0,))
    code = matching.capture_code(ex)
    compile(code, "<capture cell>", "exec")
    assert "_llm_lab_kernel.capture('brand_new', lambda: brand_new)" in code


def test_the_check_budget_stretches_with_the_load_and_no_further_than_four_times(monkeypatch):
    cores = os.cpu_count() or 1
    for load, factor in ((0.0, 1.0), (cores * 2.5, 2.5), (cores * 9.0, 4.0)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert judging.exercise_budget(30.0) == pytest.approx(30.0 * factor)
        assert judging.exercise_budget(30.0, limit=40.0) == pytest.approx(min(40.0, 30.0 * factor))


@pytest.mark.parametrize(
    "died_in,left_out",
    [(3, 3), (5, 3), ("check", None), (0, None)],
    ids=["a learner cell", "a course cell running learner code", "a check's call", "a course cell before any"],
)
def test_where_a_kernel_died_decides_what_the_next_one_leaves_out(monkeypatch, died_in, left_out):
    """``cli._run`` without kernels: the first kernel dies in a learner cell (it is left out), in a course cell
    after one (the learner cell before it, whose code the course cell ran, is left out), in a check's call (the
    notebook runs again, nothing left out) or in a course cell before any learner cell (no new kernel)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1") for _ in range(8)])
    plan = matching.ExecutionPlan(nb, {"a": 2, "b": 6}, {"a": [1], "b": [3]}, [], learner=[1, 3])
    runs, asked = [], []

    def one_kernel(course_nb, plan, settings, source, done, notes):
        runs.append(dict(done))
        first = len(runs) == 1
        verdicts = [judging.Verdict(k, "error" if first and k == "b" else "pass") for k in ("a", "b")]
        return verdicts, ({"b"} if first else set()), ("the kernel died" if first else ""), (died_in if first else None)

    def reread(crashed):
        asked.append(dict(crashed))
        return types.SimpleNamespace(problem="", plan=plan, reading=None)

    monkeypatch.setattr(cli, "_one_kernel", one_kernel)
    submission = submissions.Submission("s", Path("s.ipynb"))
    settings = cli.KernelSettings(10, 1000, False, 600.0)
    cli._run(submission, None, plan, settings, None, reread)
    again = died_in == "check" or left_out is not None
    assert len(runs) == (2 if again else 1) and (runs[-1] == {} or list(runs[-1]) == ["a"]), runs
    assert asked == ([{left_out: asked[0][left_out]}] if left_out is not None else []), asked
    assert [v.status for v in submission.verdicts] == (["pass", "pass"] if again else ["pass", "error"])
