"""The static site's model of the series: languages, pages and the language switch.

Pure Python with no Sphinx import, so the fast unit tests (tests/tools/authoring/test_site_config.py), the builder
(tools/authoring/build_site.py), the Sphinx config (site/conf.py) and the browser test (tests/e2e/e2e_site.py) share it.

Layout of build/site/: ``index.html`` (pick a language), ``<lang>/index.html`` (the series' table of
contents), ``<lang>/<stem>.html`` for every ``notebooks/<lang>/<stem>.ipynb``, and ``_mathjax/`` (MathJax,
served locally, shared by both languages). Every page lives at the top of its language folder, so the twin
of ``en/<page>.html`` is always ``../zh/<page>.html``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
SITE_OUT = BUILD / "site"
STAGE = BUILD / "site-src"          # generated Sphinx sources (notebook copies, index.md)
SPHINX_OUT = BUILD / "site-sphinx"  # Sphinx's output and caches per language: a rebuild re-reads only changes
MATHJAX_DIR = "_mathjax"

BADGE_IMG_RE = re.compile(r"https://colab\.research\.google\.com/assets/colab-badge\.svg")
BADGE_LOCAL = "colab-badge.svg"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SOLUTION_TAG = "solution"  # tools/authoring/nbtool.py's tag for an exercise's solution cell


@dataclass(frozen=True)
class Lang:
    code: str         # folder name under notebooks/ and build/site/
    sphinx: str       # Sphinx `language` (UI strings, search tokenizer)
    name: str         # how the switch names this language, in that language
    title: str        # the site title
    intro: str        # the table-of-contents page's first paragraph
    contents: str     # the table of contents' caption
    explorer_note: str  # shown instead of a live widget, which a static page cannot run
    show_solution: str  # the fold over an exercise's solution cell, closed
    hide_solution: str  # ... and open
    show_setup: str     # the fold over the Colab setup cell (it does nothing outside Colab), closed
    hide_setup: str     # ... and open


LANGS = (
    Lang(
        code="en", sphinx="en", name="English",
        title="llm-lab: causal self-attention and multi-head attention",
        intro=("A numbered notebook series that builds the attention layer of a GPT model from the ground up. "
               "These pages show every notebook with its stored outputs; to run one, open it in Colab with "
               "its badge or locally with `make lab`."),
        contents="Notebooks",
        explorer_note=("Interactive explorer: it runs in Jupyter or Colab (open this notebook with the badge "
                       "at the top), not on this static page."),
        show_solution="Show the solution", hide_solution="Hide the solution",
        show_setup="Show the Colab setup cell", hide_setup="Hide the Colab setup cell",
    ),
    Lang(
        code="zh", sphinx="zh_CN", name="中文",
        title="llm-lab：一步一步实现因果自注意力与多头注意力",
        intro=("一套编号的笔记本（notebook）课程，从零搭建 GPT 模型中的注意力层。本站展示每个笔记本及其保存的输出；"
               "要运行笔记本，请点击其中的 Colab 徽章，或在本地执行 `make lab`。"),
        contents="笔记本",
        explorer_note=("交互式探索器（explorer）：请在 Jupyter 或 Colab 中运行（点击本页顶部的徽章），"
                       "静态页面无法运行它。"),
        show_solution="显示参考解答", hide_solution="隐藏参考解答",
        show_setup="显示 Colab 环境设置单元", hide_setup="隐藏 Colab 环境设置单元",
    ),
)
LANG_BY_CODE = {lang.code: lang for lang in LANGS}


def lang(code: str) -> Lang:
    if code not in LANG_BY_CODE:
        raise ValueError(f"unknown site language {code!r}; allowed: {sorted(LANG_BY_CODE)}")
    return LANG_BY_CODE[code]


def notebook_paths(code: str, notebooks: Path = NOTEBOOKS) -> list[Path]:
    """Every notebook of one language, in series order (file names start with their number)."""
    return sorted((notebooks / lang(code).code).glob("*.ipynb"))


def pages(code: str, notebooks: Path = NOTEBOOKS) -> list[str]:
    """Sphinx page names of one language: the table of contents, then the notebooks in order."""
    return ["index"] + [p.stem for p in notebook_paths(code, notebooks)]


def other(code: str) -> Lang:
    """The language the switch on a `code` page leads to (the site has exactly two)."""
    return next(lg for lg in LANGS if lg.code != lang(code).code)


def twin_href(pagename: str, code: str, notebooks: Path = NOTEBOOKS) -> str:
    """Relative link from page `pagename` of language `code` to the same page in the other language.

    Sphinx's own pages (search, genindex) exist in both builds; a notebook missing from the other language
    leads to that language's table of contents rather than to a broken link.
    """
    target = other(code)
    if pagename in pages(code, notebooks) and pagename not in pages(target.code, notebooks):
        pagename = "index"
    return f"../{target.code}/{pagename}.html"


def unpaired(notebooks: Path = NOTEBOOKS) -> dict[str, list[str]]:
    """Notebooks present in one language only, by language (empty lists when the series is complete)."""
    stems = {lg.code: set(pages(lg.code, notebooks)) for lg in LANGS}
    return {lg.code: sorted(stems[lg.code] - stems[other(lg.code).code]) for lg in LANGS}
