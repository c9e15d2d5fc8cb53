"""What tests/hub/test_hub_load.py drives a class with: each learner's own hub API token (asked for with their
password, through the hub's authenticator), their server started and waited for, their notebooks run cell by cell
through their own kernel (the Jupyter kernel protocol over the server's websocket, as JupyterLab does), saved
through the contents API; a hostile learner's three kernels; memory sampled while all this runs.

All of it async (tornado), so one process drives thirty learners at once; every address is 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import statistics
import threading
import time
import uuid
from pathlib import Path

import nbformat
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

AsyncHTTPClient.configure(None, max_clients=200)

# The wrong answer some learners hand in: the mask right for Tq <= Tk (the exercise's shapes; the lesson calls it on
# the last two queries after the checker), the columns renormalized (the checker names it, the grader gives 0)
WRONG_RENORMALIZE = """import torch


def mask_and_renormalize(attn_weights):
    q_len, k_len = attn_weights.shape[-2:]
    masked = attn_weights * torch.tril(torch.ones(q_len, k_len), diagonal=k_len - q_len)
    return masked / masked.sum(dim=-2, keepdim=True)
"""
# The hostile learner's submission: the checker redefined to print a pass (graded 0: the grader reruns its own)
CHEAT_RENORMALIZE = """def mask_and_renormalize(attn_weights):
    raise NotImplementedError()


def check_renormalize(fn):
    print('✅ mask_and_renormalize: correct')
"""
# The hostile learner's three kernels: far past the memory share, forks without end, every core spun.
HOG = """import numpy as np
chunks = []
while True:
    chunks.append(np.ones(2**25))  # 256 MiB, every page written
"""
FORK_BOMB = """import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
SPIN = """import os
for _ in range(2 * os.cpu_count()):
    if os.fork() == 0:
        while True:
            pass
while True:
    pass
"""


def pct(values, q: float):
    """The q-th percentile (nearest rank) of ``values``; None when there are none."""
    v = sorted(values)
    if not v:
        return None
    k = max(0, min(len(v) - 1, int(round(q / 100 * len(v) + 0.5)) - 1))
    return round(v[k], 1)


def summary(values) -> dict:
    v = list(values)
    return {
        "n": len(v),
        "p50": round(statistics.median(v), 1) if v else None,
        "p95": pct(v, 95),
        "max": round(max(v), 1) if v else None,
    }


class Client:
    """One learner's view of the hub: their own token, their own server."""

    def __init__(self, url: str, user: str, token: str | None = None):
        self.url, self.user, self.token = url, user, token
        self.http = AsyncHTTPClient()

    async def call(self, method: str, path: str, body=None, timeout: float = 300, raw: bool = False):
        req = HTTPRequest(
            f"{self.url}{path}",
            method=method,
            body=None if body is None else json.dumps(body),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"}
            if self.token
            else {"Content-Type": "application/json"},
            request_timeout=timeout,
            follow_redirects=False,
            allow_nonstandard_methods=True,
        )
        r = await self.http.fetch(req, raise_error=not raw)
        if raw:
            return r
        text = r.body.decode() if r.body else ""
        return json.loads(text) if text.strip() else None

    async def log_in(self, password: str) -> float:
        """A token of the learner's own, from their name and password (the hub's authenticator decides)."""
        t0 = time.monotonic()
        out = await self.call(
            "POST",
            f"/hub/api/users/{self.user}/tokens",
            {"auth": {"username": self.user, "password": password}, "note": "load test", "expires_in": 7200},
        )
        self.token = out["token"]
        return time.monotonic() - t0

    async def spawn(self, timeout: float) -> float:
        """Start the learner's server; seconds until its own API answers (a usable server)."""
        t0 = time.monotonic()
        try:
            await self.call("POST", f"/hub/api/users/{self.user}/server")
        except HTTPClientError as exc:
            if exc.code != 400:  # 400: already running
                raise
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            r = await self.call("GET", f"/user/{self.user}/api/status", raw=True, timeout=30)
            if r.code == 200 and r.body.strip().startswith(b"{") and b"started" in r.body:
                return time.monotonic() - t0
            await asyncio.sleep(0.5)
        raise AssertionError(f"{self.user}'s server was not usable within {timeout} s")

    async def nbgrader(self, action: str, assignment: str) -> dict:
        return await self.call(
            "POST", f"/user/{self.user}/assignments/{action}?course_id=llm-lab&assignment_id={assignment}"
        )

    async def get_notebook(self, path: str):
        return nbformat.from_dict(
            (await self.call("GET", f"/user/{self.user}/api/contents/{path}?content=1"))["content"]
        )

    async def put_notebook(self, path: str, nb) -> None:
        body = {"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))}
        await self.call("PUT", f"/user/{self.user}/api/contents/{path}", body)

    async def session(self, path: str) -> str:
        """A kernel for ``path`` (a session, as JupyterLab opens one); its id."""
        out = await self.call(
            "POST",
            f"/user/{self.user}/api/sessions",
            {"path": path, "name": os.path.basename(path), "type": "notebook", "kernel": {"name": "python3"}},
        )
        return out["kernel"]["id"]

    async def channels(self, kernel: str, session: str | None = None):
        """The kernel's websocket. ``session``: the client's session id; a connection that reopens with the same
        id gets the messages the server buffered while it was closed (jupyter_server; JupyterLab reconnects so)."""
        ws_url = self.url.replace("http://", "ws://")
        req = HTTPRequest(
            f"{ws_url}/user/{self.user}/api/kernels/{kernel}/channels?session_id={session or uuid.uuid4().hex}",
            headers={"Authorization": f"token {self.token}"},
            # the server answers once the kernel has answered (or after its 60 s kernel_info timeout), and a
            # kernel that starts while the whole class starts theirs takes minutes
            connect_timeout=900,
            request_timeout=900,
        )
        return await websocket_connect(req, max_message_size=256 * 2**20)

    async def run_notebook(self, path: str, cell_timeout: float = 900) -> dict:
        """Every code cell of ``path`` in order, in a kernel of the learner's own (stop at the first error); the
        outputs saved into the notebook. Returns seconds (from the kernel's start to the last reply), the
        error if any, the number of cells run, the outputs' text, and the websocket's reconnections: a closed
        websocket is opened again with the same session id, as JupyterLab does, at most ``RECONNECTS`` times, and
        the messages the server buffered meanwhile arrive on the new one (each close's code and reason kept, its
        time of day, how long that connection had been open and how long it had been silent)."""
        nb = await self.get_notebook(path)
        t0 = time.monotonic()
        kernel = await self.session(path)
        session, error, ran, closes = uuid.uuid4().hex, None, 0, []
        ws = await self.channels(kernel, session)
        opened = heard = time.monotonic()  # this websocket's opening, its last message
        try:
            for cell in nb.cells:
                if cell.cell_type != "code":
                    continue
                cell.outputs, msg_id = [], uuid.uuid4().hex
                ws.write_message(json.dumps(execute_request(cell.source, msg_id, session, self.user)))
                reply, idle = None, False
                deadline = time.monotonic() + cell_timeout
                while reply is None or not idle:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise AssertionError(f"{self.user}: {path}: a cell ran past {cell_timeout} s")
                    raw = await asyncio.wait_for(ws.read_message(), left)
                    if raw is None:
                        when, now = time.strftime("%H:%M:%S UTC", time.gmtime()), time.monotonic()
                        closes.append(
                            f"{ws.close_code} {ws.close_reason or ''}, {when}, open {now - opened:.0f} s, "
                            f"silent {now - heard:.0f} s"
                        )
                        if len(closes) > RECONNECTS:
                            raise AssertionError(f"{self.user}: {path}: the kernel's websocket closed: {closes}")
                        await asyncio.sleep(min(2 ** len(closes), 10))
                        ws = await self.channels(kernel, session)
                        opened = heard = time.monotonic()
                        continue
                    heard, msg = time.monotonic(), decode(raw)
                    if msg.get("parent_header", {}).get("msg_id") != msg_id:
                        continue
                    kind = msg["header"]["msg_type"]
                    if msg["channel"] == "shell" and kind == "execute_reply":
                        reply = msg["content"]
                    elif msg["channel"] == "iopub":
                        if kind == "status":
                            idle = msg["content"]["execution_state"] == "idle"
                        elif kind in ("stream", "display_data", "execute_result", "error"):
                            cell.outputs.append(nbformat.v4.output_from_msg(msg))
                ran += 1
                if reply["status"] != "ok":
                    error = f"{reply.get('ename')}: {reply.get('evalue')}"
                    break
            seconds = time.monotonic() - t0
        finally:
            ws.close()
        await self.put_notebook(path, nb)
        text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
        return {"seconds": seconds, "error": error, "cells": ran, "kernel": kernel, "text": text, "closes": closes}

    async def execute(self, kernel: str, code: str) -> None:
        """Send ``code`` to ``kernel`` and return without waiting for it (the hostile cells never finish)."""
        ws = await self.channels(kernel)
        ws.write_message(json.dumps(execute_request(code, uuid.uuid4().hex, uuid.uuid4().hex, self.user)))
        await asyncio.sleep(1)
        ws.close()


RECONNECTS = 5  # a websocket closed more often than this in one notebook run fails the run


def reconnects(results: dict) -> dict:
    """The kernel websockets that closed mid-run and were opened again (as JupyterLab does): "user notebook" ->
    each close's code and reason, from ``run_notebook``'s results per learner."""
    return {f"{u} {k}": r[k]["closes"] for u, r in results.items() for k in r if r[k]["closes"]}


def decode(raw: str | bytes) -> dict:
    """A message from the kernel's websocket: JSON text, or jupyter_server's binary frame (a message with buffers:
    a count and offsets as big-endian uint32, the JSON first)."""
    if isinstance(raw, str):
        return json.loads(raw)
    count = int.from_bytes(raw[:4], "big")
    offsets = [int.from_bytes(raw[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(count)]
    return json.loads(raw[offsets[0] : offsets[1] if count > 1 else None].decode())


def execute_request(code: str, msg_id: str, session: str, user: str) -> dict:
    return {
        "header": {
            "msg_id": msg_id,
            "msg_type": "execute_request",
            "session": session,
            "username": user,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        },
        "channel": "shell",
        "buffers": [],
    }


# ---- memory --------------------------------------------------------------------------------------------------
def pss_by_uid(uids: dict[int, str], pids: dict[str, list[int]] | None = None) -> dict[str, float]:
    """PSS (MiB) summed over the processes of each uid in ``uids`` (name by uid), and of each list in ``pids``."""
    out = {name: 0.0 for name in uids.values()}
    for name in pids or {}:
        out[name] = 0.0
    want = {pid: name for name, ps in (pids or {}).items() for pid in ps}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            name = want.get(int(pid)) or uids.get(os.stat(f"/proc/{pid}").st_uid)
            if name is None:
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    out[name] += int(line.split()[1]) / 1024
                    break
        except OSError:
            continue
    return out


class MemorySampler(threading.Thread):
    """Every ``every`` seconds, the PSS of each learner (all their processes) and of the hub's own processes, and
    the machine's load average (1 minute); keeps each one's peak."""

    def __init__(self, users: list[str], hub_pids, every: float = 3.0, watch: str | None = None):
        super().__init__(daemon=True)
        self.uids = {pwd.getpwnam(u).pw_uid: u for u in users}
        self.hub_pids, self.every, self.watch = hub_pids, every, watch
        self.peak: dict[str, float] = {}
        self.watched: dict[str, float] = {}  # the largest value each counter of ``watch``'s cgroup reached
        self.samples = 0
        self.load_peak = 0.0
        self.stopping = threading.Event()

    def run(self):
        from tools.teaching.hub.limits import UserGroup

        while not self.stopping.is_set():
            now = pss_by_uid(self.uids, {"hub": self.hub_pids()})
            for name, mib in now.items():
                self.peak[name] = max(self.peak.get(name, 0.0), mib)
            if self.watch:  # read while it lasts: the group goes when its server stops (or the OOM killer ends it)
                group = UserGroup(self.watch, create=False)
                if group.exists():
                    for key, value in group.stats().items():
                        if isinstance(value, int | float):
                            self.watched[key] = max(self.watched.get(key, 0), value)
            self.load_peak = max(self.load_peak, os.getloadavg()[0])
            self.samples += 1
            self.stopping.wait(self.every)

    def stop(self) -> dict[str, float]:
        self.stopping.set()
        self.join(30)
        return {k: round(v, 1) for k, v in self.peak.items()}


def run_async(coro):
    """``coro`` on an event loop of its own, in a thread (the browser keeps the main thread); returns a handle
    whose ``result()`` waits for it."""
    box: dict = {}

    def target():
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()

    class Handle:
        def result(self, timeout=None):
            t.join(timeout)
            if t.is_alive():
                raise AssertionError(f"still running after {timeout} s")
            if "error" in box:
                raise box["error"]
            return box["value"]

    return Handle()


def processes_of(user: str) -> list[int]:
    uid = pwd.getpwnam(user).pw_uid
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                out.append(int(pid))
        except OSError:
            pass
    return out


def hub_pids(h) -> list[int]:
    """The hub's own processes: JupyterHub, its proxy, its services (the idle culler): its children that run as
    root (the learners' servers are its children too, as their users)."""
    pids = []
    if h.proc is not None and h.proc.poll() is None:
        pids.append(h.proc.pid)
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
                if parent == h.proc.pid and os.stat(f"/proc/{pid}").st_uid == 0:
                    pids.append(int(pid))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def stop_server(h, user: str) -> tuple[float, int, bool]:
    """Stop ``user``'s server through the hub; (seconds, processes of ``user`` left, whether its group is)."""
    from _hub_client import api as _api

    from tools.teaching.hub.limits import UserGroup

    t0 = time.monotonic()
    try:
        _api(h, "DELETE", f"/hub/api/users/{user}/server")
    except Exception:  # 202 with no body, or 400 when the server had already died: what is left shows below
        pass
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (processes_of(user) or UserGroup(user, create=False).exists()):
        time.sleep(1)
    return round(time.monotonic() - t0, 1), len(processes_of(user)), UserGroup(user, create=False).exists()
