"""A class at once on the local JupyterHub (``make test-hub-load``, N learners, default 30), one of them hostile.

The hub is tools/teaching/hub/hub.py's, as ``make hub`` runs it: real Unix users, the learners' venv and wheel,
nbgrader's exchange, each server in a cgroup of its user's own with the default limits (memory 2 GiB, one core,
512 processes: tools/teaching/hub/limits.py), the idle culler on. The course is notebooks 01 and 08, released as
``ps01-en`` and ``ps08-en``. In order:

1. **Log in and spawn, all at once.** Each learner asks the hub for a token with their password (the hub's
   authenticator decides) and starts their server; a few log in through the login page in headless Chromium
   instead. Time to a usable server: until the server's own API answers (in Chromium: JupyterLab's main area).
2. **Release and fetch**: the instructor releases both; each learner fetches in their own server (nbgrader's
   handlers, with their own token) and writes their answers through the contents API: most the reference
   solutions, some a wrong renormalization, some leave it undone; the learners who train also fetch 08.
3. **One learner alone**: the first trainer runs 01, then 08, top to bottom, with the class's servers up and idle.
4. **The class at once, one hostile learner among them**: the hostile learner hands in a notebook that redefines
   a checker, then opens three kernels: one allocates without end, one forks without end, one spins every core
   (and forks to spin more). Meanwhile every other learner runs 01 top to bottom through their own kernel (the
   kernel protocol over the server's websocket, as JupyterLab does), the trainers 08 after it, the browser
   learners *Run All* in JupyterLab. Passes when every one of them ran without an error and printed the
   checkers' verdicts their answers deserve; the hostile learner's group, and only it, shows an OOM kill and forks
   refused at its pids limit, and it used at most one core's worth of CPU; the hub still answers; stopping the
   hostile server leaves no process of its user.
5. **Submit, collect, grade**: every learner submits; the instructor collects and grades with
   tools/teaching/grader/nbgrader_course.py (bubblewrap sandbox, as the instructor); each score is what the
   answer deserves (3 of 3, 1 of 3, 1 of 3, 1 of 3 for the hostile one: its redefined checker's exercise
   scores 0; 4 of 4 for 08).

Measured into build/hub/load.json (docs/hub-sizing.md quotes it): time to a usable server, notebook run time at once
against alone, peak PSS per learner and the hub's own, CPU seconds per learner, grading time, the machine's load
average; one entry per N run. Every run keeps the end of the hub's, the proxy's, each server's and the kernel's logs
in build/hub/logs/<run>/ (``LOGS``, named in load.json and in every failure) before the hub's folder is cleared.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time

import _course_fixture as fx
import nbformat
import pytest
from _hub_client import (
    GRADER,
    HUB_DIR,
    ROOT,
    api,
    clear_hub_dir,
    free_port,
    grade_as,
    gradebook_scores,
    keep_logs,
    remove_leftover_users,
    run_all,
    screenshot,
)
from _load import (
    CHEAT_RENORMALIZE,
    FORK_BOMB,
    HOG,
    SPIN,
    WRONG_RENORMALIZE,
    Client,
    MemorySampler,
    hub_pids,
    reconnects,
    run_async,
    stop_server,
    summary,
)

from tools.teaching.hub import hub as hubmod
from tools.teaching.hub.limits import UserGroup

N = int(os.environ.get("LLM_LAB_HUB_LOAD_N", "30"))
if N < 3:
    raise ValueError(f"LLM_LAB_HUB_LOAD_N is the number of learners, 3 or more (a hostile one among them), not {N}")
TEACHER = "lt-teacher"
HOSTILE = "lt-hostile"
LEARNERS = [f"lt-l{i:02d}" for i in range(1, N)]  # N - 1 learners and the hostile one
BROWSER = LEARNERS[: 2 if N >= 5 else 1]
API_LEARNERS = [u for u in LEARNERS if u not in BROWSER]
TRAINERS = API_LEARNERS[: max(1, N // 15)]  # run 08 (it trains) after 01
NB01, NB08 = "01_causal_mask_by_hand.ipynb", "08_induction_heads.ipynb"
A01, A08 = "ps01-en", "ps08-en"
LOAD = ROOT / "build" / "hub" / "load.json"
LOGS = ROOT / "build" / "hub" / "logs" / time.strftime(f"%Y%m%d-%H%M%S-n{N}", time.gmtime())  # conftest names it
SPAWN_TIMEOUT = 600
RUN_TIMEOUT = 1800


def variant(user: str) -> str:
    """What a learner hands in for 01: the reference solutions, a wrong renormalization, or that one undone."""
    if user in BROWSER or user in TRAINERS:
        return "full"
    i = API_LEARNERS.index(user)
    return {3: "wrong", 5: "undone"}.get(i % 7, "full")


EXPECTED_01 = {"full": 3, "wrong": 1, "undone": 1}  # causal_mask 1 point, mask_and_renormalize 2
TICKS_01 = {"full": 2, "wrong": 1, "undone": 1}  # the checkers' ✅ in the outputs

STATE: dict = {"report": {}}


def record(key: str, value) -> None:
    """Into this run's entry of build/hub/load.json at once (a run that fails later keeps what it measured,
    marked ``"passed": false`` until the last test)."""
    STATE["report"][key] = value
    write_report(passed=False)


def write_report(passed: bool) -> dict:
    LOAD.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(LOAD.read_text()) if LOAD.is_file() else {}
    runs = data.setdefault("runs", {})
    runs[str(N)] = {
        **STATE["report"],
        "passed": passed,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {
            "cores": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1),
        },
        "limits": hubmod.DEFAULT_LIMITS,
        "browser_learners": len(BROWSER),
        "trainers_08": len(TRAINERS),
    }
    held = [int(n) for n, r in runs.items() if r.get("passed")]
    data["largest_n_held"] = max(held) if held else None
    LOAD.write_text(json.dumps(data, indent=2))
    return data


@pytest.fixture(scope="module")
def hub():
    clear_hub_dir()
    h = hubmod.Hub(HUB_DIR, free_port(), TEACHER, [*LEARNERS, HOSTILE], notebook="01,08", start_timeout=SPAWN_TIMEOUT)
    remove_leftover_users(h)
    record("logs", str(LOGS.relative_to(ROOT)))
    record("load_avg_1min_at_start", round(os.getloadavg()[0], 1))
    t0 = time.monotonic()
    h.setup()
    record("setup_s", round(time.monotonic() - t0, 1))
    h.start()
    sampler = MemorySampler([*LEARNERS, TEACHER], lambda: hub_pids(h), watch=HOSTILE)
    sampler.start()
    STATE["sampler"] = sampler
    try:
        yield h
    finally:
        sampler.stop()
        h.stop()  # the servers stopped too: every log complete
        try:
            keep_logs(h, LOGS)
        finally:
            h.remove_users_and_state()
            shutil.rmtree(GRADER, ignore_errors=True)


# ---- 1. log in and spawn ----------------------------------------------------------------------------------------
def test_01_the_class_logs_in_and_every_server_starts(hub, hub_browser):
    passwords = hub.passwords
    clients = {u: Client(hub.url, u) for u in [*LEARNERS, HOSTILE]}

    async def one(user):
        c = clients[user]
        await c.log_in(passwords[user])
        return await c.spawn(SPAWN_TIMEOUT) if user not in BROWSER else None

    async def everyone():
        return await asyncio.gather(*(one(u) for u in clients))

    t0 = time.monotonic()
    handle = run_async(everyone())
    pages, usable = {}, {}
    for user in BROWSER:  # the login page, then the server the hub starts for them
        ctx = hub_browser.new_context(viewport={"width": 1366, "height": 900})
        ctx.set_default_timeout(SPAWN_TIMEOUT * 1000)
        page = ctx.new_page()
        page.goto(f"{hub.url}/hub/login")
        page.fill("#username_input", user)
        page.fill("#password_input", passwords[user])
        page.click("#login_submit")
        pages[user] = (ctx, page, time.monotonic())
    for user, (_ctx, page, started) in pages.items():
        page.wait_for_url(f"**/user/{user}/lab**", timeout=SPAWN_TIMEOUT * 1000)
        page.wait_for_selector("#jp-main-dock-panel", timeout=SPAWN_TIMEOUT * 1000)
        usable[user] = time.monotonic() - started
        screenshot(page, f"load-{user}-lab")
    times = handle.result(SPAWN_TIMEOUT + 60)
    usable.update({u: t for u, t in zip(clients, times, strict=True) if t is not None})
    assert sorted(usable) == sorted(clients), sorted(set(clients) - set(usable))
    for user in clients:
        assert api(hub, "GET", f"/hub/api/users/{user}")["servers"][""]["ready"], user
    STATE["clients"], STATE["pages"] = clients, pages
    record("learners", N)
    record("spawn_all_s", round(time.monotonic() - t0, 1))
    record("time_to_usable_server_s", summary(usable.values()))
    record("time_to_usable_server_browser_s", {u: round(usable[u], 1) for u in BROWSER})


# ---- 2. release and fetch ---------------------------------------------------------------------------------------
def solved(nb, lang_notebooks, name: str, how: str):
    sols = fx.solutions(lang_notebooks, "en", name)
    for cell in fx.solution_cells(nb):
        source = sols[cell.id]
        if "def mask_and_renormalize(" in source:
            source = {"wrong": WRONG_RENORMALIZE, "undone": cell.source, "cheat": CHEAT_RENORMALIZE}.get(how, source)
        cell.source = source
    return nb


def test_02_release_fetch_and_answer(hub):
    for assignment in (A01, A08):
        hub.nbgrader(TEACHER, "release_assignment", assignment, cwd=hub.course)
    clients, notebooks = STATE["clients"], hubmod.ROOT / "notebooks" / "instructor"

    async def one(user):
        c = clients[user]
        todo = [(A01, NB01, "cheat" if user == HOSTILE else variant(user))]
        if user in TRAINERS:
            todo.append((A08, NB08, "full"))
        for assignment, name, how in todo:
            out = await c.nbgrader("fetch", assignment)
            assert out["success"], (user, out)
            path = f"{assignment}/{name}"
            await c.put_notebook(path, solved(await c.get_notebook(path), notebooks, name, how))

    async def everyone():
        await asyncio.gather(*(one(u) for u in clients))

    run_async(everyone()).result(900)
    for user in clients:
        assert (hub.home(user) / A01 / NB01).is_file(), user


# ---- 3. one learner alone ---------------------------------------------------------------------------------------
def test_03_one_learner_alone(hub):
    c = STATE["clients"][TRAINERS[0]]

    async def alone():
        out = {}
        for assignment, name in ((A01, NB01), (A08, NB08)):
            r = await c.run_notebook(f"{assignment}/{name}")
            assert r["error"] is None, r["error"]
            out[name] = r["seconds"]
            await c.call("DELETE", f"/user/{c.user}/api/kernels/{r['kernel']}")
        return out

    out = run_async(alone()).result(RUN_TIMEOUT)
    record("alone_run_s", {"01": round(out[NB01], 1), "08": round(out[NB08], 1)})


def hostile_counters(h) -> dict:
    """The largest each counter of the hostile learner's group reached (sampled while it lasted, and now)."""
    bad = dict(STATE["sampler"].watched)
    if UserGroup(HOSTILE, create=False).exists():
        bad.update({k: max(v, bad.get(k, 0)) for k, v in UserGroup(HOSTILE, create=False).stats().items()})
    bad["server_up_after_the_attack"] = bool(api(h, "GET", f"/hub/api/users/{HOSTILE}")["servers"])
    bad["attack_s"] = round(time.monotonic() - STATE["attack_t0"], 1)
    return bad


# ---- 4. the class at once, one hostile learner --------------------------------------------------------------------
def test_04_the_class_runs_at_once_a_hostile_learner_among_them(hub):
    clients = STATE["clients"]
    hostile = clients[HOSTILE]

    async def attack():
        out = await hostile.nbgrader("submit", A01)  # handed in before the kernels go wild
        assert out.get("success"), out
        kernels = [await hostile.session(f"hostile-{i}.ipynb") for i in range(3)]
        # the allocation first, until the group's OOM killer has acted: once the fork bomb fills the group with
        # spinning processes, a kernel in it gets too little CPU to allocate fast
        await hostile.execute(kernels[0], HOG)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and UserGroup(HOSTILE, create=False).stats().get("oom_kills", 0) < 1:
            await asyncio.sleep(0.5)
        for kernel, code in zip(kernels[1:], (SPIN, FORK_BOMB), strict=True):
            await hostile.execute(kernel, code)

    STATE["attack_t0"] = time.monotonic()
    run_async(attack()).result(300)
    time.sleep(5)

    async def learner(user):
        out = {"01": await clients[user].run_notebook(f"{A01}/{NB01}", cell_timeout=RUN_TIMEOUT)}
        if user in TRAINERS:
            out["08"] = await clients[user].run_notebook(f"{A08}/{NB08}", cell_timeout=RUN_TIMEOUT)
        return out

    async def class_():
        return await asyncio.gather(*(learner(u) for u in API_LEARNERS))

    t0 = time.monotonic()
    try:
        handle = run_async(class_())
        browser_s = {}
        for user in BROWSER:  # Run All in JupyterLab, meanwhile
            _ctx, page, _ = STATE["pages"][user]
            started = time.monotonic()
            run_all(page, hub, user, f"{A01}/{NB01}", kernels=1, timeout=RUN_TIMEOUT, start=SPAWN_TIMEOUT)
            browser_s[user] = round(time.monotonic() - started, 1)
            page.keyboard.press("Control+s")
            time.sleep(2)
            screenshot(page, f"load-{user}-ran")
        results = dict(zip(API_LEARNERS, handle.result(RUN_TIMEOUT + 120), strict=True))
    finally:  # the hostile learner's counters, then their server stopped, whatever happened above
        STATE["hostile"] = hostile_counters(hub)
        STATE["hostile_stop"] = stop_server(hub, HOSTILE)
    record("class_run_all_s", round(time.monotonic() - t0, 1))
    record("load_avg_1min_after_the_class_run", round(os.getloadavg()[0], 1))
    STATE["results"] = results
    record(
        "run_s",
        {
            "01_at_once": summary(r["01"]["seconds"] for r in results.values()),
            "08_at_once": summary(r["08"]["seconds"] for r in results.values() if "08" in r),
            "01_browser_run_all": browser_s,
        },
    )
    record("websocket_reconnects", reconnects(results))


def test_05_every_learner_ran_without_an_error_and_got_the_verdicts_their_answers_deserve(hub):
    results = STATE["results"]
    failed = {u: r[k]["error"] for u, r in results.items() for k in r if r[k]["error"]}
    assert failed == {}, failed
    for user, r in results.items():
        assert r["01"]["text"].count("✅") == TICKS_01[variant(user)], (user, variant(user), r["01"]["text"][-800:])
        if "08" in r:
            assert r["08"]["text"].count("✅") == 2, (user, r["08"]["text"][-800:])
    for user in BROWSER:
        nb = nbformat.from_dict(api(hub, "GET", f"/user/{user}/api/contents/{A01}/{NB01}?content=1")["content"])
        outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert not [o for o in outs if o.output_type == "error"], user
        assert sum(o.get("text", "").count("✅") for o in outs) == 2, user


def test_06_the_hostile_learner_and_only_it_was_limited_and_the_hub_stayed_up(hub):
    groups = {u: UserGroup(u, create=False).stats() for u in LEARNERS}
    bad = STATE["hostile"]
    assert bad.get("oom_kills", 0) >= 1, bad
    assert bad.get("forks_refused", 0) >= 1, bad
    # every core spun, yet at most cpu_limit cores' worth over the attack: the quota where the machine is idle,
    # the group's equal share (less) where it is not (then nr_throttled may stay 0)
    assert 0 < bad.get("cpu_s", 0) <= hubmod.DEFAULT_LIMITS["cpu_limit"] * bad["attack_s"] * 1.05 + 5, bad
    others = {u: (s.get("oom_kills"), s.get("forks_refused")) for u, s in groups.items()}
    assert set(others.values()) == {(0, 0)}, others
    assert hub.proc.poll() is None
    assert api(hub, "GET", "/hub/api/")["version"]
    assert api(hub, "GET", f"/hub/api/users/{LEARNERS[0]}")["servers"][""]["ready"]

    # stopping the hostile server (test_04, at once) left no process of that user, and no group
    seconds, left, group = STATE["hostile_stop"]
    assert left == 0 and not group, (left, group)
    record("hostile_stopped_s", seconds)

    sampler = STATE["sampler"]
    peaks = dict(sampler.peak)
    learners_pss = [peaks[u] for u in LEARNERS if u in peaks]
    record(
        "peak_pss_mib",
        {
            "learner": summary(learners_pss),
            "trainer_08": summary(peaks[u] for u in TRAINERS),
            "hub": round(peaks.get("hub", 0.0), 1),
            "all_learners_sum_of_peaks": round(sum(learners_pss), 1),
            "samples": sampler.samples,
        },
    )
    record("load_avg_1min_peak", round(sampler.load_peak, 1))
    record(
        "cgroups",
        {
            "hostile": bad,
            "learner_cpu_s": summary(s["cpu_s"] for s in groups.values() if s.get("cpu_s")),
            "learner_memory_peak_mib": summary(
                s["memory_peak_mib"] for s in groups.values() if s.get("memory_peak_mib")
            ),
        },
    )


# ---- 5. submit, collect, grade ------------------------------------------------------------------------------------
def test_07_submit_collect_and_grade_every_learner(hub):
    clients = STATE["clients"]

    async def one(user):
        for assignment in (A01, A08) if user in TRAINERS else (A01,):
            out = await clients[user].nbgrader("submit", assignment)
            assert out.get("success"), (user, out)

    async def everyone():
        await asyncio.gather(*(one(u) for u in LEARNERS))

    run_async(everyone()).result(900)
    for assignment in (A01, A08):
        hub.nbgrader(TEACHER, "collect", assignment, cwd=hub.course)
    t0 = time.monotonic()
    for assignment in (A01, A08):
        proc = grade_as(hub, TEACHER, assignment, timeout=3600)
        assert "in the bubblewrap sandbox" in proc.stdout, proc.stdout[-2000:]
    record("grade_s", round(time.monotonic() - t0, 1))
    got = gradebook_scores(hub, TEACHER, A01, A08)
    want = {(u, A01): EXPECTED_01[variant(u)] for u in LEARNERS}
    want[(HOSTILE, A01)] = 1  # causal_mask right; the exercise whose checker it redefined, 0
    want.update({(u, A08): 4 for u in TRAINERS})
    assert {(s, a): score for s, a, score, _ in got} == want
    record(
        "graded",
        {"submissions": len(got), "by_score": {str(k): list(want.values()).count(k) for k in set(want.values())}},
    )


# ---- the report ---------------------------------------------------------------------------------------------------
def test_08_report(hub, request):
    """build/hub/load.json: this run's figures under its N (earlier runs at other N kept), the largest N held.
    The run is marked passed only when every test before this one passed (a failed class run is not a held N)."""
    failed = request.session.testsfailed
    data = write_report(passed=failed == 0)
    assert failed == 0, f"{failed} test(s) of this run failed: N = {N} is not held; its logs: {LOGS}"
    assert data["runs"][str(N)]["passed"] and data["largest_n_held"] >= N
