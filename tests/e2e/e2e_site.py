"""The static site (build/site/) for test_e2e_site.py: a local server, a crawl from the language chooser, and
what every page must show. Plain Python on site/course_site.py (no Sphinx), so it runs in .venv-site."""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections import deque
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urlparse

from e2e_js import JS

from tools import course

ROOT = course.ROOT
cs = course.site_module()

LOAD_TIMEOUT_MS = 30_000


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # the browser left a page mid-download
            super().handle_error(request, client_address)


def serve(directory: Path) -> ThreadingHTTPServer:
    """`directory` on a free loopback port, in a thread of this process (stopped by server.shutdown())."""
    server = QuietServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def notebook(lang: str, stem: str) -> dict:
    return json.loads((cs.NOTEBOOKS / lang / f"{stem}.ipynb").read_text(encoding="utf-8"))


def solution_cells(lang: str, stem: str) -> int:
    cells = notebook(lang, stem)["cells"]
    return sum(cs.SOLUTION_TAG in c["metadata"].get("tags", []) for c in cells if c["cell_type"] == "code")


def stored_outputs(lang: str, stem: str) -> tuple[int, int]:
    """(image outputs, explorer outputs) stored in notebooks/<lang>/<stem>.ipynb."""
    outs = [o.get("data", {}) for c in notebook(lang, stem)["cells"] for o in c.get("outputs", [])]
    widgets = sum(cs.WIDGET_MIME in d for d in outs)
    images = sum(any(k.startswith("image/") for k in d) for d in outs if cs.WIDGET_MIME not in d)
    return images, widgets


def site_path(url: str, base: str) -> str | None:
    """The path of `url` inside the site, or None for a link elsewhere (e.g. Colab)."""
    return urlparse(url).path if url.startswith(base) else None


def wait_for_math(page) -> None:
    """Until MathJax has typeset the page."""
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate(JS["site_math_typeset"])


class Guard:
    """On a context: every failed request, HTTP error and request off the server (aborted: the site must work
    offline) goes into `problems`."""

    def __init__(self, context, base: str):
        self.base, self.problems = base, []
        context.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url} ({r.failure})"))
        context.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))
        context.route("**/*", self.route)

    def route(self, route) -> None:
        if route.request.url.startswith(self.base):
            route.continue_()
        else:
            self.problems.append(f"request off the site: {route.request.url}")
            route.abort()


def visit(page, base: str, path: str) -> dict:
    page.goto(base.rstrip("/") + path, wait_until="load", timeout=LOAD_TIMEOUT_MS)
    if page.evaluate("document.querySelector('.math') !== null"):
        wait_for_math(page)
    facts = page.evaluate(JS["site_page_facts"])
    page.wait_for_load_state("networkidle")  # fonts MathJax asked for while typesetting
    return facts


def crawl(context, guard: Guard, base: str) -> dict[str, dict]:
    """Every page reachable by a link from /index.html: path -> {"facts": ..., "errors": [...]}, where errors
    are the console and page errors and the guard's problems while it loaded."""
    seen, queue, pages = {"/index.html"}, deque(["/index.html"]), {}
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    while queue:
        path = queue.popleft()
        guard.problems.clear()
        errors.clear()
        facts = visit(page, base, path)
        pages[path] = {"facts": facts, "errors": list(dict.fromkeys(guard.problems + errors))}
        for url in facts["links"] + facts["assets"]:
            inside = site_path(urldefrag(url)[0], base)
            if inside is not None and inside.endswith("/"):
                inside += "index.html"
            if inside is not None and inside.endswith(".html") and inside not in seen:
                seen.add(inside)
                queue.append(inside)
    page.close()
    return pages


def link_problems(pages: dict[str, dict], base: str) -> list[str]:
    """Links to neither the site nor https, internal files missing, fragments with no element of that id."""
    ids = {path: set(visit["facts"]["ids"]) for path, visit in pages.items()}
    problems = []
    for path, visit in pages.items():
        for url in visit["facts"]["links"] + visit["facts"]["assets"]:
            target, fragment = urldefrag(url)
            inside = site_path(target, base)
            if inside is None:
                if not url.startswith("https://"):
                    problems.append(f"{path}: link to neither the site nor https: {url}")
                continue
            inside += "index.html" if inside.endswith("/") else ""
            if fragment and fragment not in ids.get(inside, set()):
                problems.append(f"{path}: broken anchor: {inside}#{fragment}")
            if not inside.endswith(".html") and not (cs.SITE_OUT / inside.lstrip("/")).is_file():
                problems.append(f"{path}: broken link: {url}")
    return list(dict.fromkeys(problems))


def page_problems(path: str, facts: dict, base: str) -> list[str]:
    """What any page must show: math typeset, no raw delimiter, images loaded, no widget text; then the
    language switch (language pages) and the notebook page checks."""
    problems = []
    if facts["math"] != facts["mathRendered"]:
        problems.append(f"{facts['math'] - facts['mathRendered']} of {facts['math']} math elements not typeset")
    problems += [
        f"raw math delimiter {raw!r} left in the text" for raw in ("$$", "\\(", "\\[") if raw in facts["proseText"]
    ]
    problems += [f"image not loaded: {img['src']}" for img in facts["images"] if not img["ok"]]
    if "VBox(children" in facts["bodyText"]:
        problems.append("a widget's text stand-in is shown")
    parts = path.strip("/").split("/")
    if len(parts) != 2 or parts[0] not in cs.LANG_BY_CODE:
        return problems  # the language chooser
    code, name = parts[0], parts[1].removesuffix(".html")
    twin = f"/{cs.other(code).code}/{name}.html"
    switch = {site_path(u, base) for u in facts["langSwitch"]}  # at the top of the article and in the sidebar
    if switch != {twin}:
        problems.append(f"language switch leads to {sorted(map(str, switch))}, expected {twin!r}")
    if facts["langSwitchVisible"] != 1:
        problems.append(f"{facts['langSwitchVisible']} language switches visible")
    if name in cs.pages(code)[1:]:
        problems += notebook_page_problems(code, name, facts, base)
    return problems


def notebook_page_problems(code: str, name: str, facts: dict, base: str) -> list[str]:
    """A notebook's page: prev/next in series order, its Colab badge, one figure per stored image output, one
    note per stored explorer, the solutions and the Colab setup cell folded."""
    stems = cs.pages(code)[1:]
    i = stems.index(name)
    want_prev = [f"/{code}/{stems[i - 1] if i else 'index'}.html"]
    want_next = [f"/{code}/{stems[i + 1]}.html"] if i + 1 < len(stems) else []
    problems = []
    if [site_path(u, base) for u in facts["prev"]] != want_prev:
        problems.append(f"prev link {facts['prev']}, expected {want_prev}")
    if [site_path(u, base) for u in facts["next"]] != want_next:
        problems.append(f"next link {facts['next']}, expected {want_next}")
    colab = facts["colab"]
    if not (len(colab) == 1 and colab[0]["ok"] and colab[0]["href"].endswith(f"/notebooks/{code}/{name}.ipynb")):
        problems.append(f"Colab badge: {colab}")
    images, widgets = stored_outputs(code, name)
    if facts["outputImages"] != images:
        problems.append(f"{facts['outputImages']} output images shown, {images} stored")
    if facts["explorerNotes"] != widgets:
        problems.append(f"{facts['explorerNotes']} explorer notes shown, {widgets} explorers stored")
    folds = solution_cells(code, name) + 1  # and the Colab setup cell
    if facts["folded"] != folds:
        problems.append(f"{facts['folded']} folded cells, expected {folds} (the solutions and the Colab setup cell)")
    return problems
