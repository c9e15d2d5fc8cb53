"""`make lab` serves the notebooks to a learner without nbgrader's UI; `make lab-instructor` has it.

Each test starts the real make target on a free port and asks the server through its API and its page
config (what JupyterLab's front end loads). `make test-browser` checks the same in Chromium: the Nbgrader
menu, the "Create Assignment" sidebar and the "Validate" button.
"""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NBGRADER_LAB = "@jupyter/nbgrader"
NBGRADER_SERVER = [
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    """(status, body) of a GET; HTTP errors are answers too."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


@contextlib.contextmanager
def running(target: str, tmp_path: Path):
    """Start `make <target>` on a free port; yield (base url, token); stop its process group afterwards."""
    port, token = free_port(), os.urandom(8).hex()
    log = tmp_path / f"{target}.log"
    env = dict(os.environ, JUPYTER_TOKEN=token, JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    env.pop("JUPYTER_CONFIG_PATH", None)
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["make", target, f"PORT={port}"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            try:
                if get(f"{base}/api/status?token={token}")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        yield base, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the group started above: make and its jupyter
        proc.wait(timeout=30)


def page_config(base: str, token: str) -> dict:
    status, html = get(f"{base}/lab?token={token}")
    assert status == 200
    match = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, html[:500]
    return json.loads(match[1])


def test_make_lab_serves_the_notebooks_without_nbgrader(tmp_path):
    with running("lab", tmp_path) as (base, token):
        status, body = get(f"{base}/api/contents/en?token={token}")
        assert status == 200
        served = sorted(item["name"] for item in json.loads(body)["content"] if item["name"].endswith(".ipynb"))
        assert served == sorted(p.name for p in (ROOT / "notebooks" / "en").glob("*.ipynb"))
        # the learner versions: exercises to write, and the instructor versions' folder is not listed
        nb = json.loads(get(f"{base}/api/contents/en/{served[1]}?token={token}")[1])["content"]
        assert any("YOUR CODE HERE" in "".join(c["source"]) for c in nb["cells"])
        status, body = get(f"{base}/api/contents?token={token}")
        assert "instructor" not in {item["name"] for item in json.loads(body)["content"]}
        # the front end skips nbgrader's lab extension: no Nbgrader menu, Create Assignment sidebar, Validate
        config = page_config(base, token)
        assert NBGRADER_LAB in config["disabledExtensions"]
        assert "@jupyter-widgets/jupyterlab-manager" not in config["disabledExtensions"]  # explorers still work
        # and the server does not load its extensions
        assert get(f"{base}/formgrader?token={token}")[0] == 404
        assert get(f"{base}/assignments?token={token}")[0] == 404


def test_make_lab_instructor_has_nbgrader(tmp_path):
    pytest.importorskip("nbgrader", reason="make lab-instructor needs make instructor-setup (make unit runs it)")

    with running("lab-instructor", tmp_path) as (base, token):
        config = page_config(base, token)
        assert NBGRADER_LAB not in config["disabledExtensions"]
        assert NBGRADER_LAB in {ext["name"] for ext in config["federated_extensions"]}
        assert get(f"{base}/formgrader?token={token}")[0] == 200


def test_learner_config_names_every_nbgrader_extension():
    """The learner config switches off exactly what nbgrader enables, so a new nbgrader part shows up here."""
    learner = ROOT / "jupyter-config" / "learner"
    config = json.loads((learner / "jupyter_server_config.json").read_text())
    assert config["ServerApp"]["jpserver_extensions"] == dict.fromkeys(NBGRADER_SERVER, False)
    # the default hidden patterns kept, plus the instructor versions' folder
    from jupyter_server.services.contents.filemanager import FileContentsManager

    assert config["ContentsManager"]["hide_globs"] == [*FileContentsManager().hide_globs, "instructor"]
    lab = json.loads((learner / "labconfig" / "page_config.json").read_text())
    assert lab == {"disabledExtensions": {NBGRADER_LAB: True}}
    # what nbgrader itself enables when installed (pip puts it in the venv's etc/jupyter)
    import sys

    enabled = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    if enabled.exists():
        assert set(json.loads(enabled.read_text())["ServerApp"]["jpserver_extensions"]) == set(NBGRADER_SERVER)
