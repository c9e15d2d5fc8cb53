"""Without bubblewrap (a fresh Debian machine), `make test` passes: the tests that grade in the sandbox are
skipped, and one line after the run says how to run them; under CI, which installs bubblewrap, they fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _sandbox_gate
import pytest

ROOT = Path(__file__).resolve().parents[2]
NO_BWRAP = (
    "import shutil, sys\nimport pytest\nfound = shutil.which\n"
    "shutil.which = lambda name, *a, **k: None if name == 'bwrap' else found(name, *a, **k)\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)


def test_without_bubblewrap_the_grading_tests_skip_with_one_line_saying_how_to_run_them():
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            NO_BWRAP,
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "tests/tools/teaching/grader/test_cli.py",
            "-k",
            "every_case or verdicts_name",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if _sandbox_gate.PREFIX + " test(s) skipped" in line]
    assert len(lines) == 1 and "apt-get install bubblewrap" in lines[0] and "make test" in lines[0], proc.stdout
    assert "passed" not in proc.stdout.splitlines()[-1] and "skipped" in proc.stdout.splitlines()[-1]


def test_under_ci_a_missing_sandbox_fails(monkeypatch):
    monkeypatch.setattr(_sandbox_gate, "missing", lambda: "sandboxed grading needs bubblewrap: install it")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI runs the sandboxed grading tests"):
        _sandbox_gate.require_sandbox()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="^sandboxed grading needs bubblewrap"):
        _sandbox_gate.require_sandbox()
