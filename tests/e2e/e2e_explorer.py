"""One explorer (an ``.llm-lab-explorer`` widget) in the lab page, after Run All: fully visible at once in the
notebook's visible area, no cut label, and live: each enabled control (sliders through the keyboard, toggle
buttons by a click) redraws the heatmap and the readout."""

from __future__ import annotations

from pathlib import Path

from e2e_js import JS
from e2e_lab import LabError, wait_for


def settled_geometry(page, locator, index: int) -> dict:
    """Scroll the explorer to the top of the view and measure it, until the layout stops moving.

    JupyterLab renders cells lazily: cells above may take their real height only once the view is near
    them, shifting the explorer after a scroll (seen on a loaded machine). Up to four tries; the last
    measurement stands, so an explorer that does not fit still fails.
    """
    geometry = None
    for _ in range(4):
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        geometry = page.evaluate(JS["explorer_geometry"], index)
        if all(p["inside"] for p in geometry["parts"]):
            break
    return geometry


def geometry_problems(page, geometry: dict, index: int) -> list[str]:
    problems = []
    outside = [p for p in geometry["parts"] if not p["inside"]]
    if outside:
        explorer = geometry["parts"][0]
        problems.append(
            f"explorer {index} not fully visible at {page.viewport_size}: {[p['what'] for p in outside]} outside "
            f"the notebook's visible area {geometry['view']} "
            f"(explorer {explorer['width']:.0f}x{explorer['height']:.0f} css px)"
        )
    if geometry["cut"]:
        problems.append(f"explorer {index}: cut labels {geometry['cut']}")
    return problems


def exercise_control(page, locator, index: int, control: dict) -> str:
    """Change one control; returns its kind once the heatmap and the readout have redrawn (LabError if not)."""
    before = page.evaluate(JS["explorer_picture"], index)
    element = locator.locator(".widget-slider, .widget-toggle-buttons").nth(control["i"])
    if control["kind"] == "slider":
        kind = "float-slider" if "." in control["value"] else "int-slider"
        handle = element.locator(".noUi-handle").first
        now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
        handle.focus()
        page.keyboard.press("ArrowLeft" if now is not None and now == top else "ArrowRight")
    else:
        kind = "toggle-buttons"
        element.locator(".widget-toggle-button:not(.mod-active)").first.click()

    def redrawn(p):
        return p["loaded"] and p["src"] != before["src"] and p["readout"].strip() and p["readout"] != before["readout"]

    wait_for(
        page,
        JS["explorer_picture"],
        redrawn,
        20,
        f"explorer {index} to redraw after its {kind} {control['label']!r} changed",
        index,
    )
    return kind


def check_explorer(page, locator, index: int, tag: str, shots: Path, stats: dict) -> list[str]:
    """The problems found with explorer `index`; its control kinds exercised go into stats["controls"]."""
    geometry = settled_geometry(page, locator, index)
    problems = geometry_problems(page, geometry, index)
    page.screenshot(path=str(shots / f"{tag}.png"))
    stats["explorers"].append(
        {"tag": tag, "size": [round(geometry["parts"][0]["width"]), round(geometry["parts"][0]["height"])]}
    )
    controls = page.evaluate(JS["explorer_controls"], index)
    if not controls:
        problems.append(f"explorer {index}: no controls")
    for control in controls:
        if control["disabled"]:
            continue
        try:
            stats["controls"].add(exercise_control(page, locator, index, control))
        except LabError as err:
            problems.append(str(err))
    # still fits after the redraws (a longer title or other labels change the size)
    geometry = settled_geometry(page, locator, index)
    if any(not p["inside"] for p in geometry["parts"]):
        problems.append(f"explorer {index}: no longer fully visible after the controls changed")
    page.screenshot(path=str(shots / f"{tag}-changed.png"))
    return problems
