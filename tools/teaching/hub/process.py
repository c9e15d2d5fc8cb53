"""The local hub's JupyterHub process: started as a child of ``hub.py``, waited on until it answers, stopped by PID.

JupyterHub runs as root from ``.venv`` (the interpreter running ``hub.py``), with ``jupyterhub_config.py`` next to
this file and the settings ``hub.py`` wrote to ``STATE/settings.json``; its log is ``STATE/jupyterhub.log`` and its
PID ``STATE/jupyterhub.pid``; its proxy's log is ``STATE/proxy.log`` and each server's ``STATE/servers/<user>.log``
(jupyterhub_config.py). Stopping signals that PID only: JupyterHub then stops its proxy and every single-user
server it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def start(state: Path, proxy: Path, url: str, timeout: float = 120) -> subprocess.Popen:
    """Start JupyterHub in a session of its own and return it once ``url`` answers (stopped again if it does not
    within ``timeout`` seconds)."""
    import urllib.request

    if not proxy.exists():
        raise SystemExit(f"hub: {proxy} is missing: make hub installs configurable-http-proxy (npm)")
    env = {
        **os.environ,
        "LLM_LAB_HUB_SETTINGS": str(state / "settings.json"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    logf = (state / "jupyterhub.log").open("ab")
    proc = subprocess.Popen(
        [Path(sys.executable).parent / "jupyterhub", "-f", HERE / "jupyterhub_config.py"],
        cwd=state,
        env=env,
        stdout=logf,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    (state / "jupyterhub.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyterhub exited ({proc.returncode}); see {state / 'jupyterhub.log'}")
        try:
            with urllib.request.urlopen(f"{url}/hub/api/", timeout=5) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(1)
    stop(proc, state / "jupyterhub.pid")
    raise RuntimeError(f"jupyterhub did not answer on {url} within {timeout:.0f} s")


def stop(proc: subprocess.Popen | None, pidfile: Path, timeout: float = 60) -> None:
    """SIGTERM to JupyterHub (``proc``, or the PID in ``pidfile`` if it is still a jupyterhub), SIGKILL after
    ``timeout`` seconds; the PID file is removed."""
    if proc is not None and proc.poll() is not None:  # stopped already: its PID may be another process's now
        pidfile.unlink(missing_ok=True)
        return
    pid = proc.pid if proc else None
    if pid is None and pidfile.is_file():
        pid = int(pidfile.read_text())
    if pid is None:
        return
    try:  # a stale PID file may name a reused PID: signal it only if it is still our jupyterhub
        if proc is None and b"jupyterhub" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            pidfile.unlink(missing_ok=True)
            return
    except OSError:
        pidfile.unlink(missing_ok=True)
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pidfile.unlink(missing_ok=True)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                break
        elif not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.5)
    else:
        os.kill(pid, signal.SIGKILL)
        if proc is not None:
            proc.wait(10)
    pidfile.unlink(missing_ok=True)
