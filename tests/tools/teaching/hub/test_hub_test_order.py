"""tests/hub/ keeps each module's tests together: every module there holds one hub through its tests in order
(CI failed when pytest-playwright's ``browser`` parametrization put a test_hub_load.py test between test_hub.py's
first and second test, tearing its hub and browser down mid-semester)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


def hub_conftest():
    spec = importlib.util.spec_from_file_location("hub_conftest", ROOT / "tests" / "hub" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_module_interrupted_by_another_is_named():
    split = hub_conftest().modules_split(["a.py", "load.py", "a.py", "a.py", "cull.py", "load.py"])
    assert split == ["a.py", "load.py"]


def test_modules_in_order_pass():
    assert hub_conftest().modules_split(["a.py", "a.py", "cull.py", "load.py", "load.py"]) == []


def test_the_hub_tests_are_collected_module_by_module():
    pytest.importorskip("pytest_playwright", reason="the regrouping needs pytest-playwright (make browser-setup)")
    env = {**os.environ, "LLM_LAB_TEST_HUB": "1", "LLM_LAB_TEST_HUB_LOAD": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/hub"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    files = [line.split("::")[0] for line in out.stdout.splitlines() if "::" in line]
    assert len(files) > 10 and hub_conftest().modules_split(files) == [], files
