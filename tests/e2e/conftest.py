"""tests/e2e: the series in a real browser, on pytest-playwright and Debian's Chromium (no browser download).

    make test-browser    # test_e2e_notebooks.py + test_e2e_lab_ui.py, in .venv
    make test-site       # test_e2e_site.py, in .venv-site, after `make site`
    LLM_LAB_E2E=1 .venv/bin/python -m pytest tests/e2e/test_e2e_notebooks.py -k "01 and not instructor"
    LLM_LAB_E2E=1 .venv-site/bin/python -m pytest --confcutdir=tests/e2e tests/e2e/test_e2e_site.py

They run only with LLM_LAB_E2E=1 (what those targets set): in the plain unit run (`make unit`, `pytest tests`)
every test here is skipped with that reason. Each test carries the `e2e` marker (`-m "not e2e"` leaves them
out). --confcutdir=tests/e2e keeps tests/conftest.py (which imports llm_lab, hence torch) out of .venv-site.

Chromium is $CHROMIUM or /usr/bin/chromium, passed to pytest-playwright's launch as executable_path
(browser_type_launch_args); --browser-channel and `playwright install` are never used. Every context gets a
1366x768 window at device scale 1 (browser_context_args). SIGTERM is turned into Ctrl-C, so that pytest tears
the fixtures down (the labs and servers they started) when the run is killed.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # needed as root (CI containers); harmless otherwise
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1366, "height": 768}
SELECTED = os.environ.get("LLM_LAB_E2E") == "1"
SKIP_REASON = "browser checks: `make test-browser` / `make test-site` run them (LLM_LAB_E2E=1)"
SUMMARY = pytest.StashKey[list]()


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end check in headless Chromium (tests/e2e; LLM_LAB_E2E=1)")
    config.stash[SUMMARY] = []
    # pytest-playwright 0.10's stand-in for pytest-base-url (a plugin we do not need) defines a session fixture
    # as an instance method, which pytest 9 warns about on every run
    config.addinivalue_line("filterwarnings", "ignore:Session-scoped fixtures defined as instance methods")
    if SELECTED:
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def pytest_collection_modifyitems(config, items) -> None:
    mine = [item for item in items if HERE in Path(str(item.fspath)).resolve().parents]
    if mine and SELECTED and not config.pluginmanager.hasplugin("playwright"):
        raise pytest.UsageError("tests/e2e need pytest-playwright: pip install -r requirements-browser.txt")
    for item in mine:
        item.add_marker(pytest.mark.e2e)
        if not SELECTED:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report on the item (item.e2e_setup, item.e2e_call), for fixtures that act on a failure
    (e2e_lab.failed)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"e2e_{report.when}", report)


def pytest_terminal_summary(terminalreporter) -> None:
    lines = terminalreporter.config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("llm-lab browser checks")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def e2e_summary(pytestconfig) -> list[str]:
    """Lines printed in the terminal summary at the end of the run (timings, counts)."""
    return pytestconfig.stash[SUMMARY]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium fonts-noto-cjk "
            "fonts-noto-color-emoji; or set CHROMIUM=...)",
            pytrace=False,
        )
    headless = browser_type_launch_args.get("headless", True)
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": headless,
        "args": CHROMIUM_ARGS + (["--headless"] if headless else []),
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": VIEWPORT, "device_scale_factor": 1, "locale": "en-US"}


@pytest.fixture(scope="session")
def notebook_copies(tmp_path_factory) -> Path:
    """Copies of every notebook, learner (LANG/) and instructor (instructor/LANG/) versions, for the labs to
    open and run: notebooks/ itself is never touched."""
    copies = tmp_path_factory.mktemp("notebooks")
    for folder in ("en", "zh", "instructor/en", "instructor/zh"):
        (copies / folder).mkdir(parents=True)
        for path in sorted((ROOT / "notebooks" / folder).glob("*.ipynb")):
            shutil.copy2(path, copies / folder / path.name)
    return copies


@pytest.fixture(scope="session")
def browser_shots() -> Path:
    """build/browser/, emptied at the start of a run: the notebook and lab UI screenshots."""
    shots = ROOT / "build" / "browser"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    return shots
