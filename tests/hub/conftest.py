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


def pytest_collection_modifyitems(config, items):
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


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (playwright), one per test module."""
    from _hub_client import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
