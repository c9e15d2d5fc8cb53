"""make grade on a hostile class: every trick of tests/_hostile.py scores 0 for its wrong answer, the honest
students beside it are graded normally, and the grading machine is unchanged afterwards (no file written
outside a sandbox, package and course byte-identical, no process left, the loopback listener never reached,
the instructor's environment unseen). The grader would not run most of these cells at all (it leaves out what it
cannot vouch for: test_the_grader_would_leave_out_the_unreadable_tricks); here every cell runs
(``run_unvouched``), so what is tested is the sandbox on its own. Needs bubblewrap (`.ci/run` installs it); skipped
only where the sandbox cannot run, with the reason."""

from __future__ import annotations

import os
import resource

import _course_fixture as fx
import _hostile
import nbformat
import pytest

from tools.teaching.grader import cli, kernel

pytestmark = pytest.mark.usefixtures("sandbox_required")  # skipped with how to run it, failed under CI


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    notebooks, subs = fx.new_class(root)
    host = _hostile.host_for(root, notebooks, subs)
    host.listen()
    os.environ["LLM_LAB_TEST_SECRET"] = host.secret  # the grader's environment: no kernel may see it
    nbformat.write(
        fx.filled(
            notebooks,
            causal_mask="def causal_mask(n):\n    import torch\n    return torch.ones(n, n, dtype=torch.bool).triu()\n",
        ),
        str(subs / "carol.ipynb"),
    )
    attacks = _hostile.tricks(host)
    for student, code in attacks.items():
        nbformat.write(_hostile.notebook(fx, notebooks, student, code), str(subs / f"{student}.ipynb"))
    for name in _hostile.SPECIAL:  # files that are not notebooks: links to the key, a pipe, /dev/zero, ...
        _hostile.plant(host, subs / name, name)
    for name in _hostile.NAMES:  # names that would forge the reports
        nbformat.write(fx.filled(notebooks), str(subs / f"{name}.ipynb"))
    nbformat.write(fx.filled(notebooks), str(subs / f"{_hostile.TWINS[0]}.ipynb"))
    nbformat.write(fx.student_copy(notebooks), str(subs / f"{_hostile.TWINS[1]}.ipynb"))
    before = host.digest()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kernel.Kernel.GUARDED = False  # the sandbox on its own: the kernel's guard has its own tests (test_grade_guard)
    try:
        # every cell runs, those the grader would leave out too: the sandbox on its own
        results = fx.grade_class(root, notebooks, max_seconds=120, run_unvouched=True)
    finally:
        kernel.Kernel.GUARDED = True
        host.stop()
        os.environ.pop("LLM_LAB_TEST_SECRET", None)
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) * 1024  # bytes (Linux: ru_maxrss in KiB)
    return {
        "results": {r.student: r for r in results},
        "rows": results,
        "attacks": attacks,
        "host": host,
        "before": before,
        "points": fx.points(notebooks),
        "grew": grew,
        "out": root / "out",
    }


def test_the_grader_would_leave_out_the_unreadable_tricks(tmp_path):
    """Graded for real (not ``run_unvouched``), the tricks that import modules the grader does not read, patch
    what it trusts or start workers never run: a comment stands in their place in the plan the kernel gets."""
    from tools.teaching.grader import matching, reading

    notebooks = fx.build_course(tmp_path)
    course = matching.load_course(notebooks)
    host = _hostile.host_for(tmp_path, notebooks, tmp_path)
    left_out, ran = [], []
    for student, code in _hostile.tricks(host).items():
        nbformat.write(_hostile.notebook(fx, notebooks, student, code), str(tmp_path / f"{student}.ipynb"))
        prepared = reading.read_submission(
            tmp_path / f"{student}.ipynb", tmp_path, course, cli.assignment(course, "01")
        )
        first = prepared.plan.solutions["causal_mask"][0]
        (left_out if prepared.plan.nb.cells[first].source.startswith("# llm-lab grader:") else ran).append(student)
    assert {"print_patch", "input_transformer", "orphan", "network", "kill_parent"} <= set(left_out), ran
    assert len(left_out) >= 20, (len(left_out), ran)


def test_a_big_class_of_attacks(hostile):
    assert len(hostile["attacks"]) + len(_hostile.SPECIAL) + len(_hostile.NAMES) + 1 >= 50


def test_every_hostile_submission_scores_zero(hostile):
    scored = {
        s: (r.total, [(v.key, v.status, v.message[:120]) for v in r.verdicts])
        for s, r in hostile["results"].items()
        if s in hostile["attacks"] and r.total
    }
    assert not scored, scored
    problems = {s: r.problem for s, r in hostile["results"].items() if r.problem and s not in _hostile.SPECIAL}
    assert problems == {}  # each was graded (a verdict per exercise), not dropped


def test_files_that_are_not_notebooks_are_each_a_problem_row(hostile):
    assert _hostile.host_files_unread(hostile["rows"]) == {}
    assert (hostile["out"] / "grades.csv").is_file()


def test_the_graders_memory_is_bounded(hostile):
    assert hostile["grew"] < 1.5 * 2**30  # a meta layer rebuilt here was +2 GiB, 400 MB of comm messages +743 MiB
    for student in ("meta_linear", "comm_flood", "display_flood"):
        assert hostile["results"][student].total == 0 and not hostile["results"][student].problem


def test_names_and_messages_cannot_forge_the_reports(hostile):
    r, out, full = hostile["results"], hostile["out"], sum(hostile["points"].values())
    assert all(r[name].total == full for name in _hostile.NAMES)  # graded normally, whatever their names
    assert r[_hostile.TWINS[0]].total == full and r[_hostile.TWINS[1]].total == 0
    pages = [p.read_text(encoding="utf-8") for p in (out / "feedback").glob("*.html")]
    assert len(pages) == len(hostile["rows"])
    assert all("\u202e" not in p and "<img src" not in p for p in pages)
    csv_text = (out / "grades.csv").read_text(encoding="utf-8")
    assert "\n'=1+2," in csv_text and "\n=1+2," not in csv_text
    report = (out / "report.md").read_text(encoding="utf-8")
    rendered = _hostile.rendered_markdown(report)
    assert "\u202e" not in report and "<img" not in rendered and "<a " not in rendered
    assert any("onerror=alert(1)" in p for p in pages)  # the name is shown, as text (the report lists problems only)


def test_the_honest_students_beside_them_are_graded_normally(hostile):
    pts = hostile["points"]
    assert hostile["results"]["alice"].total == sum(pts.values())
    assert hostile["results"]["carol"].total == pts["mask_and_renormalize"]


def test_the_host_is_unchanged(hostile):
    host = hostile["host"]
    after = host.digest()
    changed = [f for f, sha in hostile["before"].items() if after.get(f) != sha]
    assert changed == [], "package or course files changed"
    assert [p for p in host.planted() if p.exists()] == []
    assert host.survivors() == []
    assert host.connections == []


def test_tampering_is_named(hostile):
    for student in ("input_transformer", "ast_transformer", "sys_modules"):
        v = next(v for v in hostile["results"][student].verdicts if v.key == "causal_mask")
        assert v.status == "tampered", (student, v)


@pytest.mark.parametrize("student", list(_hostile.STATUS))
def test_llm_labs_answer_by_any_route_and_a_replay_table_are_named(hostile, student):
    """The routes the source check once missed (the course's own import, an added cell, a worker thread, a magic
    line, __import__ and importlib bases, exec) and a table of the public answers: each named for what it is."""
    v = next(v for v in hostile["results"][student].verdicts if v.key == "causal_mask")
    assert (v.status, v.points) == (_hostile.STATUS[student], 0), v


def test_the_reference_through_a_transformer_is_not_credited(hostile):
    v = next(v for v in hostile["results"]["input_transformer"].verdicts if v.key == "causal_mask")
    assert v.points == 0 and "input_transformers" in v.message


def test_killing_and_flooding_cost_only_that_submission(hostile):
    r = hostile["results"]
    assert any("kernel died" in n for n in r["kill_everything"].notes), r["kill_everything"]
    assert any("output cut" in n for n in r["output_flood"].notes)
    assert all(v.status in ("fail", "todo") for v in r["big_alloc"].verdicts)  # MemoryError caught in its cell


def test_no_sandbox_mode_says_so_in_every_report(tmp_path):
    notebooks = fx.build_course(tmp_path)
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(fx.filled(notebooks), str(subs / "alice.ipynb"))
    [r] = cli.grade(subs, tmp_path / "out", "01", src=notebooks, echo=lambda *a: None, sandboxed=False)
    assert r.total == sum(fx.points(notebooks).values())
    assert any("WITHOUT the sandbox" in n for n in r.notes)
    assert "WITHOUT the sandbox" in (tmp_path / "out" / "feedback" / "alice.html").read_text(encoding="utf-8")
