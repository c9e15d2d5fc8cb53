"""End-to-end test of the series in a real browser: JupyterLab 4 + headless Chromium (Debian's ``chromium``).

    .venv/bin/python tools/browser_test.py                 # what `make test-browser` runs
    .venv/bin/python tools/browser_test.py --only 02,06 --lang en --no-bench

For every notebook in ``notebooks/{en,zh}`` (the learner versions) and ``notebooks/instructor/{en,zh}`` (a copy
in a temporary folder; ``notebooks/`` is never touched), opened in the learner's lab (``jupyter-config/learner``,
the configuration ``make lab`` uses):

1. before running: no ``VBox(children=...`` text in the stored outputs (explorers show a short hint);
2. clear all outputs, Run All, time it (open -> every cell executed);
3. no error and no stderr output; every figure loaded and not upscaled (CSS size x devicePixelRatio <= the
   PNG's pixels);
4. every explorer (``.llm-lab-explorer``): controls, heatmap and readout all inside the notebook's visible
   area of a 1366x768 window at once, no cut label, and each enabled control (sliders through the keyboard,
   toggle buttons by a click) redraws the heatmap and the readout; int slider, float slider and toggle
   buttons are each exercised at least once over the run;
5. no glyph drawn as a box ("tofu"): every non-ASCII character of the page's text is drawn on a canvas in
   its element's font and compared with a character no font has (U+10FFFD); a positive control makes sure
   the comparison can fail;
6. learner versions: every checker says 🚧 (not written yet) after Run All, and each folded solution is closed
   until its summary is clicked, then shows its code.

Then the lab UI: ``make lab`` shows no nbgrader UI (the Nbgrader menu, the "Create Assignment" sidebar,
the notebook's "Validate" button) while ``make lab-instructor`` shows all three.

Screenshots go to ``build/browser/``; per-notebook times are printed and written to ``docs/benchmarks.md``
between ``<!-- browser:begin -->`` and ``<!-- browser:end -->``. Every process this script starts (the labs,
through their own PIDs / process groups; Chromium through Playwright) is stopped on exit, also on failure.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEARNER_CONFIG = ROOT / "jupyter-config" / "learner"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # needed as root (CI containers); harmless otherwise
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1366, "height": 768}
BENCH_BEGIN, BENCH_END = "<!-- browser:begin -->", "<!-- browser:end -->"
NB_TIMEOUT_S = 240


class Failure(AssertionError):
    pass


# ---------------------------------------------------------------------------------------------------------
# processes: every one started here is stopped by its own PID / process group, on every exit path

_STARTED: list[Lab] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server started by this script (directly or through make) in its own process group."""

    def __init__(self, name: str, cmd: list[str], env: dict, log: Path, port: int, token: str):
        self.name, self.port, self.token, self.log = name, port, token, log
        self.base = f"http://127.0.0.1:{port}"
        with log.open("w") as out:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        _STARTED.append(self)

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.base}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                self.api("/api/status")
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.5)
        raise Failure(f"{self.name} did not answer within {timeout:.0f} s:\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:  # the clean way: the server stops its kernels, then exits
                self.api("/api/shutdown", method="POST")
                self.proc.wait(timeout=20)
            except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
                pass
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)  # the group this script created for it (make + jupyter)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        if self in _STARTED:
            _STARTED.remove(self)


def _stop_all() -> None:
    for lab in list(_STARTED):
        lab.stop()


atexit.register(_stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks and atexit on a kill


def lab_env(tmp: Path, learner: bool, name: str) -> dict:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # the kernel must use the inline backend, as a learner's does
    env.pop("JUPYTER_CONFIG_PATH", None)
    if learner:
        env["JUPYTER_CONFIG_PATH"] = str(LEARNER_CONFIG)
    # a fresh lab: no saved workspace reopening tabs, no news or update pop-ups over the page
    settings = tmp / "settings"
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp / f"workspaces-{name}")  # each lab starts with no tab open
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    return env


def start_notebook_lab(tmp: Path, root_dir: Path) -> Lab:
    port, token = free_port(), os.urandom(12).hex()
    jupyter = Path(sys.executable).parent / "jupyter-lab"
    cmd = [str(jupyter), "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.token={token}", f"--ServerApp.root_dir={root_dir}", "--expose-app-in-browser"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    env = lab_env(tmp, learner=True, name="notebooks")
    lab = Lab("jupyter lab (learner config)", cmd, env, tmp / "lab.log", port, token)
    lab.wait_ready()
    return lab


def start_make_lab(target: str, tmp: Path, notebook_dir: Path) -> Lab:
    port, token = free_port(), os.urandom(12).hex()
    env = lab_env(tmp, learner=False, name=target)  # the target itself decides which configuration it uses
    env["JUPYTER_TOKEN"] = token
    cmd = ["make", "--no-print-directory", target, f"PORT={port}", f"NOTEBOOK_DIR={notebook_dir}"]
    lab = Lab(f"make {target}", cmd, env, tmp / f"{target}.log", port, token)
    lab.wait_ready(timeout=600)  # lab-instructor may first install nbgrader
    return lab


# ---------------------------------------------------------------------------------------------------------
# page-side helpers (JavaScript run in the lab page)

JS_OPEN = """async (path) => {
  const app = window.jupyterapp;
  const t0 = performance.now();
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  window.__panel = panel;
  window.__t0 = t0;
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  return panel.id;
}"""

JS_STATE = """() => {
  const panel = window.__panel;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = [];
  for (const cell of panel.content.widgets) {
    if (cell.model.type !== 'code') continue;
    const outputs = cell.model.outputs.toJSON();
    cells.push({
      source: cell.model.sharedModel.getSource(),
      count: cell.model.executionCount,
      running: cell.node.querySelector('.jp-InputArea-prompt') ?
        cell.node.querySelector('.jp-InputArea-prompt').textContent.includes('*') : false,
      outputs: outputs.map(o => ({
        type: o.output_type, name: o.name || null, mimes: o.data ? Object.keys(o.data) : [],
        text: o.output_type === 'error' ? (o.ename + ': ' + o.evalue) : [].concat(
          o.text || (o.data && o.data['text/plain']) || '').join('')})),
    });
  }
  return {kernel: kernel ? kernel.status : 'none', cells, elapsed: (performance.now() - window.__t0) / 1000};
}"""

JS_IMAGES = """() => {
  const out = [];
  for (const img of window.__panel.node.querySelectorAll('.jp-OutputArea-output img')) {
    img.scrollIntoView({block: 'center'});
    const r = img.getBoundingClientRect();
    out.push({complete: img.complete, natural: [img.naturalWidth, img.naturalHeight],
              shown: [r.width, r.height], dpr: window.devicePixelRatio,
              explorer: !!img.closest('.llm-lab-explorer')});
  }
  return out;
}"""

# the explorer's parts, and whether each lies inside the notebook's visible area right now
JS_EXPLORER_GEOMETRY = """(index) => {
  const root = window.__panel.node.querySelectorAll('.llm-lab-explorer')[index];
  const scroller = root.closest('.jp-WindowedPanel-outer') || window.__panel.content.node;
  const s = scroller.getBoundingClientRect();
  const view = {top: Math.max(s.top, 0), bottom: Math.min(s.bottom, window.innerHeight),
                left: Math.max(s.left, 0), right: Math.min(s.right, window.innerWidth)};
  const box = (el, what) => {
    const r = el.getBoundingClientRect();
    return {what, top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height,
            inside: r.width > 0 && r.height > 0 && r.top >= view.top - 1 && r.bottom <= view.bottom + 1 &&
                    r.left >= view.left - 1 && r.right <= view.right + 1};
  };
  const parts = [box(root, 'explorer')];
  const img = root.querySelector('img');
  if (img) parts.push(box(img, 'heatmap'));
  const readout = root.querySelector('.widget-output');
  if (readout) parts.push(box(readout, 'readout'));
  root.querySelectorAll('.widget-slider, .widget-toggle-buttons').forEach((c, i) => parts.push(box(c, 'control ' + i)));
  // a label is cut when its text needs more room than it has (text-overflow: ellipsis)
  const cut = [];
  root.querySelectorAll('.widget-toggle-button, .widget-label, .widget-readout, button').forEach(el => {
    if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1) cut.push(el.textContent.trim());
  });
  return {view, parts, cut, text: root.innerText};
}"""

JS_EXPLORER_CONTROLS = """(index) => {
  const root = window.__panel.node.querySelectorAll('.llm-lab-explorer')[index];
  const out = [];
  root.querySelectorAll('.widget-slider, .widget-toggle-buttons').forEach((c, i) => {
    const slider = c.classList.contains('widget-slider');
    const readout = c.querySelector('.widget-readout');
    const disabled = slider ? !!c.querySelector('[disabled]') || c.querySelector('.noUi-target[disabled]') !== null
                            : false;
    out.push({i, kind: slider ? 'slider' : 'toggle-buttons',
              label: (c.querySelector('.widget-label') || {}).textContent || '',
              value: readout ? readout.textContent.trim() : '', disabled});
  });
  return out;
}"""

JS_EXPLORER_PICTURE = """(index) => {
  const root = window.__panel.node.querySelectorAll('.llm-lab-explorer')[index];
  const img = root.querySelector('img');
  const readout = root.querySelector('.widget-output');
  return {src: img ? img.src : '', loaded: img ? img.complete && img.naturalWidth > 0 : false,
          readout: readout ? readout.innerText : ''};
}"""

# Tofu: draw each character in its element's font and compare it with a character no font has.
JS_TOFU = """() => {
  const root = window.__panel.node;
  const fonts = new Map();  // font -> Map(char -> example text)
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const el = node.parentElement;
    if (!el || el.closest('mjx-container, .MathJax, script, style')) continue;
    const cs = getComputedStyle(el);
    const font = `${cs.fontStyle} ${cs.fontWeight} 32px ${cs.fontFamily}`;
    for (const ch of node.data) {
      const cp = ch.codePointAt(0);
      if ((cp >= 0x20 && cp < 0x7f) || /\\s/u.test(ch) || /\\p{M}|\\p{Cf}|\\p{Cc}/u.test(ch)) continue;
      if (!fonts.has(font)) fonts.set(font, new Map());
      if (!fonts.get(font).has(ch)) fonts.get(font).set(ch, node.data.trim().slice(0, 60));
    }
  }
  const canvas = document.createElement('canvas');
  canvas.width = 96; canvas.height = 64;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = (font, s) => {
    ctx.clearRect(0, 0, 96, 64);
    ctx.font = font;
    ctx.fillStyle = '#000';
    ctx.fillText(s, 16, 44);
    const data = ctx.getImageData(0, 0, 96, 64).data;
    let h = 0;
    for (let i = 3; i < data.length; i += 4) h = (Math.imul(h, 31) + data[i] + i) | 0;
    return ctx.measureText(s).width.toFixed(2) + ':' + h;
  };
  const boxes = [];
  let checked = 0, control = true;
  for (const [font, chars] of fonts) {
    const missing = draw(font, '\\u{10FFFD}');
    // positive control: another character no font has must be caught, or this comparison proves nothing
    if (draw(font, '\\u{10FFFB}') !== missing || draw(font, 'A') === missing) control = false;
    for (const [ch, example] of chars) {
      checked += 1;
      if (draw(font, ch) === missing) {
        boxes.push({ch, code: 'U+' + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0'), font, example});
      }
    }
  }
  return {checked, fonts: fonts.size, boxes, control};
}"""


NO_NOTO_FONTCONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont><rejectfont><glob>*/noto/*</glob><glob>*Noto*</glob></rejectfont></selectfont>
</fontconfig>
"""


def tofu_self_test(pw, tmp: Path) -> None:
    """The box detector must flag Chinese and emoji when Chromium cannot see the Noto fonts, and pass them
    when it can: without this the check could never fail on a machine that has the fonts."""
    conf = tmp / "fonts-without-noto.conf"
    conf.write_text(NO_NOTO_FONTCONFIG)
    html = "<p>注意力 ✅ ❌ abc</p>"
    found = {}
    for label, extra in (("with Noto", {}), ("without Noto", {"FONTCONFIG_FILE": str(conf)})):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env={**os.environ, **extra})
        try:
            page = browser.new_page()
            page.set_content(html)
            page.evaluate("() => { window.__panel = {node: document.body}; }")
            result = page.evaluate(JS_TOFU)
            found[label] = {box["ch"] for box in result["boxes"]}
            if not result["control"]:
                raise Failure(f"tofu self-test ({label}): the positive control failed")
        finally:
            browser.close()
    if found["with Noto"]:
        raise Failure(f"glyphs drawn as boxes even with the Noto fonts: {sorted(found['with Noto'])} "
                      "(apt-get install fonts-noto-cjk fonts-noto-color-emoji)")
    if not {"注", "✅"} <= found["without Noto"]:
        raise Failure(f"tofu self-test: without the Noto fonts only {sorted(found['without Noto'])} were flagged; "
                      "the detector misses boxes")


# ---------------------------------------------------------------------------------------------------------
# one notebook


def wait_for(page, js: str, predicate, timeout: float, what: str, arg=None):
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = page.evaluate(js, arg) if arg is not None else page.evaluate(js)
        if predicate(value):
            return value
        time.sleep(0.1)
    raise Failure(f"timed out after {timeout:.0f} s waiting for {what}; last state: {str(value)[:1500]}")


def check_notebook(page, rel: str, shots: Path, stats: dict) -> dict:
    """Open, clear, Run All and check one notebook; returns its timings and counts."""
    tag = rel.replace("/", "-").removesuffix(".ipynb")
    problems: list[str] = []
    page.evaluate(JS_OPEN, rel)

    # 1. before running: the stored outputs as a learner first sees them
    before = page.evaluate(JS_STATE)
    stored = "\n".join(o["text"] for c in before["cells"] for o in c["outputs"])
    if "VBox(children" in stored or "HBox(children" in stored:
        problems.append("a stored output shows a bare VBox(children=...) text instead of a hint")
    explorer_cells = [c for c in before["cells"] if "_explorer(" in c["source"]]
    stored_hints = [c for c in explorer_cells if c["outputs"]]
    for cell in stored_hints:
        if not any("run this cell" in o["text"] for o in cell["outputs"]):
            problems.append(f"explorer cell stores no hint text: {[o['text'][:80] for o in cell['outputs']]}")
    if stored_hints:  # what a learner sees there before running: the hint, as plain text
        try:
            wait_for(page, """() => [...window.__panel.node.querySelectorAll('.jp-OutputArea-output')]
                                 .filter(e => e.textContent.includes('run this cell')).length""",
                     lambda n: n >= len(stored_hints), 20, f"{rel}: the explorers' hint text before running")
            hint = page.locator(".jp-OutputArea-output", has_text="run this cell").first
            scroll_to(page, hint)
            page.screenshot(path=str(shots / f"{tag}-before-run.png"))
        except Failure as err:
            problems.append(str(err))
    tofu_before = page.evaluate(JS_TOFU)

    # 2. clear all outputs, Run All
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    cleared = page.evaluate(JS_STATE)
    if any(c["outputs"] for c in cleared["cells"]):
        problems.append("outputs remained after Clear All Outputs")
    code = [c for c in cleared["cells"] if c["source"].strip()]
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def done(state):
        cells = [c for c in state["cells"] if c["source"].strip()]
        failed = any(o["type"] == "error" for c in cells for o in c["outputs"])
        finished = all(c["count"] is not None and not c["running"] for c in cells)
        return state["kernel"] == "idle" and (finished or failed)

    state = wait_for(page, JS_STATE, done, NB_TIMEOUT_S, f"{rel} to finish Run All")
    elapsed = state["elapsed"]
    cells = [c for c in state["cells"] if c["source"].strip()]
    if len(cells) != len(code):
        problems.append(f"{len(code)} code cells before running, {len(cells)} after")
    for i, cell in enumerate(cells):
        where = f"code cell {i} ({cell['source'].strip().splitlines()[0][:50]!r})"
        if cell["count"] is None:
            problems.append(f"{where}: not executed")
        for o in cell["outputs"]:
            if o["type"] == "error":
                problems.append(f"{where}: error {o['text'][:300]}")
            if o["type"] == "stream" and o["name"] == "stderr":
                problems.append(f"{where}: stderr {o['text'][:300]!r}")
    page.wait_for_timeout(300)  # let the last outputs render

    # 3. figures: loaded, not upscaled
    images = wait_for(page, JS_IMAGES, lambda imgs: all(i["complete"] and i["natural"][0] > 0 for i in imgs), 30,
                      f"{rel}: every figure to load")
    expected_pngs = sum("image/png" in o["mimes"] for c in cells for o in c["outputs"])
    figures = [i for i in images if not i["explorer"]]
    if len(figures) != expected_pngs:
        problems.append(f"{expected_pngs} PNG outputs but {len(figures)} figures on the page")
    for img in images:
        (nw, nh), (sw, sh), dpr = img["natural"], img["shown"], img["dpr"]
        if sw * dpr > nw + 1 or sh * dpr > nh + 1:
            problems.append(f"image upscaled: {nw}x{nh} px shown at {sw:.0f}x{sh:.0f} css px (dpr {dpr})")

    # 4. explorers
    explorers = page.locator(".llm-lab-explorer")
    wanted = sum(1 for c in explorer_cells)
    if wanted:
        wait_for(page, "() => window.__panel.node.querySelectorAll('.llm-lab-explorer img').length",
                 lambda n: n >= wanted, 30, f"{rel}: {wanted} explorer(s) to render")
    num_explorers = explorers.count()
    for index in range(num_explorers):
        problems += check_explorer(page, explorers.nth(index), index, f"{tag}-explorer{index}", shots, stats)

    # 6. learner versions: stubs run, checkers say "not written yet", solutions folded until clicked
    if not rel.startswith("instructor/"):
        problems += check_learner_version(page, cells, tag, shots)

    # 5. tofu, over the outputs before clearing and after running
    tofu_after = page.evaluate(JS_TOFU)
    for tofu in (tofu_before, tofu_after):
        if not tofu["control"]:
            problems.append("tofu check: the positive control failed (a missing glyph was not recognised)")
        for box in tofu["boxes"]:
            problems.append(f"glyph drawn as a box: {box['ch']} ({box['code']}) in {box['font']!r}, "
                            f"in {box['example']!r}")
    stats["glyphs_checked"] += tofu_after["checked"] + tofu_before["checked"]

    page.evaluate("() => window.__panel.content.scrollToItem ? window.__panel.content.scrollToItem(0) : null")
    page.evaluate("() => { const n = window.__panel.content.node; (n.closest('.jp-WindowedPanel-outer') || n)"
                  ".scrollTop = 0; }")
    page.wait_for_timeout(200)
    page.screenshot(path=str(shots / f"{tag}.png"))
    # a checker's verdict (✅ / ❌) on screen, to see the emoji font at work
    verdict = page.locator(".jp-OutputArea-output", has_text=re.compile("[✅❌]")).first
    if verdict.count():
        scroll_to(page, verdict)
        page.screenshot(path=str(shots / f"{tag}-checker.png"))

    close_notebook(page)
    if problems:
        raise Failure(f"{rel}:\n  - " + "\n  - ".join(problems))
    return {"seconds": elapsed, "cells": len(cells), "figures": len(figures), "explorers": num_explorers}


def check_learner_version(page, cells: list[dict], tag: str, shots: Path) -> list[str]:
    """The exercises as a learner meets them: each checker's verdict on the stub is 🚧, each solution is folded
    (its code hidden) and one click on its summary shows it."""
    problems = []
    verdicts = [c for c in cells if re.match(r"^check_\w+\(\w+\)$", c["source"].strip())]
    for c in verdicts:
        text = "".join(o["text"] for o in c["outputs"])
        if not text.startswith("🚧"):
            problems.append(f"{c['source'].strip()}: the verdict on the stub is {text[:120]!r}, not 🚧")
    opened = page.evaluate("() => [...window.__panel.node.querySelectorAll('.jp-MarkdownOutput details')]"
                           ".filter(d => d.open).length")
    if opened:
        problems.append(f"{opened} folded solution(s) or model answer(s) open before any click")
    folded = page.locator(".jp-MarkdownOutput details", has=page.locator("pre"))  # a solution: code inside
    if verdicts and not folded.count():
        return problems + ["exercises without a folded solution in the rendered notebook"]
    if not folded.count():
        return problems
    first = folded.first
    scroll_to(page, first)
    state = first.evaluate("d => ({open: d.open, code: d.querySelector('pre') ? "
                           "(d.querySelector('pre').checkVisibility() ? 1 : 0) : -1})")
    if state["open"] or state["code"] != 0:
        problems.append(f"a folded solution's code is visible before any click: {state}")
    first.locator("summary").click()
    page.wait_for_timeout(300)
    state = first.evaluate("d => ({open: d.open, code: d.querySelector('pre') ? "
                           "(d.querySelector('pre').checkVisibility() ? 1 : 0) : -1})")
    if not state["open"] or state["code"] != 1:
        problems.append(f"clicking a folded solution's summary did not show it: {state}")
    page.screenshot(path=str(shots / f"{tag}-solution-open.png"))
    return problems


def scroll_to(page, locator) -> None:
    # twice: cells above may only get their real height once they come near the view (content-visibility)
    for _ in range(2):
        locator.evaluate("el => el.scrollIntoView({block: 'center'})")
        page.wait_for_timeout(300)


def close_notebook(page) -> None:
    """Close the notebook and stop its kernel, so 14 kernels never run at once."""
    page.evaluate("""async () => {
      const panel = window.__panel;
      if (!panel || panel.isDisposed) return;
      window.__panel = null;
      await panel.sessionContext.shutdown();
      panel.context.model.dirty = false;
      panel.dispose();
    }""")


def load_lab(page, lab: Lab) -> None:
    page.goto(f"{lab.base}/lab?token={lab.token}", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=90_000)
    page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")


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
        geometry = page.evaluate(JS_EXPLORER_GEOMETRY, index)
        if all(p["inside"] for p in geometry["parts"]):
            break
    return geometry


def check_explorer(page, locator, index: int, tag: str, shots: Path, stats: dict) -> list[str]:
    problems = []
    geometry = settled_geometry(page, locator, index)
    outside = [p for p in geometry["parts"] if not p["inside"]]
    if outside:
        explorer = geometry["parts"][0]
        problems.append(
            f"explorer {index} not fully visible at {page.viewport_size}: {[p['what'] for p in outside]} outside "
            f"the notebook's visible area {geometry['view']} "
            f"(explorer {explorer['width']:.0f}x{explorer['height']:.0f} css px)")
    if geometry["cut"]:
        problems.append(f"explorer {index}: cut labels {geometry['cut']}")
    page.screenshot(path=str(shots / f"{tag}.png"))
    stats["explorers"].append({"tag": tag, "size": [round(geometry["parts"][0]["width"]),
                                                    round(geometry["parts"][0]["height"])]})

    controls = page.evaluate(JS_EXPLORER_CONTROLS, index)
    if not controls:
        problems.append(f"explorer {index}: no controls")
    for control in controls:
        if control["disabled"]:
            continue
        before = page.evaluate(JS_EXPLORER_PICTURE, index)
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
        try:
            wait_for(page, JS_EXPLORER_PICTURE,
                             lambda p, b=before: p["loaded"] and p["src"] != b["src"] and p["readout"].strip()
                             and p["readout"] != b["readout"],
                             20, f"explorer {index} to redraw after its {kind} {control['label']!r} changed", index)
        except Failure as err:
            problems.append(str(err))
            continue
        stats["controls"].add(kind)
    # still fits and is still sharp after the redraws (a longer title or other labels change the size)
    geometry = settled_geometry(page, locator, index)
    if any(not p["inside"] for p in geometry["parts"]):
        problems.append(f"explorer {index}: no longer fully visible after the controls changed")
    page.screenshot(path=str(shots / f"{tag}-changed.png"))
    return problems


# ---------------------------------------------------------------------------------------------------------
# the lab UI: no nbgrader for learners, nbgrader for instructors

JS_NBGRADER_UI = """() => {
  const texts = sel => [...document.querySelectorAll(sel)].map(e => (e.textContent || '').trim());
  const titles = sel => [...document.querySelectorAll(sel)].map(e => e.getAttribute('title') || '');
  return {
    menu: texts('.lm-MenuBar-itemLabel').includes('Nbgrader'),
    sidebar: texts('.lm-TabBar-tabLabel').includes('Create Assignment') ||
             titles('.lm-TabBar-tab').some(t => t.includes('Create Assignment')),
    validate: document.querySelector('.jp-NotebookPanel-toolbar .validate-button') !== null ||
              texts('.jp-NotebookPanel-toolbar .jp-ToolbarButtonComponent-label').includes('Validate'),
    notebook: document.querySelector('.jp-NotebookPanel-toolbar') !== null,
  };
}"""


def check_lab_ui(context, tmp: Path, shots: Path, notebook: str) -> dict:
    results = {}
    for target, expect in (("lab", False), ("lab-instructor", True)):
        lab = start_make_lab(target, tmp, tmp / "nb")
        page = context.new_page()
        try:
            page.goto(f"{lab.base}/lab/tree/{notebook}?token={lab.token}", wait_until="domcontentloaded")
            ui = wait_for(page, JS_NBGRADER_UI, lambda u, e=expect: u["notebook"] and u["menu"] and e or
                          (u["notebook"] and not e), 90, f"make {target}: a notebook to open")
            if not expect:
                page.wait_for_timeout(3000)  # give any extension time to add its UI; then look again
                ui = page.evaluate(JS_NBGRADER_UI)
            else:  # the toolbar button and the sidebar come a moment after the menu
                ui = wait_for(page, JS_NBGRADER_UI, lambda u: u["sidebar"] and u["validate"], 30,
                              f"make {target}: the nbgrader sidebar and Validate button")
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)  # the notebook drawn
            page.wait_for_timeout(500)
            page.screenshot(path=str(shots / f"make-{target}.png"))
            shown = {k: ui[k] for k in ("menu", "sidebar", "validate")}
            results[target] = shown
            if any(v != expect for v in shown.values()):
                raise Failure(f"make {target}: nbgrader UI (Nbgrader menu, Create Assignment sidebar, Validate "
                              f"button) should be {'present' if expect else 'absent'}, found {shown}")
            status = urllib.request.urlopen(f"{lab.base}/formgrader?token={lab.token}", timeout=10).status \
                if expect else _http_status(f"{lab.base}/formgrader?token={lab.token}")
            if (status == 200) != expect:
                raise Failure(f"make {target}: the formgrader server extension answers {status}")
        finally:
            page.close()
            lab.stop()
    return results


def _http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


# ---------------------------------------------------------------------------------------------------------
# report


def write_bench(path: Path, timings: dict, meta: dict) -> None:
    names = sorted({name for lang in timings for name in timings[lang]})
    langs = [lang for lang in ("en", "zh", "en (instructor)", "zh (instructor)") if lang in timings]
    lines = [
        BENCH_BEGIN,
        "## Notebooks in a real browser (`make test-browser`)",
        "",
        "Written by `tools/browser_test.py`; never edit the numbers by hand. JupyterLab "
        f"{meta['jupyterlab']} in headless {meta['chromium']}, window 1366x768, on {meta['cpus']} logical "
        f"cores ({meta['machine']}), load average {meta['load']}. Time from opening the notebook (kernel start "
        "included) to every cell executed after Clear All Outputs + Run All.",
        "",
        "Columns: the learner versions (what Colab and `make lab` open), then the instructor versions.",
        "",
        "| notebook | " + " | ".join(f"{lang} (s)" for lang in langs) + " |",
        "|---|" + "---:|" * len(langs),
    ]
    for name in names:
        cells = [f"{timings[lang][name]['seconds']:.1f}" if name in timings[lang] else "-" for lang in langs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"{sum(t['seconds'] for t in timings[lang].values()):.1f}" for lang in langs]
    lines += ["| total | " + " | ".join(totals) + " |", "", BENCH_END]
    section = "\n".join(lines)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if BENCH_BEGIN in text and BENCH_END in text:
        head, rest = text.split(BENCH_BEGIN, 1)
        text = head + section + rest.split(BENCH_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated notebook numbers, e.g. 02,06 (default: all)")
    parser.add_argument("--lang", choices=["en", "zh"], action="append", help="default: both")
    parser.add_argument("--versions", default="learner,instructor",
                        help="learner (notebooks/LANG), instructor (notebooks/instructor/LANG) or both (default)")
    parser.add_argument("--out", default="build/browser", help="screenshot folder (default build/browser)")
    parser.add_argument("--bench", default="docs/benchmarks.md", help="benchmark report to update")
    parser.add_argument("--no-bench", action="store_true", help="do not write the benchmark report")
    parser.add_argument("--no-lab-ui", action="store_true", help="skip the make lab / lab-instructor UI check")
    parser.add_argument("--viewport", default="1366x768", help="window size WxH (default 1366x768)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, copies)")
    args = parser.parse_args(argv)

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser_test: the playwright package is missing: pip install -r requirements-browser.txt",
              file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print(f"browser_test: no Chromium at {CHROMIUM} (Debian: apt-get install chromium; or set CHROMIUM=...)",
              file=sys.stderr)
        return 2

    langs = args.lang or ["en", "zh"]
    width, height = (int(v) for v in args.viewport.lower().split("x"))
    viewport = {"width": width, "height": height}
    only = set(args.only.split(",")) if args.only else None
    shots = ROOT / args.out
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    tmp = Path(tempfile.mkdtemp(prefix="llm-lab-browser-"))
    notebooks = []
    versions = {"learner": "", "instructor": "instructor/"}
    for version in args.versions.split(","):
        if version not in versions:
            print(f"browser_test: --versions: unknown {version!r}, use learner, instructor or both", file=sys.stderr)
            return 2
        for lang in langs:
            prefix = versions[version] + lang
            (tmp / "nb" / prefix).mkdir(parents=True)
            for path in sorted((ROOT / "notebooks" / prefix).glob("*.ipynb")):
                if only and path.name[:2] not in only:
                    continue
                shutil.copy2(path, tmp / "nb" / prefix / path.name)
                notebooks.append(f"{prefix}/{path.name}")
    if not notebooks:
        print("browser_test: no notebook selected", file=sys.stderr)
        return 2

    timings: dict[str, dict] = {lang: {} for lang in langs}
    stats = {"controls": set(), "explorers": [], "glyphs_checked": 0}
    failures: list[str] = []
    lab = None
    started = time.monotonic()
    load_start = os.getloadavg()[0]
    try:
        lab = start_notebook_lab(tmp, tmp / "nb")
        with sync_playwright() as pw:
            tofu_self_test(pw, tmp)
            print("browser_test: box detector self-test (flags Chinese and emoji without the Noto fonts): OK")
            context = pw.chromium.launch_persistent_context(
                str(tmp / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport=viewport, device_scale_factor=1, locale="en-US",
            )
            try:
                chromium_version = context.browser.version if context.browser else "?"
                page = context.new_page()
                load_lab(page, lab)
                for rel in notebooks:
                    *where, name = rel.split("/")
                    column = " ".join(reversed(where)).replace("instructor", "(instructor)")
                    try:
                        result = check_notebook(page, rel, shots, stats)
                        timings.setdefault(column, {})[name.removesuffix(".ipynb")] = result
                        print(f"browser_test: {rel}: {result['seconds']:.1f} s open -> all executed, "
                              f"{result['cells']} code cells, {result['figures']} figures, "
                              f"{result['explorers']} explorer(s): OK", flush=True)
                    except Failure as err:
                        failures.append(str(err))
                        print(f"browser_test: FAIL {err}", flush=True)
                        page.screenshot(path=str(shots / f"{rel.replace('/', '-')}-FAILED.png"))
                        try:  # start the next notebook from a clean lab
                            close_notebook(page)
                        except Exception as close_error:  # noqa: BLE001 - a broken page is reloaded anyway
                            print(f"browser_test: closing {rel} failed: {close_error}", flush=True)
                        load_lab(page, lab)
                page.close()
                lab.stop()
                if not args.no_lab_ui:
                    try:
                        ui = check_lab_ui(context, tmp, shots, notebooks[0])
                        print(f"browser_test: nbgrader UI (menu, sidebar, Validate): {ui}: OK", flush=True)
                    except Failure as err:
                        failures.append(str(err))
                        print(f"browser_test: FAIL {err}", flush=True)
            finally:
                context.close()
        if only is None and {"int-slider", "float-slider", "toggle-buttons"} - stats["controls"]:
            failures.append(f"control types exercised: {sorted(stats['controls'])}; expected int slider, float "
                            "slider and toggle buttons")
        sizes = ", ".join(f"{e['tag']} {e['size'][0]}x{e['size'][1]}" for e in stats["explorers"])
        print(f"browser_test: {len(notebooks)} notebooks, {len(stats['explorers'])} explorers ({sizes}), "
              f"controls exercised: {sorted(stats['controls'])}, {stats['glyphs_checked']} glyphs checked for "
              f"boxes, {time.monotonic() - started:.0f} s in all; screenshots in {shots.relative_to(ROOT)}/")
        if not args.no_bench and not failures and only is None and len(langs) == 2 and viewport == VIEWPORT:
            import jupyterlab

            meta = {"jupyterlab": jupyterlab.__version__, "chromium": f"Chromium {chromium_version}",
                    "cpus": os.cpu_count(), "machine": f"{platform.system()} {platform.machine()}",
                    "load": f"{load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"}
            write_bench(ROOT / args.bench, timings, meta)
            print(f"browser_test: timings written to {args.bench}")
    finally:
        if lab is not None:
            lab.stop()
        _stop_all()
        if args.keep:
            print(f"browser_test: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"browser_test: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("browser_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
