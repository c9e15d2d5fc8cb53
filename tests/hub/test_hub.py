"""A semester on the local JupyterHub (tools/teaching/hub/hub.py), end to end, with real Unix users.

The fixture course (tests/_course_fixture.py, 01_demo: two autograded exercises and one written answer) is made
into ``ps1-en`` and ``ps1-zh``. The instructor releases both; three students fetch in their own servers:
alice in headless Chromium through the hub's pages (log in, Assignments tab: Fetch, Submit, Fetch Feedback),
bob (Chinese, a partial answer) and mallory (a hostile notebook) through their servers' REST API (nbgrader's
assignment-list handlers, called with a hub service token). The instructor collects, grades with
tools/teaching/grader/nbgrader_course.py (each submission in the bubblewrap sandbox; run as the instructor's Unix
user), checks the scores in formgrader in Chromium, generates and releases feedback; each student fetches their own
feedback and no one else's. Isolation and the exchange's permissions are checked as the users themselves.
Memory per user (server alone; server + kernel after running the notebook) and timings are written to
build/hub/sizing.json (docs/hub-sizing.md quotes them).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import time

import _course_fixture as fx
import nbformat
import pytest
from _hub_client import (
    ALICE,
    BOB,
    EN,
    GRADER,
    HUB_DIR,
    MALLORY,
    SIZING,
    STUDENTS,
    TEACHER,
    ZH,
    clear_hub_dir,
    free_port,
    get_notebook,
    grade_as,
    gradebook_scores,
    keep_logs,
    login,
    memory_of,
    nbgrader_action,
    open_assignment_list,
    put_notebook,
    record,
    remove_leftover_users,
    run_all,
    screenshot,
    solve,
    start_server,
)

from tools.teaching.hub import hub as hubmod

STATE: dict = {}

# mallory's notebook: the answer key read from the instructor's course folder (refused: her own server runs as
# her, and the grader's sandbox sees no course), a checker redefined, a loop that never ends at import time is
# not needed: these are enough to show the sandboxed grading of a hostile notebook.
HOSTILE_MASK = """import glob
import json
import os

LEAKED = []
for pattern in ("/home/*/llm-lab/instructor-notebooks/en/*.ipynb", "/home/*/llm-lab/source/*/*.ipynb",
                "/home/*/llm-lab/gradebook.db", "/home/lt-alice/*/*.ipynb"):
    for path in glob.glob(pattern):
        try:
            LEAKED.append(open(path).read())
        except OSError:
            pass


def causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu()  # wrong: the diagonal is masked
"""
HOSTILE_RENORM = (
    "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n\n\n"
    "def check_renormalize(fn):\n    print('✅ mask_and_renormalize: correct')\n"
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    notebooks = fx.build_course(tmp_path_factory.mktemp("hub-course"))
    SIZING.unlink(missing_ok=True)
    clear_hub_dir()
    h = hubmod.Hub(
        HUB_DIR, free_port(), TEACHER, list(STUDENTS), notebook="01", instructor_dir=notebooks, assignment="ps1"
    )
    t0 = time.monotonic()
    remove_leftover_users(h)
    h.setup()
    record("setup_s", round(time.monotonic() - t0, 1))
    t0 = time.monotonic()
    h.start()
    record("hub_start_s", round(time.monotonic() - t0, 1))
    STATE["notebooks"] = notebooks
    try:
        yield h
    finally:
        h.remove_users_and_state()
        shutil.rmtree(GRADER, ignore_errors=True)


# ---- the semester, in order -------------------------------------------------------------------------------
def test_01_learners_and_instructor_see_different_labs(hub, hub_browser):
    ctx, page = login(hub_browser, hub, ALICE)
    STATE["alice"] = (ctx, page)
    page.get_by_text("Nbgrader", exact=True).first.click()
    items = page.locator(".lm-Menu-itemLabel").all_inner_texts()
    page.keyboard.press("Escape")
    assert "Assignment List" in items and "Formgrader" not in items, items
    assert page.request.get(f"{hub.url}/user/{ALICE}/formgrader").status == 404
    record("alice_lab_open_no_kernel", memory_of(ALICE))
    tctx, tpage = login(hub_browser, hub, TEACHER)
    STATE["teacher"] = (tctx, tpage)
    tpage.get_by_text("Nbgrader", exact=True).first.click()
    items = tpage.locator(".lm-Menu-itemLabel").all_inner_texts()
    tpage.keyboard.press("Escape")
    assert "Formgrader" in items, items
    assert tpage.request.get(f"{hub.url}/user/{TEACHER}/formgrader").status == 200


def test_02_release_both_languages_and_exchange_permissions(hub):
    for assignment in (EN, ZH):
        hub.nbgrader(TEACHER, "release_assignment", assignment, cwd=hub.course)
    course = hub.exchange / "llm-lab"
    mode = {
        p: stat.S_IMODE(os.stat(p).st_mode)
        for p in (hub.exchange, course / "inbound", course / "outbound", course / "outbound" / EN)
    }
    assert mode[hub.exchange] == 0o1777  # anyone may create their course folder; no one removes another's
    assert mode[course / "inbound"] == 0o2733  # students drop submissions in, cannot list them
    assert mode[course / "outbound"] == 0o755 and mode[course / "outbound" / EN] == 0o755
    assert pwd.getpwuid(os.stat(course).st_uid).pw_name == TEACHER
    listed = hub.nbgrader(ALICE, "list")
    released = listed.stderr + listed.stdout
    assert f"llm-lab {EN}" in released and f"llm-lab {ZH}" in released, released
    zh = nbformat.read(str(course / "outbound" / ZH / fx.NAME), as_version=4)
    assert "在这里写你的代码" in "".join(c.source for c in fx.solution_cells(zh))
    assert "BEGIN SOLUTION" not in json.dumps(zh)


def test_03_alice_fetches_solves_and_submits_in_chromium(hub):
    ctx, page = STATE["alice"]
    open_assignment_list(page)
    row = page.locator("#released_assignments_list .list_item", has_text=EN)
    row.get_by_role("button", name="Fetch").click()
    page.locator("#fetched_assignments_list", has_text=EN).wait_for(timeout=60_000)
    screenshot(page, "alice-fetched")
    path = f"{EN}/{fx.NAME}"
    assert (hub.home(ALICE) / EN / fx.NAME).is_file()
    assert pwd.getpwuid(os.stat(hub.home(ALICE) / EN / fx.NAME).st_uid).pw_name == ALICE
    put_notebook(hub, ALICE, path, solve(get_notebook(hub, ALICE, path), STATE["notebooks"], "en"))
    # Run All in JupyterLab: the checkers answer in alice's own kernel, and the memory of a working learner
    run_all(page, hub, ALICE, path, kernels=1)
    screenshot(page, "alice-ran")
    assert page.locator(".jp-OutputArea-output", has_text="✅").count() == 2  # both checkers, in her kernel
    record("alice_after_run_all_fixture_notebook", memory_of(ALICE))
    page.keyboard.press("Control+s")
    time.sleep(1)
    open_assignment_list(page)
    row = page.locator("#fetched_assignments_list .list_item", has_text=EN)
    row.get_by_role("button", name="Submit").click()
    page.locator("#submitted_assignments_list", has_text=EN).wait_for(timeout=60_000)
    screenshot(page, "alice-submitted")


def test_04_bob_and_mallory_in_their_own_servers(hub):
    notebooks = STATE["notebooks"]
    for user, assignment, lang, replace in (
        (
            BOB,
            ZH,
            "zh",
            {"mask_and_renormalize": "def mask_and_renormalize(attn_weights):\n    raise NotImplementedError()\n"},
        ),
        (MALLORY, EN, "en", {"causal_mask": HOSTILE_MASK, "mask_and_renormalize": HOSTILE_RENORM}),
    ):
        start_server(hub, user)
        listing = nbgrader_action(hub, user, "fetch", assignment)
        assert listing["success"], listing
        path = f"{assignment}/{fx.NAME}"
        put_notebook(hub, user, path, solve(get_notebook(hub, user, path), notebooks, lang, **replace))
        out = nbgrader_action(hub, user, "submit", assignment)
        assert out.get("success"), out
        record(f"{user}_server_no_kernel", memory_of(user))
    inbound = hub.exchange / "llm-lab" / "inbound"
    entries = sorted(p.name for p in inbound.iterdir())
    assert [e.split("+")[:2] for e in entries] == sorted([[ALICE, EN], [BOB, ZH], [MALLORY, EN]])
    assert all(len(e.split("+")) == 4 for e in entries)  # a random part: no one guesses another's folder


def test_05_isolation_as_the_students(hub):
    """Each read is attempted by the student's own Unix user; every one must be refused."""
    course, alice = hub.course, hub.home(ALICE)
    targets = {
        "another student's home": str(alice),
        "another student's notebook": str(alice / EN / fx.NAME),
        "the course folder": str(course),
        "the instructor notebooks": str(course / "instructor-notebooks" / "en" / fx.NAME),
        "the source notebook": str(course / "source" / EN / fx.NAME),
        "the release notebook": str(course / "release" / EN / fx.NAME),
        "the gradebook": str(course / "gradebook.db"),
        "the exchange's inbound listing": str(hub.exchange / "llm-lab" / "inbound"),
        "the hub's passwords": str(hub.state / "passwords.json"),
    }
    probe = (
        "import json, os, sys\nout = {}\nfor name, path in json.loads(sys.argv[1]).items():\n"
        "    try:\n        os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read(1)\n"
        "        out[name] = 'READ'\n    except OSError as exc:\n        out[name] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
    )
    for user in (BOB, MALLORY):
        mine = {k: v for k, v in targets.items() if not (user == ALICE and "another" in k)}
        got = json.loads(hub.as_user(user, hub.venv / "bin" / "python", "-c", probe, json.dumps(mine)).stdout)
        assert set(got) == set(mine)
        assert {k: v for k, v in got.items() if v == "READ"} == {}, f"{user} read {got}"
        assert set(got.values()) == {"PermissionError"}, got
    # each home is its owner's alone
    for user in (*STUDENTS, TEACHER):
        assert stat.S_IMODE(os.stat(hub.home(user)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(course).st_mode) == 0o700


def test_06_collect_and_grade_the_trusted_way(hub):
    for assignment in (EN, ZH):
        hub.nbgrader(TEACHER, "collect", assignment, cwd=hub.course)
    assert sorted(p.parent.name for p in (hub.course / "submitted").glob(f"*/{EN}")) == [ALICE, MALLORY]
    assert sorted(p.parent.name for p in (hub.course / "submitted").glob(f"*/{ZH}")) == [BOB]
    t0 = time.monotonic()
    for assignment in (EN, ZH):
        proc = grade_as(hub, TEACHER, assignment, timeout=900)
        assert "in the bubblewrap sandbox" in proc.stdout, proc.stdout
    record("grade_two_assignments_s", round(time.monotonic() - t0, 1))
    points = fx.points(STATE["notebooks"])
    full = sum(points.values())
    want = {(ALICE, EN): full, (BOB, ZH): points["causal_mask"], (MALLORY, EN): 0}
    got = gradebook_scores(hub, TEACHER, EN, ZH)
    assert {(s, a): score for s, a, score, _ in got} == want
    assert {m for *_, m in got} == {full}
    STATE["scores"] = want


def test_07_formgrader_in_chromium_shows_the_scores(hub):
    ctx, page = STATE["teacher"]
    page.goto(f"{hub.url}/user/{TEACHER}/formgrader/manage_students")
    table = page.locator("#main-table")
    table.get_by_text(ALICE, exact=True).wait_for(timeout=60_000)
    text = table.inner_text()
    screenshot(page, "formgrader-students")
    for user in STUDENTS:
        assert user in text
    full = sum(fx.points(STATE["notebooks"]).values())
    for user, assignment in ((ALICE, EN), (BOB, ZH), (MALLORY, EN)):
        page.goto(f"{hub.url}/user/{TEACHER}/formgrader/manage_students/{user}")
        page.get_by_text(assignment, exact=True).wait_for(timeout=60_000)
        screenshot(page, f"formgrader-{user}")
        cells = [t.strip() for t in page.locator("tr", has_text=assignment).first.locator("td").all_inner_texts()]
        code = STATE["scores"][(user, assignment)]
        # overall (the written answer is not graded yet), code, written
        assert cells[1:4] == [f"{code} / {full + 1}", f"{code} / {full}", "0 / 1"], (user, cells)


def test_08_feedback_reaches_each_student_only(hub):
    # release_feedback reads autograded/<student>/<assignment>/submission_secret.txt:
    # tools/teaching/grader/nbgrader_course.py put it there, as nbgrader autograde does
    for assignment in (EN, ZH):
        hub.nbgrader(TEACHER, "generate_feedback", assignment, cwd=hub.course)
        hub.nbgrader(TEACHER, "release_feedback", assignment, cwd=hub.course)
    feedback = hub.exchange / "llm-lab" / "feedback"
    assert stat.S_IMODE(os.stat(feedback).st_mode) == 0o711  # students open their own file, list nothing
    # alice in Chromium: Fetch Feedback in the Assignments tab
    ctx, page = STATE["alice"]
    open_assignment_list(page)
    row = page.locator("#submitted_assignments_list .list_item", has_text=EN).first
    row.get_by_role("button", name="Fetch Feedback").click()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((hub.home(ALICE) / EN / "feedback").glob("*/*.html")):
        time.sleep(1)
    screenshot(page, "alice-feedback")
    for user, assignment in ((BOB, ZH), (MALLORY, EN)):
        assert nbgrader_action(hub, user, "fetch_feedback", assignment)["success"]
    full = sum(fx.points(STATE["notebooks"]).values())
    for user, assignment in ((ALICE, EN), (BOB, ZH), (MALLORY, EN)):
        files = list((hub.home(user) / assignment / "feedback").glob("*/*.html"))
        assert len(files) == 1, (user, files)
        html = files[0].read_text(encoding="utf-8")
        score = STATE["scores"][(user, assignment)]
        assert f"{fx.NAME[:-6]} (Score: {score:.1f} / {full + 1:.1f})" in html, (user, score)
        # their own code and no one else's: alice's renormalize (keepdim), bob's Chinese answer, mallory's LEAKED
        own = {ALICE: "keepdim", BOB: "它自己的值不属于未来", MALLORY: "LEAKED"}
        for other, marker in own.items():
            assert (marker in html) == (other == user), (user, marker)
    mallory = next((hub.home(MALLORY) / EN / "feedback").glob("*/*.html")).read_text(encoding="utf-8")
    assert "changes the checkers" in mallory and "check_renormalize" in mallory
    # no one lists the feedback folder, so no one picks another's file
    probe = (
        "import os, sys\ntry:\n    os.listdir(sys.argv[1])\n    print('LISTED')\nexcept OSError as e:\n"
        "    print(type(e).__name__)\n"
    )
    listed = hub.as_user(MALLORY, hub.venv / "bin" / "python", "-c", probe, feedback).stdout.strip()
    assert listed == "PermissionError"


def test_09_the_proxy_and_each_server_log_to_files_of_their_own_whose_ends_are_kept(hub, tmp_path):
    names = {str(p.relative_to(hub.state)) for p in hub.logs()}
    assert names == {"jupyterhub.log", "proxy.log", *(f"servers/{u}.log" for u in (TEACHER, *STUDENTS))}, names
    text = {name: (hub.state / name).read_bytes() for name in names}
    assert b"ServerApp" in text[f"servers/{ALICE}.log"] and b"ServerApp" not in text["jupyterhub.log"]
    assert b"ConfigProxy" in text["proxy.log"] and b"ConfigProxy" not in text["jupyterhub.log"]
    assert set(keep_logs(hub, tmp_path, tail=500)) >= names
    for name in names:  # the last 500 bytes of each (the hub may have written more since), marked where cut
        kept = (tmp_path / name).read_bytes()
        end = kept.partition(b"left out]\n")[2]
        assert kept.startswith(b"[the first ") and len(end) == 500 and end in (hub.state / name).read_bytes(), name
