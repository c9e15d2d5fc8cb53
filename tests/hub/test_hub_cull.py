"""Idle servers are stopped by jupyterhub-idle-culler, run by the local hub as a service (tools/teaching/hub/).

A hub of its own (the culler's timeout set short for the test: 30 s, checked every 5 s, activity reported every
5 s), two learners who log in with their passwords and start their servers: ``lt-idle`` runs one cell that holds
about 200 MiB in its kernel and then does nothing; ``lt-busy`` runs a cell every 3 s. The idle server is stopped
by the culler (its log says so) no sooner than the timeout after its last use and within a bounded time after;
afterwards no process of that user is left, its cgroup is gone and the PSS it held is back (0 MiB); the busy
server is still up, past twice the timeout.
"""

from __future__ import annotations

import asyncio
import json
import pwd
import time
import uuid

import _course_fixture as fx
import pytest
from _hub_client import HUB_DIR, api, clear_hub_dir, free_port, remove_leftover_users
from _load import Client, decode, execute_request, processes_of, pss_by_uid, run_async

from tools.teaching.hub import hub as hubmod
from tools.teaching.hub.limits import UserGroup

TEACHER, IDLE, BUSY = "lt-cteacher", "lt-idle", "lt-busy"
CULL = {"timeout": 30, "every": 5, "activity_interval": 5}
HOLD = "import numpy as np\nheld = np.ones(25 * 2**20)  # 200 MiB, every page written\nprint(held.nbytes >> 20)"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    notebooks = fx.build_course(tmp_path_factory.mktemp("cull-course"))
    clear_hub_dir(grader_tools=False)
    h = hubmod.Hub(HUB_DIR, free_port(), TEACHER, [IDLE, BUSY], notebook="01", instructor_dir=notebooks, cull=CULL)
    remove_leftover_users(h)
    h.setup()
    h.start()
    try:
        yield h
    finally:
        h.remove_users_and_state()


async def run_cell(c: Client, kernel: str, code: str, timeout: float = 300) -> str:
    ws = await c.channels(kernel)
    msg_id, text, reply, idle = uuid.uuid4().hex, "", None, False
    ws.write_message(json.dumps(execute_request(code, msg_id, uuid.uuid4().hex, c.user)))
    deadline = time.monotonic() + timeout
    try:
        while reply is None or not idle:  # the reply (shell) and the kernel idle again (iopub), in either order
            raw = await asyncio.wait_for(ws.read_message(), deadline - time.monotonic())
            msg = decode(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if kind == "stream":
                text += msg["content"]["text"]
            elif kind == "execute_reply":
                reply = msg["content"]
            elif kind == "status":
                idle = msg["content"]["execution_state"] == "idle"
    finally:
        ws.close()
    assert reply["status"] == "ok", reply
    return text


def test_an_idle_server_is_culled_and_its_memory_returned_an_active_one_kept(hub):
    passwords = hub.passwords
    idle, busy = Client(hub.url, IDLE), Client(hub.url, BUSY)

    async def start():
        kernels = {}
        for c in (idle, busy):
            await c.log_in(passwords[c.user])
            await c.spawn(300)
            kernels[c.user] = await c.session("scratch.ipynb")
        assert (await run_cell(idle, kernels[IDLE], HOLD)).strip() == "200"
        return kernels

    kernels = run_async(start()).result(600)
    last_used = time.monotonic()
    uid = {pwd.getpwnam(IDLE).pw_uid: IDLE}
    held = pss_by_uid(uid)[IDLE]
    assert held > 200, held  # the server and a kernel holding 200 MiB
    assert UserGroup(IDLE, create=False).exists()

    # the busy learner runs a cell every 3 s while the idle one does nothing; the culler stops the idle server
    limit = CULL["timeout"] + CULL["every"] + 2 * CULL["activity_interval"] + 60
    stop = {"now": False}

    async def keep_busy():
        n = 0
        while not stop["now"]:
            assert (await run_cell(busy, kernels[BUSY], "print(1 + 1)")).strip() == "2"
            n += 1
            await asyncio.sleep(3)
        return n

    handle = run_async(keep_busy())
    try:
        culled_after = None
        while time.monotonic() - last_used < limit:
            if not api(hub, "GET", f"/hub/api/users/{IDLE}")["servers"]:
                culled_after = time.monotonic() - last_used
                break
            time.sleep(1)
        assert culled_after is not None, f"{IDLE}'s server was not culled within {limit} s"
        assert culled_after >= CULL["timeout"], culled_after  # not before its timeout
        # the busy one is kept, past twice the timeout
        while time.monotonic() - last_used < 2 * CULL["timeout"] + 5:
            time.sleep(1)
        assert api(hub, "GET", f"/hub/api/users/{BUSY}")["servers"][""]["ready"]
    finally:
        stop["now"] = True
    assert handle.result(120) >= 10

    # the idle server's memory is back: no process of that user, no group, no PSS
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and processes_of(IDLE):
        time.sleep(1)
    assert processes_of(IDLE) == []
    assert not UserGroup(IDLE, create=False).exists()
    assert pss_by_uid(uid)[IDLE] == 0
    log = (hub.state / "jupyterhub.log").read_text(errors="replace")
    assert f"Culling server {IDLE}" in log and f"Culling server {BUSY}" not in log
    hubmod.log(f"culled after {culled_after:.0f} s idle (timeout {CULL['timeout']} s); {held:.0f} MiB PSS returned")
