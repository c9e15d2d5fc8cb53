"""The tests that grade in the bubblewrap sandbox: run where it can run, skipped with one line saying how to run
them where it cannot (a fresh machine without bubblewrap), and failed under CI, which installs it (.ci/run)."""

from __future__ import annotations

import functools
import os

import pytest

from tools.teaching.grader import sandbox

PREFIX = "sandboxed grading"
HOW = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; `.ci/run` does it as root) and run "
    "`make test` again"
)


@functools.cache
def missing() -> str | None:
    return sandbox.available()


def require_sandbox() -> None:
    """Skip the calling test (or fixture) where the sandbox cannot run; under CI (``CI`` set) fail instead."""
    reason = missing()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the sandboxed grading tests, and here {reason}", pytrace=False)
    pytest.skip(reason if PREFIX in reason else f"{PREFIX}: {reason}")


def summary_line(reasons: list[str]) -> str | None:
    """The one line printed after the run when sandboxed tests were skipped."""
    n = sum(PREFIX in r for r in reasons)
    return f"{n} {PREFIX} test(s) skipped: the sandbox cannot run here; {HOW}" if n else None
