"""Each exercise's verdict, computed in the grader's own process.

For every exercise of a submission, in notebook order: the kernel runs the notebook up to that exercise's capture
cell; the submission's source decides first where it can (``source_checks``: a solution cell not run because it
tampered, could not be read or did not compile, llm_lab's own answer, a name the learner did not define), asking
the kernel nothing; otherwise llm_lab's checker (``llm_lab.exercises.grade``) runs here on a proxy of the learner's
object (``llm_lab.exercises.grading.proxies``), each of its calls answered by the kernel with data, its inputs drawn
from this run's secret seed. Nothing the kernel does can change a verdict, only what it says its own function returned.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

import llm_lab.exercises as exercises
from llm_lab.exercises.grading import proxies, wire
from tools.teaching.grader import kernel as _kernel
from tools.teaching.grader import source_checks

SECRET = secrets.randbits(62)  # this run's inputs for the checkers (llm_lab.exercises.grade's ``secret``)


CHECK_KILLED = {  # a check's call to the learner's object ended the kernel (``Kernel.died_in``)
    "en": "`{key}` stopped the kernel when the check called it ({why})",
    "zh": "检查调用 `{key}` 时，它使内核停止（{why}）",
}


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


def exercise_budget(base: float | None = None, limit: float | None = None) -> float:
    """Seconds one exercise's check may take: 3 x the checkers' own limit, stretched by the machine's load per
    core (at most 4x), so that a grading machine busy with a class (or with a test suite) does not time out a
    correct solution whose every call is a round trip to a slow kernel. An endless loop still ends in it.
    ``limit``: the whole submission's limit (``--max-seconds``, the kernel's ``max_seconds``): the budget is
    never above it, so a check never outlives the submission it is part of."""
    base = 3 * exercises.TIMEOUT if base is None else base
    try:
        per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        per_core = 1.0
    budget = base * min(4.0, max(1.0, per_core))
    return budget if limit is None else min(budget, limit)


def watching(exercise: str) -> dict:
    """What the kernel watches the calls of ``exercise`` for: its references and the callables it rules out."""
    record = exercises.REGISTRY[exercise]
    return {"references": list(record.references), "forbidden": [list(f) for f in record.forbidden]}


def judge(course_nb, plan, kernel: _kernel.Kernel, reading, done=None) -> tuple[list[Verdict], set[str]]:
    """Each exercise's verdict (``course_nb``: the ``matching.CourseNotebook``, ``plan``: its
    ``matching.ExecutionPlan``), computed HERE by llm_lab's checkers on the learner's object in the kernel, right
    after the notebook ran up to that exercise's checker cell (a later cell that kills the kernel costs only the
    exercises after it). ``reading``: what the source decides (``reading.prepare``, bounded), read after
    ``source_checks.runnable`` left out of ``plan`` every learner cell it could not vouch for. ``done``: verdicts
    already reached by an earlier kernel on this submission (``cli._run``, after a crash), kept, their checks not
    run again. Also returns the exercises lost: the kernel had died before their check began."""
    link = proxies.KernelLink(kernel.send)
    verdicts, lost = [], set()
    for ex in sorted(course_nb.exercises, key=lambda e: plan.grading[e.key]):
        kernel.run(until=plan.grading[ex.key] + 1)
        if done and ex.key in done:
            verdicts.append(done[ex.key])
            continue
        if kernel.died:
            lost.add(ex.key)
        points = int(course_nb.nb.cells[ex.checker].metadata["nbgrader"]["points"])
        verdict = Verdict(ex.key, "error", max_points=points)
        own = plan.solutions.get(ex.key, [])
        failed = [e for e in (_kernel.cell_error(plan.nb.cells[i]) for i in own) if e]
        decided = reading.verdict(ex.key, ex.exercise, plan.grading[ex.key], course_nb.lang, own)  # no kernel asked
        try:
            if decided is None:
                link.exercise, link.watching = ex.exercise, watching(ex.exercise)
                # the whole check's budget: the learner's time plus a round trip per call to a busy kernel;
                # the checkers' inputs drawn from this run's secret, not the public checkers' fixed seeds
                decided = exercises.grade(
                    ex.exercise,
                    link.lookup(ex.key),
                    lang=course_nb.lang,
                    timeout=exercise_budget(limit=kernel.max_seconds),
                    secret=SECRET,
                )
            verdict.status, verdict.mistake, verdict.message = decided.status, decided.hint, decided.message
        except NameError as exc:
            verdict.status, verdict.mistake, verdict.message = "missing", "missing", str(exc)
        except TimeoutError:
            verdict.status = verdict.mistake = "timeout"
        except (proxies.RemoteFailed, wire.WireError) as exc:
            verdict.status, verdict.mistake, verdict.message = "error", "error", kernel.died or str(exc)
        if kernel.died_in == kernel.slot and ex.key not in lost:  # this check's call ended the kernel
            verdict.status, verdict.mistake = "error", "crashed"
            verdict.message = CHECK_KILLED[course_nb.lang].format(key=ex.key, why=kernel.died)
        said = verdict.status in ("pass", "reference", "tampered") or verdict.mistake in source_checks.NOT_RUN
        if failed and not said:  # the learner's cell failed: say so
            verdict.message = f"your solution cell failed ({failed[0]}); " + (verdict.message or "")
            if failed[0] == "timeout":
                verdict.status = verdict.mistake = "timeout"
        verdict.points = points if verdict.status == "pass" else 0
        verdicts.append(verdict)
    order = [e.key for e in course_nb.exercises]
    return sorted(verdicts, key=lambda verdict: order.index(verdict.key)), lost
