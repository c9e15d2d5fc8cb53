"""JupyterLab servers for the browser tests, each in its own process group, and the lab page's basics.

A `Lab` is stopped through its own PID / process group (the server's shutdown API first, then SIGTERM, then
SIGKILL); the fixtures in test_e2e_notebooks.py and test_e2e_lab_ui.py stop theirs on teardown, which pytest
runs on failure and on Ctrl-C (and on SIGTERM, which conftest.py turns into Ctrl-C); any lab still running when
the interpreter exits is stopped by atexit.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from e2e_js import JS

ROOT = Path(__file__).resolve().parents[2]
LEARNER_CONFIG = ROOT / "jupyter-config" / "learner"
_RUNNING: list[Lab] = []


class LabError(AssertionError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


class Lab:
    """A JupyterLab server (started directly or through make) in a process group of its own."""

    def __init__(self, name: str, cmd: list[str], env: dict, log: Path, port: int, token: str):
        self.name, self.port, self.token, self.log = name, port, token, log
        self.base = f"http://127.0.0.1:{port}"
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        _RUNNING.append(self)

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LabError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                self.api("/api/status")
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.5)
        raise LabError(f"{self.name} did not answer within {timeout:.0f} s:\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)
        if self.proc.poll() is None:
            try:  # the clean way: the server stops its kernels, then exits
                self.api("/api/shutdown", method="POST")
                self.proc.wait(timeout=20)
            except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
                pass
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                return
            try:
                os.killpg(self.proc.pid, sig)  # the group created for it (make + jupyter + kernels)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass


@atexit.register
def _stop_running() -> None:
    for lab in list(_RUNNING):
        lab.stop()


def lab_env(tmp: Path, learner: bool, name: str) -> dict:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # the kernel must use the inline backend, as a learner's does
    env.pop("JUPYTER_CONFIG_PATH", None)
    if learner:
        env["JUPYTER_CONFIG_PATH"] = str(LEARNER_CONFIG)
    # a fresh lab: no saved workspace reopening tabs, no news or update pop-ups over the page
    settings = tmp / "settings"
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp / f"workspaces-{name}")  # each lab starts with no tab open
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    return env


def start_notebook_lab(tmp: Path, root_dir: Path) -> Lab:
    """`jupyter lab` on `root_dir` with the learner's configuration (what `make lab` uses)."""
    port, token = free_port(), os.urandom(12).hex()
    jupyter = Path(sys.executable).parent / "jupyter-lab"
    cmd = [
        str(jupyter),
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--expose-app-in-browser",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    lab = Lab(
        "jupyter lab (learner config)", cmd, lab_env(tmp, learner=True, name="notebooks"), tmp / "lab.log", port, token
    )
    try:
        lab.wait_ready()
    except BaseException:
        lab.stop()
        raise
    return lab


def start_make_lab(target: str, tmp: Path, notebook_dir: Path) -> Lab:
    """`make lab` or `make lab-instructor`: the target itself decides which configuration it uses."""
    port, token = free_port(), os.urandom(12).hex()
    env = lab_env(tmp, learner=False, name=target)
    env["JUPYTER_TOKEN"] = token
    cmd = ["make", "--no-print-directory", target, f"PORT={port}", f"NOTEBOOK_DIR={notebook_dir}"]
    lab = Lab(f"make {target}", cmd, env, tmp / f"{target}.log", port, token)
    try:
        lab.wait_ready(timeout=600)  # lab-instructor may first install nbgrader
    except BaseException:
        lab.stop()
        raise
    return lab


def load_lab(page, lab: Lab) -> None:
    """(Re)load the lab page with an empty workspace (?reset: no tab a failed test left open comes back)."""
    page.goto(f"{lab.base}/lab?reset&token={lab.token}", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=90_000)
    page.evaluate(JS["lab_ready"])


def close_notebook(page) -> None:
    """Close the open notebook and stop its kernel, so kernels never pile up."""
    page.evaluate(JS["lab_close"])


def wait_for(page, js: str, predicate, timeout: float, what: str, arg=None):
    """Evaluate `js` until `predicate` holds on its value; LabError with the last value after `timeout` s."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = page.evaluate(js, arg) if arg is not None else page.evaluate(js)
        if predicate(value):
            return value
        time.sleep(0.1)
    raise LabError(f"timed out after {timeout:.0f} s waiting for {what}; last state: {str(value)[:1500]}")


def scroll_to(page, locator) -> None:
    # twice: cells above may only get their real height once they come near the view (content-visibility)
    for _ in range(2):
        locator.evaluate("el => el.scrollIntoView({block: 'center'})")
        page.wait_for_timeout(300)


def failed(request) -> bool:
    """Whether the test of a function-scoped fixture's `request` failed, in its setup or its call (the reports
    conftest.py's pytest_runtest_makereport puts on the item)."""
    reports = [getattr(request.node, f"e2e_{when}", None) for when in ("setup", "call")]
    return any(report is not None and report.failed for report in reports)
