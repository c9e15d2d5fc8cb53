"""Browser test of the static site (``make test-site``; runs in .venv-site after ``make site``).

Serves build/site/ on a free loopback port and drives Debian's headless Chromium through Playwright
(no browser download). Starting from the language chooser it crawls every page reachable by a link and
requires, on each:
- no console error, no failed request, no request off this server (the site works offline);
- every internal link and fragment resolves; every <img> loaded (naturalWidth > 0);
- math typeset by the local MathJax, no raw `$$` or `\\(` left in the prose;
- a language switch that leads to the same page in the other language;
and on each notebook page: its Colab badge, one figure per stored image output, one note per stored
explorer (and no widget text), solutions and the setup cell folded, prev/next links in series order.
Then: a click on the switch there and back, a search per language, a notebook and a search opened as
file:// URLs (no server) without an error. Screenshots go to build/site-screens/.

Usage: python tools/site_test.py [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "site"))

import course_site as cs  # noqa: E402

SCREENS = cs.BUILD / "site-screens"
VIEWPORT = {"width": 1366, "height": 768}
NARROW = {"width": 760, "height": 900}
CHROMIUM_FLAGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOAD_TIMEOUT_MS = 30_000

# Page facts gathered in the browser after load (and after MathJax has typeset the page).
PAGE_FACTS_JS = """() => {
  const article = document.querySelector('article') || document.body;
  const prose = article.cloneNode(true);
  prose.querySelectorAll('pre, code, .highlight, script, .cell_output').forEach(e => e.remove());
  const maths = [...document.querySelectorAll('.math')];
  const abs = a => a.href;
  // Shown and inside the viewport (a closed sidebar drawer sits off-screen to the left).
  const onScreen = e => { const r = e.getBoundingClientRect();
                          return e.checkVisibility() && r.width > 0 && r.right > 0 && r.left < innerWidth; };
  return {
    links: [...document.querySelectorAll('a[href]')].map(abs),
    assets: [...document.querySelectorAll('img[src], link[href], script[src]')]
              .map(e => e.src || e.href),
    ids: [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name),
    images: [...document.querySelectorAll('img')]
              .map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
    outputImages: document.querySelectorAll('.cell_output img').length,
    explorerNotes: document.querySelectorAll('.cell_output .explorer-note').length,
    folded: document.querySelectorAll('details.hide.above-input:not([open])').length,
    math: maths.length,
    mathRendered: maths.filter(m => m.querySelector('mjx-container') && !m.querySelector('mjx-merror')).length,
    proseText: prose.innerText,
    bodyText: document.body.innerText,
    langSwitch: [...document.querySelectorAll('a.lang-switch-link')].map(abs),
    langSwitchVisible: [...document.querySelectorAll('a.lang-switch-link')].filter(onScreen).length,
    prev: [...document.querySelectorAll('a.prev-page')].map(abs),
    next: [...document.querySelectorAll('a.next-page')].map(abs),
    colab: [...document.querySelectorAll('a[href^="https://colab.research.google.com/"] img')]
             .map(i => ({href: i.closest('a').href, ok: i.complete && i.naturalWidth > 0})),
  };
}"""


def wait_for_math(page) -> None:
    """Until MathJax has typeset the page (its startup promise settles after the first typeset)."""
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => { MathJax.startup.promise.then(() => { window.__typeset = true; }); }")
    page.wait_for_function("() => window.__typeset === true")


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)   # the pages (or global checks) with a problem
    checked: set[str] = field(default_factory=set)  # every page and global check
    pages: int = 0

    def check(self, ok: bool, where: str, what: str) -> None:
        self.checked.add(where)
        if not ok:
            self.failed.add(where)
        if not ok and f"{where}: {what}" not in self.problems:  # a resource requested twice fails twice
            self.problems.append(f"{where}: {what}")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # the browser left a page mid-download
            super().handle_error(request, client_address)


def serve(directory: Path) -> ThreadingHTTPServer:
    """build/site on a free loopback port, in a thread of this process (stopped by server.shutdown())."""
    server = QuietServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def solution_cells(lang: str, stem: str) -> int:
    nb = json.loads((cs.NOTEBOOKS / lang / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return sum(cs.SOLUTION_TAG in c["metadata"].get("tags", []) for c in nb["cells"] if c["cell_type"] == "code")


def stored_outputs(lang: str, stem: str) -> tuple[int, int]:
    """(image outputs, explorer outputs) stored in notebooks/<lang>/<stem>.ipynb."""
    nb = json.loads((cs.NOTEBOOKS / lang / f"{stem}.ipynb").read_text(encoding="utf-8"))
    outs = [o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", [])]
    widgets = sum(cs.WIDGET_MIME in d for d in outs)
    images = sum(any(k.startswith("image/") for k in d) for d in outs if cs.WIDGET_MIME not in d)
    return images, widgets


def site_path(url: str, base: str) -> str | None:
    """The path of `url` inside the site, or None for a link elsewhere (e.g. Colab)."""
    return urlparse(url).path if url.startswith(base) else None


def check_page(report: Report, path: str, facts: dict, base: str) -> None:
    report.check(facts["math"] == facts["mathRendered"], path,
                 f"{facts['math'] - facts['mathRendered']} of {facts['math']} math elements not typeset")
    for raw in ("$$", "\\(", "\\["):
        report.check(raw not in facts["proseText"], path, f"raw math delimiter {raw!r} left in the text")
    for img in facts["images"]:
        report.check(img["ok"], path, f"image not loaded: {img['src']}")
    report.check("VBox(children" not in facts["bodyText"], path, "a widget's text stand-in is shown")
    parts = path.strip("/").split("/")
    if len(parts) != 2 or parts[0] not in cs.LANG_BY_CODE:
        return  # the language chooser
    code, page = parts[0], parts[1].removesuffix(".html")
    twin = f"/{cs.other(code).code}/{page}.html"
    switch = {site_path(u, base) for u in facts["langSwitch"]}  # at the top of the article and in the sidebar
    report.check(switch == {twin}, path, f"language switch leads to {sorted(map(str, switch))}, expected {twin!r}")
    report.check(facts["langSwitchVisible"] == 1, path, f"{facts['langSwitchVisible']} language switches visible")
    stems = cs.pages(code)[1:]
    if page not in stems:
        return
    i = stems.index(page)
    want_prev = [f"/{code}/{stems[i - 1] if i else 'index'}.html"]
    want_next = [f"/{code}/{stems[i + 1]}.html"] if i + 1 < len(stems) else []
    report.check([site_path(u, base) for u in facts["prev"]] == want_prev, path, f"prev link {facts['prev']}")
    report.check([site_path(u, base) for u in facts["next"]] == want_next, path, f"next link {facts['next']}")
    report.check(len(facts["colab"]) == 1 and facts["colab"][0]["ok"]
                 and facts["colab"][0]["href"].endswith(f"/notebooks/{code}/{page}.ipynb"),
                 path, f"Colab badge: {facts['colab']}")
    images, widgets = stored_outputs(code, page)
    report.check(facts["outputImages"] == images, path,
                 f"{facts['outputImages']} output images shown, {images} stored")
    report.check(facts["explorerNotes"] == widgets, path,
                 f"{facts['explorerNotes']} explorer notes shown, {widgets} explorers stored")
    folds = solution_cells(code, page) + 1  # and the Colab setup cell
    report.check(facts["folded"] == folds, path, f"{facts['folded']} folded cells, expected {folds}"
                 " (the solutions and the Colab setup cell)")


def screenshot(page, name: str, selector: str | None = None) -> None:
    page.add_style_tag(content=".back-to-top { display: none !important; }")  # it floats over the text
    if selector:
        target = page.locator(selector).first
        if target.count():
            target.scroll_into_view_if_needed()
            page.evaluate("() => window.scrollBy(0, -120)")
    page.screenshot(path=str(SCREENS / f"{name}.png"))


def take_screens(report: Report, context, base: str) -> None:
    """A few pages in both languages: contents, a notebook top, math, a figure, an explorer, a folded solution."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    page = context.new_page()
    page.goto(base + "index.html")
    screenshot(page, "chooser")
    stems = cs.pages("en")[1:]
    with_math = next((s for s in stems if "$" in (cs.NOTEBOOKS / "en" / f"{s}.ipynb").read_text()), stems[0])
    with_explorer = next((s for s in stems if stored_outputs("en", s)[1]), stems[0])
    with_figure = next((s for s in stems if stored_outputs("en", s)[0]), stems[0])
    with_exercise = next((s for s in stems if solution_cells("en", s)), stems[0])
    for lang in cs.LANGS:
        page.goto(f"{base}{lang.code}/index.html")
        screenshot(page, f"{lang.code}-index")
        page.goto(f"{base}{lang.code}/{with_math}.html")
        wait_for_math(page)
        screenshot(page, f"{lang.code}-{with_math}-top")
        display = "article div.math" if page.locator("article div.math").count() else "article .math"
        screenshot(page, f"{lang.code}-{with_math}-math", display)
        page.goto(f"{base}{lang.code}/{with_figure}.html")
        screenshot(page, f"{lang.code}-{with_figure}-figure", ".cell_output img")
        page.goto(f"{base}{lang.code}/{with_explorer}.html")
        screenshot(page, f"{lang.code}-{with_explorer}-explorer", ".explorer-note")
        page.goto(f"{base}{lang.code}/{with_exercise}.html")
        screenshot(page, f"{lang.code}-{with_exercise}-solution", "details.hide.above-input")
    page.set_viewport_size(NARROW)  # the sidebar folds away: the switch moves to the top of the article
    page.goto(f"{base}zh/{with_math}.html")
    wait_for_math(page)
    screenshot(page, f"zh-{with_math}-narrow")
    facts = page.evaluate(PAGE_FACTS_JS)
    report.check(facts["langSwitchVisible"] == 1 and facts["langSwitch"][0].endswith(f"/en/{with_math}.html"),
                 f"/zh/{with_math}.html at {NARROW['width']}px", f"{facts['langSwitchVisible']} switches visible")
    page.close()


# A term shared by both languages and a word of the language itself (Chinese needs the jieba word cutter).
SEARCH_WORDS = {"en": ("softmax", "attention"), "zh": ("softmax", "注意力")}


def has_results(page, timeout_ms: int = 10_000) -> bool:
    try:
        page.wait_for_selector("ul.search li", timeout=timeout_ms)
        return True
    except Exception:  # Playwright's TimeoutError
        return False


def search_works(report: Report, context, base: str) -> None:
    """Sphinx's client-side search finds words in every language's notebooks."""
    page = context.new_page()
    for lang in cs.LANGS:
        for word in SEARCH_WORDS[lang.code]:
            page.goto(f"{base}{lang.code}/search.html?q={word}")
            report.check(has_results(page), f"search {lang.code}", f"no search results for {word!r}")
    page.close()


def file_urls_work(report: Report, context) -> None:
    """Opened from disk with no server: a notebook with math and a search, per language, with no error."""
    stem = next((s for s in cs.pages("en")[1:] if "$" in (cs.NOTEBOOKS / "en" / f"{s}.ipynb").read_text()),
                cs.pages("en")[-1])
    context.unroute("**/*")  # the crawl's guard lets only the local server through
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    for lang in cs.LANGS:
        where = f"file:// {lang.code}"
        errors.clear()
        page.goto((cs.SITE_OUT / lang.code / f"{stem}.html").as_uri())
        wait_for_math(page)
        facts = page.evaluate(PAGE_FACTS_JS)
        report.check(facts["math"] > 0 and facts["math"] == facts["mathRendered"], where,
                     f"{facts['mathRendered']} of {facts['math']} math elements typeset")
        report.check(all(i["ok"] for i in facts["images"]), where, "an image did not load")
        word = SEARCH_WORDS[lang.code][-1]
        page.goto((cs.SITE_OUT / lang.code / "search.html").as_uri() + f"?q={word}")
        found = has_results(page)
        page.wait_for_timeout(500)  # errors from fetches the results page might start
        report.check(found, where, f"no search results for {word!r}")
        report.check(not errors, where, f"errors: {errors}")
    page.close()


def click_switch(report: Report, context, base: str) -> None:
    """A real click on the switch, there and back, on the last notebook page."""
    stem = cs.pages("en")[-1]
    page = context.new_page()
    page.goto(f"{base}en/{stem}.html")
    for lang in (cs.other("en"), cs.lang("en")):
        page.click("a.lang-switch-link >> visible=true")
        page.wait_for_load_state("load")
        want = f"/{lang.code}/{stem}.html"
        report.check(urlparse(page.url).path == want, "switch click", f"landed on {page.url}, expected {want}")
        report.check(page.evaluate("document.documentElement.lang").startswith(lang.code),
                     "switch click", f"{page.url} is not marked as {lang.code}")
    page.close()


def crawl(report: Report, context, base: str) -> None:
    failures: list[str] = []
    context.on("requestfailed", lambda r: failures.append(f"request failed: {r.url} ({r.failure})"))
    context.on("response", lambda r: r.status >= 400 and failures.append(f"HTTP {r.status}: {r.url}"))

    def only_this_server(route):
        if route.request.url.startswith(base):
            route.continue_()
        else:
            failures.append(f"request off the site: {route.request.url}")
            route.abort()

    context.route("**/*", only_this_server)
    seen, fragments = {"/index.html"}, {}  # path -> fragments linked to it
    queue = deque(["/index.html"])
    ids_by_path: dict[str, set[str]] = {}
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    while queue:
        path = queue.popleft()
        failures.clear()
        errors.clear()
        page.goto(base.rstrip("/") + path, wait_until="load", timeout=LOAD_TIMEOUT_MS)
        if page.evaluate("document.querySelector('.math') !== null"):
            wait_for_math(page)
        facts = page.evaluate(PAGE_FACTS_JS)
        page.wait_for_load_state("networkidle")  # fonts MathJax asked for while typesetting
        report.pages += 1
        print(f"  {path}", flush=True)
        for problem in failures + errors:
            report.check(False, path, problem)
        check_page(report, path, facts, base)
        ids_by_path[path] = set(facts["ids"])
        for url in facts["links"] + facts["assets"]:
            target, fragment = urldefrag(url)
            inside = site_path(target, base)
            if inside is None:
                report.check(url.startswith("https://"), path, f"link to neither the site nor https: {url}")
                continue
            if inside.endswith("/"):
                inside += "index.html"
            if fragment:
                fragments.setdefault(inside, set()).add((fragment, path))
            if inside.endswith(".html") and inside not in seen:
                seen.add(inside)
                queue.append(inside)
            elif not inside.endswith(".html"):
                report.check((cs.SITE_OUT / inside.lstrip("/")).is_file(), path, f"broken link: {url}")
    page.close()
    for target, wanted in fragments.items():
        for fragment, source in wanted:
            report.check(fragment in ids_by_path.get(target, set()), source, f"broken anchor: {target}#{fragment}")
    expected = {"/index.html"} | {f"/{lg.code}/{p}.html" for lg in cs.LANGS for p in cs.pages(lg.code)}
    report.check(expected <= seen, "crawl", f"pages never linked: {sorted(expected - seen)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not (cs.SITE_OUT / "index.html").is_file():
        print("no build/site/index.html: run `make site` first", file=sys.stderr)
        return 2
    if not Path(args.chromium).is_file():
        print(f"no Chromium at {args.chromium}: apt-get install -y chromium fonts-noto-cjk fonts-noto-color-emoji",
              file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    report = Report()
    server = serve(cs.SITE_OUT)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="site-test-profile-") as profile:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=args.chromium, headless=True, args=CHROMIUM_FLAGS,
                viewport=VIEWPORT, service_workers="block")
            context.set_default_timeout(LOAD_TIMEOUT_MS)
            crawl(report, context, base)
            take_screens(report, context, base)  # before any search: Sphinx then highlights the words found
            click_switch(report, context, base)
            search_works(report, context, base)
            file_urls_work(report, context)
            context.close()
    finally:
        server.shutdown()
        server.server_close()
    for problem in report.problems:
        print("FAIL", problem)
    shots = sorted(p.name for p in SCREENS.glob("*.png"))
    print(f"{report.pages} pages crawled, {len(shots)} screenshots in {SCREENS.relative_to(ROOT)}/")
    print(f"{len(report.problems)} problems")
    print(f"site: {len(report.checked - report.failed)} passed, {len(report.failed)} failed")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
