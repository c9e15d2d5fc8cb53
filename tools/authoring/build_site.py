"""Build the static site of the series into build/site/ (``make site``; runs in .venv-site).

Every notebook of notebooks/<lang>/ is rendered by Sphinx + MyST-NB with its stored outputs (nothing is
executed), one Sphinx build per language (site/conf.py, language from SITE_LANG). Three steps:

1. stage: copy each notebook to build/site-src/<lang>/, adapted for a static page: the Colab badge image
   comes from the site (the link still opens Colab), a live explorer's output (a widget a static page
   cannot run) becomes a short note, solutions and the Colab setup cell are folded, nbgrader's hidden
   tests are dropped. A file is
   rewritten only when its content changes, so Sphinx re-reads only changed notebooks (its caches:
   build/site-sphinx/).
2. render: sphinx-build per language (warnings are errors), the pages copied to build/site/<lang>/.
3. assets: MathJax (local copy, see site/conf.py) into build/site/_mathjax/ and the language chooser
   build/site/index.html.

Usage: python -m tools.authoring.build_site
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import sys
from pathlib import Path

from tools import course as _course
from tools.authoring.colab import SETUP_MARK
from tools.course import BEGIN_HIDDEN, END_HIDDEN

ROOT = _course.ROOT
SITE_SRC = ROOT / "site"
cs = _course.site_module()

# nbgrader's hidden tests, appended to every checker cell for grading; a reader sees only the checker call.
HIDDEN_TESTS_RE = re.compile(rf"\n?{re.escape(BEGIN_HIDDEN)}.*?{re.escape(END_HIDDEN)}\n?", re.S)


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def explorer_output(note: str) -> dict:
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {"text/html": f'<p class="explorer-note">{html.escape(note)}</p>', "text/plain": note},
    }


def fold(cell: dict, show: str, hide: str) -> None:
    """Fold a code cell's source under a labelled toggle (MyST-NB's hide-input tag; outputs stay shown)."""
    cell["metadata"]["tags"] = [*cell["metadata"].get("tags", []), "hide-input"]
    cell["metadata"]["mystnb"] = {"code_prompt_show": show, "code_prompt_hide": hide}


def adapt_notebook(nb: dict, lang: cs.Lang) -> dict:
    """The notebook as a static page shows it: local badge image, widget outputs replaced by a note,
    exercise solutions folded (a reader tries first; the notebooks' model answers are folded already) and
    the Colab setup cell too (it does nothing here), no hidden tests in checker cells (as in a student copy)."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            cell["source"] = cs.BADGE_IMG_RE.sub(cs.BADGE_LOCAL, source)
        elif cell["cell_type"] == "code":
            cell["source"] = HIDDEN_TESTS_RE.sub("\n", "".join(cell["source"])).rstrip("\n")
            cell["outputs"] = [
                explorer_output(lang.explorer_note) if cs.WIDGET_MIME in out.get("data", {}) else out
                for out in cell.get("outputs", [])
            ]
            if cs.SOLUTION_TAG in cell["metadata"].get("tags", []):
                fold(cell, lang.show_solution, lang.hide_solution)
            elif cell["source"].startswith(SETUP_MARK):
                fold(cell, lang.show_setup, lang.hide_setup)
    # Stored widget state would make MyST-NB load the widget manager from a CDN.
    nb["metadata"].pop("widgets", None)
    return nb


def index_markdown(lang: cs.Lang, stems: list[str]) -> str:
    entries = "\n".join(stems)
    return (
        f"# {lang.title}\n\n{lang.intro}\n\n```{{toctree}}\n:maxdepth: 1\n:caption: {lang.contents}\n\n{entries}\n```\n"
    )


def stage(lang: cs.Lang) -> Path:
    out = cs.STAGE / lang.code
    out.mkdir(parents=True, exist_ok=True)
    wanted = {"index.md", cs.BADGE_LOCAL}
    for path in cs.notebook_paths(lang.code):
        nb = adapt_notebook(json.loads(path.read_text(encoding="utf-8")), lang)
        write_if_changed(out / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        wanted.add(path.name)
    write_if_changed(out / "index.md", index_markdown(lang, cs.pages(lang.code)[1:]))
    write_if_changed(out / cs.BADGE_LOCAL, (SITE_SRC / cs.BADGE_LOCAL).read_text(encoding="utf-8"))
    for stale in out.iterdir():  # a notebook removed from the series leaves the site too
        if stale.name not in wanted:
            stale.unlink()
    return out


def render(lang: cs.Lang, src: Path) -> int:
    from sphinx.cmd.build import build_main

    os.environ["SITE_LANG"] = lang.code
    html_dir = cs.SPHINX_OUT / lang.code / "html"
    status = build_main(
        [
            "-b",
            "html",
            "-q",
            "-W",
            "--keep-going",
            "-c",
            str(SITE_SRC),
            "-d",
            str(cs.SPHINX_OUT / lang.code / "doctrees"),
            str(src),
            str(html_dir),
        ]
    )
    if not status:
        # Sphinx's output folder keeps its caches beside it (MyST-NB's jupyter_execute/): copy only the pages.
        shutil.rmtree(cs.SITE_OUT / lang.code, ignore_errors=True)
        shutil.copytree(html_dir, cs.SITE_OUT / lang.code, ignore=shutil.ignore_patterns(".buildinfo", "_sources"))
    return status


def copy_mathjax() -> None:
    """MathJax's browser bundle (see site/conf.py) into build/site/_mathjax/, once per package version."""
    from importlib.metadata import version as dist_version

    import mathjax  # the django-static-mathjax distribution

    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    dest = cs.SITE_OUT / cs.MATHJAX_DIR
    stamp = dest / ".version"
    version = f"django-static-mathjax {dist_version('django-static-mathjax')}"
    if stamp.exists() and stamp.read_text() == version:
        return
    shutil.rmtree(dest, ignore_errors=True)
    # tex-chtml.js and what it loads on demand (fonts, TeX extensions, menu); not the other bundles nor
    # the speech engine (sre), which the pages never load.
    shutil.copytree(
        es5,
        dest,
        ignore=shutil.ignore_patterns(
            "sre", "*-speech.js", "mml-*.js", "tex-svg*.js", "tex-mml-*.js", "tex-chtml-full.js", "node-main.js"
        ),
    )
    stamp.write_text(version)


def chooser_html() -> str:
    links = "\n".join(
        f'    <li lang="{lg.sphinx.replace("_", "-")}"><a href="{lg.code}/index.html">'
        f"{html.escape(lg.title)}</a> ({html.escape(lg.name)})</li>"
        for lg in cs.LANGS
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>llm-lab</title>
  <style>
    body {{ font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem; }}
    li {{ margin: .6rem 0; font-size: 1.15rem; }}
  </style>
</head>
<body>
  <h1>llm-lab</h1>
  <ul>
{links}
  </ul>
</body>
</html>
"""


def main() -> int:
    if any(cs.unpaired().values()):
        print(f"note: notebooks in one language only (their switch leads to the other index): {cs.unpaired()}")
    for lang in cs.LANGS:
        status = render(lang, stage(lang))
        if status:
            print(f"sphinx-build failed for {lang.code} (status {status})", file=sys.stderr)
            return status
    copy_mathjax()
    write_if_changed(cs.SITE_OUT / "index.html", chooser_html())
    print(f"site: {cs.SITE_OUT.relative_to(ROOT)}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
