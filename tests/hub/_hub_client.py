"""What tests/hub/test_hub.py drives the hub with: the users and assignments, the hub's REST API (a service token),
each student's own server (nbgrader's assignment-list handlers, the contents API), a login in Chromium, and what is
measured into build/hub/sizing.json."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import _course_fixture as fx
import nbformat

from tools.teaching.hub import hub as hubmod

ROOT = Path(__file__).resolve().parents[2]

TEACHER, ALICE, BOB, MALLORY = "lt-teacher", "lt-alice", "lt-bob", "lt-mallory"
STUDENTS = (ALICE, BOB, MALLORY)
EN, ZH = "ps1-en", "ps1-zh"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-dev-shm-usage"]
# Outside the checkout: the hub's users run its venv and read its config and exchange, and a checkout may be
# private (mode 0700, as `mktemp -d` and many homes are). The venv is kept between runs (rebuilt when the
# requirements or the wheel change, its stamp says).
HUB_DIR = Path(os.environ.get("LLM_LAB_HUB_TEST_DIR", "/srv/llm-lab-hub-test"))
GRADER = HUB_DIR / "grader"  # the checkout's tools/, where the instructor can read them (their own clone)
SIZING = ROOT / "build" / "hub" / "sizing.json"


def free_port() -> int:
    """A base port with PORT, PORT+1 and PORT+2 free on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 60000:
            continue
        try:
            for p in (port + 1, port + 2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise RuntimeError("no three free ports on 127.0.0.1")


def user_exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


def clear_hub_dir(grader_tools: bool = True) -> None:
    """Remove the hub's state, exchange, config and grader folders a run before left; with ``grader_tools``, copy
    the checkout's tools/ into GRADER, readable by every user."""
    for sub in ("state", "exchange", "config", "grader"):
        shutil.rmtree(HUB_DIR / sub, ignore_errors=True)
    if grader_tools:
        shutil.copytree(ROOT / "tools", GRADER / "tools", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for p in [HUB_DIR, GRADER, *GRADER.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


LOG_TAIL = 4 * 2**20  # bytes kept of each log: its end


def keep_logs(h, dest: Path, tail: int = LOG_TAIL) -> list[str]:
    """The end (``tail`` bytes) of the hub's, the proxy's and each server's log (``h.logs()``: jupyterhub.log,
    proxy.log, servers/<user>.log) copied into ``dest``, and of the kernel's log (``dmesg``: OOM kills) where it is
    readable; before the hub's state is removed. The names kept."""
    logs = {}
    for path in h.logs():
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - tail))
            logs[str(path.relative_to(h.state))] = (path.stat().st_size, f.read())
    dmesg = subprocess.run(["dmesg", "-T"], capture_output=True, timeout=60) if shutil.which("dmesg") else None
    if dmesg is not None and dmesg.returncode == 0:
        logs["dmesg.log"] = (len(dmesg.stdout), dmesg.stdout[-tail:])
    for name, (size, text) in logs.items():
        out = dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        cut = f"[the first {size - len(text)} bytes left out]\n".encode() if size > len(text) else b""
        out.write_bytes(cut + text)
    return sorted(logs)


def grade_as(h, teacher: str, assignment: str, timeout: float):
    """Grade ``assignment`` as the instructor ``teacher`` does: tools/teaching/grader/nbgrader_course.py from their
    own clone (GRADER), against the course's instructor notebooks; the finished process."""
    return h.as_user(
        teacher,
        h.venv / "bin" / "python",
        "-m",
        "tools.teaching.grader.nbgrader_course",
        h.course,
        assignment,
        "--src",
        h.course / "instructor-notebooks",
        cwd=GRADER,
        timeout=timeout,
    )


GRADEBOOK_PROBE = (
    "import json, sys\nfrom nbgrader.api import Gradebook\nout = []\n"
    "with Gradebook('sqlite:///' + sys.argv[1], 'llm-lab') as gb:\n"
    "    for a in sys.argv[2:]:\n"
    "        for s in gb.assignment_submissions(a):\n"
    "            out.append([s.student.id, a, s.code_score, s.max_code_score])\n"
    "print(json.dumps(out))\n"
)


def gradebook_scores(h, teacher: str, *assignments: str) -> list[list]:
    """``[student, assignment, code score, max code score]`` of each submission of ``assignments`` in the course's
    gradebook, read as the instructor ``teacher``."""
    out = h.as_user(
        teacher, h.venv / "bin" / "python", "-c", GRADEBOOK_PROBE, h.course / "gradebook.db", *assignments, cwd=h.course
    ).stdout
    return json.loads(out)


def remove_leftover_users(h) -> None:
    """Delete the hub's users that an interrupted run left behind."""
    for user in h.users:
        if user_exists(user):
            hubmod.run(["userdel", "--remove", user], check=False)


# ---- hub REST API (a service token with admin:servers and access:servers) ---------------------------------
def api(h, method: str, path: str, data: dict | None = None, timeout: float = 120):
    body = json.dumps(data).encode() if data is not None else None
    req = urllib.request.Request(
        f"{h.url}{path}",
        data=body,
        method=method,
        headers={"Authorization": f"token {h.service_token}", **({"Content-Type": "application/json"} if body else {})},
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
        return json.loads(text) if text.strip() else None


def start_server(h, user: str, timeout: float = 120) -> None:
    try:
        api(h, "POST", f"/hub/api/users/{user}/server")
    except urllib.error.HTTPError as exc:
        if exc.code != 400:  # 400: already running
            raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        model = api(h, "GET", f"/hub/api/users/{user}")
        server = model.get("servers", {}).get("", {})
        if server.get("ready"):
            return
        time.sleep(1)
    raise AssertionError(f"{user}'s server did not start within {timeout} s")


def nbgrader_action(h, user: str, action: str, assignment: str) -> dict:
    """nbgrader's assignment-list handler in ``user``'s own server: fetch, submit or fetch_feedback."""
    return api(h, "POST", f"/user/{user}/assignments/{action}?course_id=llm-lab&assignment_id={assignment}")


def put_notebook(h, user: str, path: str, nb) -> None:
    api(
        h,
        "PUT",
        f"/user/{user}/api/contents/{path}",
        {"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))},
    )


def get_notebook(h, user: str, path: str):
    return nbformat.from_dict(api(h, "GET", f"/user/{user}/api/contents/{path}?content=1")["content"])


def solve(nb, notebooks: Path, lang: str, **replace: str):
    """The fetched notebook with the instructor's solutions (or ``replace``'s) in its solution cells."""
    sols = fx.solutions(notebooks, lang)
    for cell in fx.solution_cells(nb):
        cell.source = sols[cell.id]
        for key, source in replace.items():
            if f"def {key}(" in sols[cell.id]:
                cell.source = source
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = "它自己的值不属于未来。" if lang == "zh" else "Its own value is not in the future."
    return nb


# ---- a browser -------------------------------------------------------------------------------------------
def login(browser, h, user: str):
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    ctx.set_default_timeout(60_000)
    page = ctx.new_page()
    page.goto(f"{h.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", h.passwords[user])
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/lab**", timeout=120_000)
    page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
    return ctx, page


def open_assignment_list(page):
    page.get_by_text("Nbgrader", exact=True).first.click()
    page.get_by_text("Assignment List", exact=True).first.click()
    page.wait_for_selector("#nbgrader-assignment-list", timeout=60_000)


def kernels_idle(h, user: str, timeout: float, want: int = 1) -> bool:
    """True once ``user``'s server has ``want`` kernels or more, all idle three polls in a row."""
    deadline, idle = time.monotonic() + timeout, 0
    while time.monotonic() < deadline and idle < 3:
        kernels = api(h, "GET", f"/user/{user}/api/kernels")
        ok = len(kernels) >= want and all(k["execution_state"] == "idle" for k in kernels)
        idle = idle + 1 if ok else 0
        time.sleep(2)
    return idle >= 3


def run_all(page, h, user: str, path: str, kernels: int, timeout: float = 420, start: float = 180) -> None:
    """Open ``path`` in JupyterLab, wait (``start`` s) for its kernel, Run All Cells, wait until every kernel is
    idle again."""
    page.goto(f"{h.url}/user/{user}/lab/tree/{path}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=max(120, start) * 1000)
    assert kernels_idle(h, user, start, want=kernels), f"{path}: no idle kernel within {start} s"
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    time.sleep(5)
    if not kernels_idle(h, user, timeout, want=kernels):
        screenshot(page, f"{user}-run-all-timeout")
        raise AssertionError(f"{path} did not finish within {timeout} s")


def screenshot(page, name: str) -> None:
    out = ROOT / "build" / "hub" / "screens"
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def record(key: str, value) -> None:
    """Timings and memory, into build/hub/sizing.json as they are measured (docs/hub-sizing.md quotes them)."""
    SIZING.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(SIZING.read_text()) if SIZING.is_file() else {}
    data[key] = value
    SIZING.write_text(json.dumps(data, indent=2))


def memory_of(user: str) -> dict:
    """RSS and PSS (shared pages split among their users) summed over every process of ``user``."""
    uid = pwd.getpwnam(user).pw_uid
    rss = pss = n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
            n += 1
        except OSError:
            continue
    return {"processes": n, "rss_mib": round(rss / 1024, 1), "pss_mib": round(pss / 1024, 1)}
