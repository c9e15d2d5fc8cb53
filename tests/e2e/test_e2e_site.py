"""The static site (`make site` -> build/site/) in headless Chromium, served on a free loopback port.

test_page[<path>]: one test per page of the series (the language chooser, each language's contents and
notebooks), reached by the crawl from the chooser: no console or page error, no failed request, no request off
the server (the site works offline; the context aborts them), math typeset by the local MathJax with no raw
`$$` or `\\(` left, every image loaded, no widget text, a language switch to the same page in the other
language (one visible); on a notebook page: prev/next in series order, its Colab badge, one figure per stored
image output, one note per stored explorer, the solutions and the setup cell folded.
test_other_pages: the same for the other pages the crawl reached (Sphinx's search, index).
test_links: no link to neither the site nor https, no missing file, no broken anchor.
Then screenshots in build/site-screens/ (before any search: Sphinx then highlights the words found), the
switch at a narrow width, a click on the switch there and back, a search per language, and a notebook and a
search opened as file:// URLs (no server) without an error.
"""

from __future__ import annotations

from urllib.parse import urlparse

import e2e_site as site
import pytest
from e2e_js import JS
from e2e_site import cs, wait_for_math

SCREENS = cs.BUILD / "site-screens"
NARROW = {"width": 760, "height": 900}
PAGES = ["/index.html"] + [f"/{lg.code}/{name}.html" for lg in cs.LANGS for name in cs.pages(lg.code)]
# A term shared by both languages and a word of the language itself (Chinese needs the jieba word cutter).
SEARCH_WORDS = {"en": ("softmax", "attention"), "zh": ("softmax", "注意力")}
SEARCHES = [(code, word) for code, words in SEARCH_WORDS.items() for word in words]
STEMS = cs.pages("en")[1:]


def first_stem(has) -> str:
    return next((s for s in STEMS if has(s)), STEMS[0])


WITH_MATH = first_stem(lambda s: "$" in (cs.NOTEBOOKS / "en" / f"{s}.ipynb").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def site_base():
    if not (cs.SITE_OUT / "index.html").is_file():
        pytest.fail("no build/site/index.html: run `make site` first", pytrace=False)
    server = site.serve(cs.SITE_OUT)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def site_context(browser, browser_context_args, site_base):
    """One context for the crawl and the pages after it, with the offline guard."""
    context = browser.new_context(**browser_context_args, service_workers="block")
    context.set_default_timeout(site.LOAD_TIMEOUT_MS)
    guard = site.Guard(context, site_base)
    yield context, guard
    context.close()


@pytest.fixture(scope="module")
def site_pages(site_context, site_base) -> dict[str, dict]:
    context, guard = site_context
    return site.crawl(context, guard, site_base)


@pytest.fixture
def site_page(site_context):
    page = site_context[0].new_page()
    yield page
    page.close()


@pytest.mark.parametrize("path", PAGES, ids=[p.strip("/").removesuffix(".html") for p in PAGES])
def test_page(site_pages, site_base, path):
    assert path in site_pages, f"{path}: no link leads to it from the language chooser"
    visit = site_pages[path]
    problems = visit["errors"] + site.page_problems(path, visit["facts"], site_base)
    assert not problems, f"{path}:\n  - " + "\n  - ".join(problems)


def test_other_pages(site_pages, site_base):
    others = sorted(set(site_pages) - set(PAGES))
    problems = [
        f"{path}: {p}"
        for path in others
        for p in site_pages[path]["errors"] + site.page_problems(path, site_pages[path]["facts"], site_base)
    ]
    assert not problems, "\n".join(problems)


def test_links(site_pages, site_base):
    problems = site.link_problems(site_pages, site_base)
    assert not problems, "\n".join(problems)


def shoot(page, name: str, selector: str | None = None) -> None:
    page.add_style_tag(content=".back-to-top { display: none !important; }")  # it floats over the text
    if selector:
        target = page.locator(selector).first
        if target.count():
            target.scroll_into_view_if_needed()
            page.evaluate("() => window.scrollBy(0, -120)")
    page.screenshot(path=str(SCREENS / f"{name}.png"))


def test_screenshots(site_page, site_base):
    """Both languages: contents, a notebook's top, math, a figure, an explorer's note, a folded solution."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    site_page.goto(site_base + "index.html")
    shoot(site_page, "chooser")
    figure = first_stem(lambda s: site.stored_outputs("en", s)[0])
    explorer = first_stem(lambda s: site.stored_outputs("en", s)[1])
    exercise = first_stem(lambda s: site.solution_cells("en", s))
    for code in (lg.code for lg in cs.LANGS):
        site_page.goto(f"{site_base}{code}/index.html")
        shoot(site_page, f"{code}-index")
        site_page.goto(f"{site_base}{code}/{WITH_MATH}.html")
        wait_for_math(site_page)
        shoot(site_page, f"{code}-{WITH_MATH}-top")
        display = "article div.math" if site_page.locator("article div.math").count() else "article .math"
        shoot(site_page, f"{code}-{WITH_MATH}-math", display)
        for stem, what, selector in (
            (figure, "figure", ".cell_output img"),
            (explorer, "explorer", ".explorer-note"),
            (exercise, "solution", "details.hide.above-input"),
        ):
            site_page.goto(f"{site_base}{code}/{stem}.html")
            shoot(site_page, f"{code}-{stem}-{what}", selector)


def test_switch_narrow(site_page, site_base):
    """The sidebar folds away at a narrow width: the switch moves to the top of the article, still one shown."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    site_page.set_viewport_size(NARROW)
    site_page.goto(f"{site_base}zh/{WITH_MATH}.html")
    wait_for_math(site_page)
    shoot(site_page, f"zh-{WITH_MATH}-narrow")
    facts = site_page.evaluate(JS["site_page_facts"])
    assert facts["langSwitchVisible"] == 1, f"{facts['langSwitchVisible']} switches visible at {NARROW['width']}px"
    assert facts["langSwitch"][0].endswith(f"/en/{WITH_MATH}.html"), facts["langSwitch"]


def test_switch_click(site_page, site_base):
    """A real click on the switch, there and back, on the last notebook page."""
    stem = STEMS[-1]
    site_page.goto(f"{site_base}en/{stem}.html")
    for code in (cs.other("en").code, "en"):
        site_page.click("a.lang-switch-link >> visible=true")
        site_page.wait_for_load_state("load")
        want = f"/{code}/{stem}.html"
        assert urlparse(site_page.url).path == want, f"landed on {site_page.url}, expected {want}"
        assert site_page.evaluate("document.documentElement.lang").startswith(code), (
            f"{site_page.url} is not marked as {code}"
        )


def has_results(page, timeout_ms: int = 10_000) -> bool:
    try:
        page.wait_for_selector("ul.search li", timeout=timeout_ms)
        return True
    except Exception:  # Playwright's TimeoutError
        return False


@pytest.mark.parametrize(("code", "word"), SEARCHES, ids=[f"{c}-{w}" for c, w in SEARCHES])
def test_search(site_page, site_base, code, word):
    """Sphinx's client-side search finds the word in that language's notebooks."""
    site_page.goto(f"{site_base}{code}/search.html?q={word}")
    assert has_results(site_page), f"no search results for {word!r} in {code}"


@pytest.mark.browser_context_args(service_workers="block")
@pytest.mark.parametrize("code", [lg.code for lg in cs.LANGS])
def test_file_urls(page, code):
    """Opened from disk with no server: a notebook with math, then a search, with no error."""
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.goto((cs.SITE_OUT / code / f"{WITH_MATH}.html").as_uri())
    wait_for_math(page)
    facts = page.evaluate(JS["site_page_facts"])
    assert facts["math"] > 0 and facts["math"] == facts["mathRendered"], (
        f"{facts['mathRendered']} of {facts['math']} math elements typeset"
    )
    assert all(i["ok"] for i in facts["images"]), "an image did not load"
    word = SEARCH_WORDS[code][-1]
    page.goto((cs.SITE_OUT / code / "search.html").as_uri() + f"?q={word}")
    found = has_results(page)
    page.wait_for_timeout(500)  # errors from fetches the results page might start
    assert found, f"no search results for {word!r}"
    assert not errors, f"errors: {errors}"
