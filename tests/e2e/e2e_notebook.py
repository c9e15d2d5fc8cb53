"""One notebook in the lab page: the stored outputs, Clear All Outputs + Run All, then what it shows.

`check_notebook` returns the notebook's timing and counts and raises AssertionError listing every problem
found (not only the first): a stored ``VBox(children=...`` text or an explorer cell without its hint; an
error or stderr output, a cell not executed; a figure not loaded or upscaled (CSS size x devicePixelRatio
larger than the PNG's pixels); an explorer not fully visible, with a cut label or not live
(e2e_explorer.py); a glyph drawn as a box, before and after running, or a failed positive control; in a
learner version, a checker's verdict on a stub that is not 🚧, or a solution fold open before its click.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from e2e_explorer import check_explorer
from e2e_js import JS
from e2e_lab import LabError, close_notebook, scroll_to, wait_for

NB_TIMEOUT_S = 240
# an explorer's stored hint, in its notebook's language (llm_lab.explore._explorer._Explorer.hint_text)
HINT = re.compile("run this cell|运行本单元")


def tag_of(rel: str) -> str:
    return rel.replace("/", "-").removesuffix(".ipynb")


def shows_explorer(source: str) -> bool:
    """Does the cell show an explorer: is its last statement a call of a ``*_explorer`` (which the notebook then
    displays)? A cell that only builds one to read its numbers (02's sweep) shows none."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    last = body[-1] if body else None
    call = last.value if isinstance(last, ast.Expr) else None
    func = call.func if isinstance(call, ast.Call) else None
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name.endswith("_explorer")


def check_stored(nb, rel: str, tag: str, shots: Path) -> tuple[list[str], int]:
    """The stored outputs as a learner first sees them; returns the problems and the number of explorer cells."""
    page, problems = nb.page, []
    before = page.evaluate(JS["lab_state"])
    stored = "\n".join(o["text"] for c in before["cells"] for o in c["outputs"])
    if "VBox(children" in stored or "HBox(children" in stored:
        problems.append("a stored output shows a bare VBox(children=...) text instead of a hint")
    explorer_cells = [c for c in before["cells"] if shows_explorer(c["source"])]
    hints = [c for c in explorer_cells if c["outputs"]]
    for cell in hints:
        if not any(HINT.search(o["text"]) for o in cell["outputs"]):
            problems.append(f"explorer cell stores no hint text: {[o['text'][:80] for o in cell['outputs']]}")
    if hints:  # what a learner sees there before running: the hint, as plain text
        try:
            wait_for(
                page, JS["lab_hints"], lambda n: n >= len(hints), 20, f"{rel}: the explorers' hint text before running"
            )
            scroll_to(page, nb.locator(".jp-OutputArea-output", has_text=HINT).first)
            page.screenshot(path=str(shots / f"{tag}-before-run.png"))
        except LabError as err:
            problems.append(str(err))
    return problems, len(explorer_cells)


def run_all(page, rel: str) -> tuple[dict, list[str]]:
    """Clear All Outputs, Run All, wait until every cell ran (or one failed); the final state and problems."""
    problems = []
    page.evaluate(JS["lab_run_all"], "clear")
    cleared = page.evaluate(JS["lab_state"])
    if any(c["outputs"] for c in cleared["cells"]):
        problems.append("outputs remained after Clear All Outputs")
    code = [c for c in cleared["cells"] if c["source"].strip()]
    page.evaluate(JS["lab_run_all"], "run")

    def done(state):
        cells = [c for c in state["cells"] if c["source"].strip()]
        failed = any(o["type"] == "error" for c in cells for o in c["outputs"])
        finished = all(c["count"] is not None and not c["running"] for c in cells)
        return state["kernel"] == "idle" and (finished or failed)

    state = wait_for(page, JS["lab_state"], done, NB_TIMEOUT_S, f"{rel} to finish Run All")
    cells = [c for c in state["cells"] if c["source"].strip()]
    if len(cells) != len(code):
        problems.append(f"{len(code)} code cells before running, {len(cells)} after")
    return {**state, "cells": cells}, problems + cell_problems(cells)


def cell_problems(cells: list[dict]) -> list[str]:
    problems = []
    for i, cell in enumerate(cells):
        where = f"code cell {i} ({cell['source'].strip().splitlines()[0][:50]!r})"
        if cell["count"] is None:
            problems.append(f"{where}: not executed")
        for o in cell["outputs"]:
            if o["type"] == "error":
                problems.append(f"{where}: error {o['text'][:300]}")
            if o["type"] == "stream" and o["name"] == "stderr":
                problems.append(f"{where}: stderr {o['text'][:300]!r}")
    return problems


def check_figures(page, rel: str, cells: list[dict]) -> tuple[list[str], int]:
    """Every figure loaded, one per PNG output, none upscaled; returns the problems and the figure count."""
    problems = []
    images = wait_for(
        page,
        JS["lab_images"],
        lambda imgs: all(i["complete"] and i["natural"][0] > 0 for i in imgs),
        30,
        f"{rel}: every figure to load",
    )
    expected = sum("image/png" in o["mimes"] for c in cells for o in c["outputs"])
    figures = [i for i in images if not i["explorer"]]
    if len(figures) != expected:
        problems.append(f"{expected} PNG outputs but {len(figures)} figures on the page")
    for img in images:
        (nw, nh), (sw, sh), dpr = img["natural"], img["shown"], img["dpr"]
        if sw * dpr > nw + 1 or sh * dpr > nh + 1:
            problems.append(f"image upscaled: {nw}x{nh} px shown at {sw:.0f}x{sh:.0f} css px (dpr {dpr})")
    return problems, len(figures)


def check_explorers(nb, rel: str, wanted: int, tag: str, shots: Path, stats: dict) -> tuple[list[str], int]:
    page = nb.page
    if wanted:
        wait_for(page, JS["explorer_count"], lambda n: n >= wanted, 30, f"{rel}: {wanted} explorer(s) to render")
    explorers = nb.locator(".llm-lab-explorer")
    problems = []
    for index in range(explorers.count()):
        problems += check_explorer(page, explorers.nth(index), index, f"{tag}-explorer{index}", shots, stats)
    return problems, explorers.count()


def check_verdicts(cells: list[dict]) -> tuple[list[str], int]:
    """Learner versions: each checker's verdict on the stub says 🚧 (not written yet)."""
    verdicts = [c for c in cells if re.match(r"^check_\w+\(\w+\)$", c["source"].strip())]
    problems = []
    for c in verdicts:
        text = "".join(o["text"] for o in c["outputs"])
        if not text.startswith("🚧"):
            problems.append(f"{c['source'].strip()}: the verdict on the stub is {text[:120]!r}, not 🚧")
    return problems, len(verdicts)


def check_folds(nb, verdicts: int, tag: str, shots: Path) -> list[str]:
    """Learner versions: every fold closed before any click; a solution fold (one holding code) opens on a click
    on its summary and then shows its code."""
    page, problems = nb.page, []
    opened = page.evaluate(JS["folds_open"])
    if opened:
        problems.append(f"{opened} folded solution(s) or model answer(s) open before any click")
    folded = nb.locator(".jp-MarkdownOutput details", has=page.locator("pre"))
    if not folded.count():
        return problems + (["exercises without a folded solution in the rendered notebook"] if verdicts else [])
    first = folded.first
    scroll_to(page, first)
    state = first.evaluate(JS["fold_state"])
    if state["open"] or state["code"] != 0:
        problems.append(f"a folded solution's code is visible before any click: {state}")
    first.locator("summary").click()
    page.wait_for_timeout(300)
    state = first.evaluate(JS["fold_state"])
    if not state["open"] or state["code"] != 1:
        problems.append(f"clicking a folded solution's summary did not show it: {state}")
    page.screenshot(path=str(shots / f"{tag}-solution-open.png"))
    return problems


def tofu_problems(tofu: dict) -> list[str]:
    problems = (
        [] if tofu["control"] else ["tofu check: the positive control failed (a missing glyph was not recognised)"]
    )
    return problems + [
        f"glyph drawn as a box: {b['ch']} ({b['code']}) in {b['font']!r}, in {b['example']!r}" for b in tofu["boxes"]
    ]


def final_screenshots(nb, tag: str, shots: Path) -> None:
    """The notebook's top, and a checker's verdict (✅ / ❌) on screen, to see the emoji font at work."""
    page = nb.page
    page.evaluate(JS["lab_scroll_top"])
    page.wait_for_timeout(200)
    page.screenshot(path=str(shots / f"{tag}.png"))
    verdict = nb.locator(".jp-OutputArea-output", has_text=re.compile("[✅❌]")).first
    if verdict.count():
        scroll_to(page, verdict)
        page.screenshot(path=str(shots / f"{tag}-checker.png"))


def check_notebook(page, rel: str, shots: Path, stats: dict) -> dict:
    """Open, check, clear, Run All and check one notebook (path relative to the lab's root); closes it."""
    tag = tag_of(rel)
    panel_id = page.evaluate(JS["lab_open"], rel)
    nb = page.locator(f"[id='{panel_id}']")  # this notebook's panel: locators never reach another tab
    problems, explorer_cells = check_stored(nb, rel, tag, shots)
    tofu_before = page.evaluate(JS["tofu"])
    state, found = run_all(page, rel)
    problems += found
    page.wait_for_timeout(300)  # let the last outputs render
    found, figures = check_figures(page, rel, state["cells"])
    problems += found
    found, explorers = check_explorers(nb, rel, explorer_cells, tag, shots, stats)
    problems += found
    if not rel.startswith("instructor/"):
        found, verdicts = check_verdicts(state["cells"])
        problems += found + check_folds(nb, verdicts, tag, shots)
    tofu_after = page.evaluate(JS["tofu"])
    problems += tofu_problems(tofu_before) + tofu_problems(tofu_after)
    stats["glyphs_checked"] += tofu_before["checked"] + tofu_after["checked"]
    final_screenshots(nb, tag, shots)
    close_notebook(page)
    assert not problems, f"{rel}:\n  - " + "\n  - ".join(problems)
    return {"seconds": state["elapsed"], "cells": len(state["cells"]), "figures": figures, "explorers": explorers}
