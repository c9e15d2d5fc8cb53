import os

import pytest

from llm_lab.example import book_inputs

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def inputs():
    return book_inputs()


@pytest.fixture
def english():
    """The checkers' messages in English for the test, whatever an earlier test set."""
    from llm_lab import exercises

    exercises.set_language("en")
    yield
    exercises.set_language("en")


def pytest_terminal_summary(terminalreporter):
    """One line when the sandboxed grading tests were skipped (a machine without bubblewrap): how to run them."""
    import _sandbox_gate

    reasons = [
        str(r.longrepr[2]) if isinstance(r.longrepr, tuple) else str(r.longrepr)
        for r in terminalreporter.stats.get("skipped", [])
    ]
    line = _sandbox_gate.summary_line(reasons)
    if line:
        terminalreporter.write_line(line, yellow=True, bold=True)


@pytest.fixture(scope="session")
def sandbox_required():
    """For tests that grade in the bubblewrap sandbox: skipped with how to run them where it cannot run (a
    machine without bubblewrap), failed under CI (tests/_sandbox_gate.py)."""
    import _sandbox_gate

    _sandbox_gate.require_sandbox()
