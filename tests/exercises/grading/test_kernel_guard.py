"""The graded kernel's guard (llm_lab/exercises/grading/kernel_guard.py): an audit hook that refuses, in every
thread, the operations that run code the grader never read. Installed in a child python of the test's own (it
cannot be removed): each operation is tried before the guard (the control: it runs) and after (refused), and the
honest operations a notebook needs still run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _guard_probe import HONEST, HOSTILE, PROBE, assert_route_held

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guard")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", HOSTILE)
def test_each_route_runs_before_the_guard_and_is_refused_after(probe, name):
    assert_route_held(probe, name)


def test_a_string_evaluated_by_a_readable_module_is_refused(probe):
    assert probe["before"]["type hints"] == "ran"
    assert "typing.py evaluates text that is not a type" in probe["after"]["type hints"]


def test_a_written_file_is_named_in_the_refusal(probe):
    assert "written_mod.py is a file the notebook wrote" in probe["after"]["written module"]
    assert "_json_copy.so is a file the notebook wrote" in probe["after"]["extension"]
    assert "written_mod.py, not from the installed files" in probe["after"]["spec from file"]


def test_what_an_honest_notebook_needs_still_runs(probe):
    assert probe["honest"] == dict.fromkeys(probe["honest"], "ran")
    assert set(probe["honest"]) == set(HONEST)


def test_installed_code_is_trusted_and_a_written_file_is_not(probe):
    assert probe["trusted"] == {"torch": True, "json": True, "llm_lab": True, "written": False}


def test_the_census_names_a_thread_the_notebook_started_while_it_runs(probe):
    assert probe["census_before"] == []  # no guard, no census
    assert probe["running"] == ["notebook-worker"]
    assert probe["ended"] == []


def test_a_running_notebook_thread_fails_the_check_and_is_named(monkeypatch):
    """The kernel's census reaches the verdict (through the wire, as in grading): a right answer fails while a
    thread the notebook started runs; the control, no thread, passes."""
    import torch
    from _remote_loopback import loopback

    from llm_lab import exercises as ex
    from llm_lab.exercises.grading import answering, kernel_guard

    answering.capture("causal_mask", lambda: lambda n: torch.ones(n, n, dtype=torch.bool).triu(1))
    results = {}
    for running in ([], ["notebook-worker"]):
        monkeypatch.setattr(kernel_guard, "notebook_threads", lambda running=running: list(running))
        link = loopback()
        link.exercise = "causal_mask"
        results[bool(running)] = ex.grade("causal_mask", link.lookup("causal_mask"), timeout=60)
    assert results[False].passed
    assert not results[True].passed and results[True].hint == "thread_running"
    assert "notebook-worker" in results[True].message
