"""tests/hub/ runs under `make test-hub` only: it creates Unix users, starts a JupyterHub and a browser.

`make unit` (pytest tests) collects this folder too; there test_hub.py's and test_hub_cull.py's tests are skipped
with that reason, and test_hub_load.py's unless `make test-hub-load` (LLM_LAB_TEST_HUB_LOAD=1) runs them (the
checks of the hub's files that need none of that, test_hub_dir.py and test_z2jh_config.py, are in
tests/tools/teaching/hub/ and run everywhere).
Under `make test-hub` (LLM_LAB_TEST_HUB=1) a test is skipped only where root, useradd or node is missing.
"""

import os
import shutil

import pytest


def hub_missing() -> str | None:
    if os.environ.get("LLM_LAB_TEST_HUB") != "1":
        return "the JupyterHub loop runs under `make test-hub` (it creates Unix users and starts a hub)"
    if os.geteuid() != 0:
        return "needs root: the hub creates real Unix users (useradd) and starts servers as them"
    for tool in ("useradd", "userdel", "runuser"):
        if shutil.which(tool) is None:
            return f"needs {tool} (Debian: passwd / util-linux)"
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "needs node and npm for configurable-http-proxy (Debian: apt-get install nodejs npm)"
    return None


HUB_TESTS = ("tests/hub/test_hub.py", "tests/hub/test_hub_cull.py")
LOAD_TEST = "tests/hub/test_hub_load.py"


def modules_split(paths: list[str]) -> list[str]:
    """The test modules whose tests are not all next to each other in the run order ``paths``. Each module here
    holds one hub (a module-scoped fixture) through its tests in order; a test of another module between two of
    them tears that hub down and starts a new one mid-semester (a plugin that parametrizes a fixture name, as
    pytest-playwright does ``browser``, makes pytest regroup tests by that parameter across modules)."""
    seen: list[str] = []
    for path in paths:
        if seen and seen[-1] == path:
            continue
        seen.append(path)
    return sorted({p for p in seen if seen.count(p) > 1})


def pytest_collection_modifyitems(config, items):
    split = modules_split([str(item.fspath) for item in items])
    if split:
        raise pytest.UsageError(f"tests/hub: the tests of {', '.join(split)} are not run one after another")
    reason = hub_missing()
    load = reason or (
        None
        if os.environ.get("LLM_LAB_TEST_HUB_LOAD") == "1"
        else "the class at once runs under `make test-hub-load` (N learners, minutes of every core)"
    )
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        if reason and path.endswith(HUB_TESTS):
            item.add_marker(pytest.mark.skip(reason=reason))
        elif load and path.endswith(LOAD_TEST):
            item.add_marker(pytest.mark.skip(reason=load))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test of a module that keeps its hub's logs (``LOGS``, test_hub_load.py) names their folder."""
    report = (yield).get_result()
    logs = getattr(item.module, "LOGS", None)
    if report.failed and logs is not None:
        report.sections.append(("hub logs", f"the hub's, the proxy's, each server's and the kernel's logs: {logs}"))


@pytest.fixture(scope="module")
def hub_browser():
    """Headless Chromium (playwright), one per test module. Not named ``browser``: pytest-playwright (installed
    for tests/e2e/) parametrizes that name, and pytest then regroups the tests of every module that uses it."""
    from _hub_client import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
