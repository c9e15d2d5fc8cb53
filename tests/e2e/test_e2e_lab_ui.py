"""The lab UI: `make lab` shows no nbgrader (no Nbgrader menu, no "Create Assignment" sidebar, no "Validate"
button on the notebook, no formgrader server extension) while `make lab-instructor` shows all four.

Each target is started as `make <target> PORT=... NOTEBOOK_DIR=<copies of the notebooks>` in a process group
of its own (stopped on teardown) and opened on its first English notebook; screenshots build/browser/make-*.png.
"""

from __future__ import annotations

import pytest
from e2e_js import JS
from e2e_lab import http_status, start_make_lab, wait_for

TARGETS = [("lab", False), ("lab-instructor", True)]


@pytest.fixture
def make_lab(request, notebook_copies, tmp_path):
    lab = start_make_lab(request.param, tmp_path, notebook_copies)
    yield lab
    lab.stop()


def nbgrader_ui(page, target: str, expect: bool) -> dict:
    """What of nbgrader's UI the page shows once its notebook is drawn (waiting for what should come)."""
    ui = wait_for(
        page,
        JS["nbgrader_ui"],
        lambda u: u["notebook"] and (u["menu"] or not expect),
        90,
        f"make {target}: a notebook to open",
    )
    if expect:  # the toolbar button and the sidebar come a moment after the menu
        ui = wait_for(
            page,
            JS["nbgrader_ui"],
            lambda u: u["sidebar"] and u["validate"],
            30,
            f"make {target}: the nbgrader sidebar and Validate button",
        )
    else:
        page.wait_for_timeout(3000)  # give any extension time to add its UI; then look again
        ui = page.evaluate(JS["nbgrader_ui"])
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)  # the notebook drawn
    page.wait_for_timeout(500)
    return {k: ui[k] for k in ("menu", "sidebar", "validate")}


@pytest.mark.parametrize(("make_lab", "expect"), TARGETS, ids=[t for t, _ in TARGETS], indirect=["make_lab"])
def test_lab_ui(make_lab, expect, page, notebook_copies, browser_shots):
    target = make_lab.name.removeprefix("make ")
    notebook = sorted((notebook_copies / "en").glob("*.ipynb"))[0].relative_to(notebook_copies).as_posix()
    page.goto(f"{make_lab.base}/lab/tree/{notebook}?token={make_lab.token}", wait_until="domcontentloaded")
    shown = nbgrader_ui(page, target, expect)
    page.screenshot(path=str(browser_shots / f"make-{target}.png"))
    assert all(v == expect for v in shown.values()), (
        f"make {target}: nbgrader UI (Nbgrader menu, Create Assignment sidebar, Validate button) should be "
        f"{'present' if expect else 'absent'}, found {shown}"
    )
    status = http_status(f"{make_lab.base}/formgrader?token={make_lab.token}")
    assert (status == 200) == expect, f"make {target}: the formgrader server extension answers {status}"
