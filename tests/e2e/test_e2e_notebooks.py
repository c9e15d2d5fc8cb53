"""Every notebook, learner (notebooks/LANG) and instructor (notebooks/instructor/LANG) versions, both languages,
in the learner's JupyterLab (jupyter-config/learner, what `make lab` uses) in headless Chromium at 1366x768.

test_box_detector: the glyph-box ("tofu") detector flags Chinese and emoji when Chromium cannot see the Noto
fonts and passes them when it can (without it the check could never fail on a machine that has the fonts).
test_notebook[<path>]: one test per notebook and version (e2e_notebook.check_notebook says what it checks):
Run All without error or stderr, figures loaded and not upscaled, explorers fully visible and live, no glyph
drawn as a box, and in learner versions 🚧 on every stub and solution folds closed until clicked.
test_explorer_control_kinds: over a full run, an int slider, a float slider and toggle buttons each exercised.

Screenshots go to build/browser/ (<path>-FAILED.png on a failure, after which the lab page is reloaded for the
next notebook). A full run with every notebook passing writes the timings to docs/benchmarks.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_bench import column_of, machine, write_bench
from e2e_js import JS
from e2e_lab import ROOT, close_notebook, failed, load_lab, start_notebook_lab
from e2e_notebook import check_notebook, tag_of

VERSIONS = ("en", "zh", "instructor/en", "instructor/zh")
NOTEBOOKS = [
    f"{folder}/{path.name}" for folder in VERSIONS for path in sorted((ROOT / "notebooks" / folder).glob("*.ipynb"))
]
CONTROL_KINDS = {"int-slider", "float-slider", "toggle-buttons"}
NO_NOTO_FONTCONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont><rejectfont><glob>*/noto/*</glob><glob>*Noto*</glob></rejectfont></selectfont>
</fontconfig>
"""


def boxes_drawn(browser_type, launch_args: dict, env: dict) -> tuple[set[str], bool]:
    """The characters of a test line drawn as boxes in a Chromium with `env`, and the positive control."""
    browser = browser_type.launch(**launch_args, env={**os.environ, **env})
    try:
        page = browser.new_page()
        page.set_content("<p>注意力 ✅ ❌ abc</p>")
        page.evaluate("() => { window.__panel = {node: document.body}; }")
        result = page.evaluate(JS["tofu"])
        return {box["ch"] for box in result["boxes"]}, result["control"]
    finally:
        browser.close()


def test_box_detector(browser_type, browser_type_launch_args, tmp_path):
    conf = tmp_path / "fonts-without-noto.conf"
    conf.write_text(NO_NOTO_FONTCONFIG)
    with_noto, control = boxes_drawn(browser_type, browser_type_launch_args, {})
    assert control, "tofu self-test (with Noto): the positive control failed"
    assert not with_noto, (
        f"glyphs drawn as boxes even with the Noto fonts: {sorted(with_noto)} "
        "(apt-get install fonts-noto-cjk fonts-noto-color-emoji)"
    )
    without, control = boxes_drawn(browser_type, browser_type_launch_args, {"FONTCONFIG_FILE": str(conf)})
    assert control, "tofu self-test (without Noto): the positive control failed"
    assert {"注", "✅"} <= without, (
        f"tofu self-test: without the Noto fonts only {sorted(without)} were flagged; the detector misses boxes"
    )


@pytest.fixture(scope="module")
def notebook_lab(notebook_copies, tmp_path_factory):
    lab = start_notebook_lab(tmp_path_factory.mktemp("lab"), notebook_copies)
    yield lab
    lab.stop()


@pytest.fixture(scope="module")
def lab_tab(browser, browser_context_args, notebook_lab):
    """One page on the lab for all the notebooks (each closed, its kernel stopped, after its test)."""
    context = browser.new_context(**browser_context_args)
    page = context.new_page()
    load_lab(page, notebook_lab)
    yield page
    context.close()


@pytest.fixture
def lab_page(lab_tab, notebook_lab, request, browser_shots):
    """The lab page; after a failure: a screenshot, then the notebook closed and the lab reloaded."""
    yield lab_tab
    if failed(request):
        rel = request.node.callspec.params["rel"]
        try:
            lab_tab.screenshot(path=str(browser_shots / f"{tag_of(rel)}-FAILED.png"))
            close_notebook(lab_tab)
        finally:  # a broken page is reloaded anyway
            load_lab(lab_tab, notebook_lab)


@pytest.fixture(scope="module")
def run_stats(browser, e2e_summary):
    """What the notebook tests found over the run; the summary lines, and the timings on a full run."""
    stats = {"controls": set(), "explorers": [], "glyphs_checked": 0, "ran": set(), "timings": {}}
    load_start = os.getloadavg()[0]
    yield stats
    sizes = ", ".join(f"{e['tag']} {e['size'][0]}x{e['size'][1]}" for e in stats["explorers"])
    e2e_summary.append(
        f"{len(stats['ran'])} notebooks, {len(stats['explorers'])} explorers ({sizes}), controls "
        f"exercised: {sorted(stats['controls'])}, {stats['glyphs_checked']} glyphs checked for "
        "boxes; screenshots in build/browser/"
    )
    passed = sum(len(column) for column in stats["timings"].values())
    if passed == len(NOTEBOOKS):
        import jupyterlab

        write_bench(
            ROOT / "docs" / "benchmarks.md",
            stats["timings"],
            machine(jupyterlab.__version__, browser.version, load_start),
        )
        e2e_summary.append("timings written to docs/benchmarks.md")


@pytest.mark.parametrize("rel", NOTEBOOKS, ids=[rel.removesuffix(".ipynb") for rel in NOTEBOOKS])
def test_notebook(lab_page, rel, run_stats, browser_shots, e2e_summary):
    run_stats["ran"].add(rel)
    result = check_notebook(lab_page, rel, browser_shots, run_stats)
    run_stats["timings"].setdefault(column_of(rel), {})[Path(rel).stem] = result["seconds"]
    e2e_summary.append(
        f"{rel}: {result['seconds']:.1f} s open -> all executed, {result['cells']} code cells, "
        f"{result['figures']} figures, {result['explorers']} explorer(s)"
    )


def test_explorer_control_kinds(run_stats):
    if len(run_stats["ran"]) < len(NOTEBOOKS):
        pytest.skip(f"needs every notebook checked in this run ({len(run_stats['ran'])} of {len(NOTEBOOKS)})")
    assert CONTROL_KINDS <= run_stats["controls"], (
        f"control kinds exercised: {sorted(run_stats['controls'])}; expected {sorted(CONTROL_KINDS)}"
    )
