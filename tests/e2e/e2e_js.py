"""The page-side scripts of the end-to-end tests, tests/e2e/js/*.js, read once at import: JS["tofu"] is
js/tofu.js, a function expression for Playwright's page.evaluate / locator.evaluate."""

from pathlib import Path

JS_DIR = Path(__file__).resolve().parent / "js"
JS = {path.stem: path.read_text(encoding="utf-8") for path in sorted(JS_DIR.glob("*.js"))}
