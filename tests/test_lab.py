"""`make lab` serves the notebooks: start it on a free port, list notebooks/en through the server's API."""

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_the_notebooks(tmp_path):
    port = free_port()
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["make", "lab", f"PORT={port}"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        listing = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and listing is None:
            time.sleep(1)
            assert proc.poll() is None, log.read_text()[-2000:]
            token = re.search(r"token=([0-9a-f]+)", log.read_text())
            if not token:
                continue
            try:
                url = f"http://127.0.0.1:{port}/api/contents/en?token={token[1]}"
                with urllib.request.urlopen(url, timeout=5) as response:
                    listing = json.load(response)
            except OSError:
                continue
        assert listing is not None, log.read_text()[-2000:]
        served = sorted(item["name"] for item in listing["content"] if item["name"].endswith(".ipynb"))
        assert served == sorted(p.name for p in (ROOT / "notebooks" / "en").glob("*.ipynb"))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
