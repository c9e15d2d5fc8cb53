"""Sphinx config of the static site, one build per language (SITE_LANG: a code of course_site.LANGS; build_site.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import course_site as cs  # noqa: E402

_lang = cs.lang(os.environ.get("SITE_LANG", "en"))

project = "llm-lab"
language = _lang.sphinx
html_title = _lang.title
extensions = ["myst_nb", "sphinx.ext.mathjax"]

# Stored outputs only: the notebooks' outputs come from `make execute`, the site never runs code.
nb_execution_mode = "off"
# A static page cannot run a widget; tools/authoring/build_site.py replaces widget outputs with a note, and no
# widget manager is loaded from a CDN.
nb_ipywidgets_js = {}
myst_enable_extensions = ["dollarmath", "amsmath"]

html_theme = "furo"
html_theme_options = {"top_of_page_buttons": []}
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["site.css"]
# Furo's sidebar plus the language switch (site/_templates/lang-switch.html) under the search box.
html_sidebars = {"**": ["sidebar/brand.html", "sidebar/search.html", "lang-switch.html", "sidebar/scroll-start.html",
                        "sidebar/navigation.html", "sidebar/scroll-end.html"]}
# Works around Sphinx 9.0's Chinese search page (see the file).
html_js_files = ["zh_stemmer.js"] if _lang.code == "zh" else []
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_show_copyright = False
# Search results without page snippets: fetching them fails on file:// (Chromium's CORS), and the site must
# also work opened straight from build/site/ with no server.
html_show_search_summary = False

# Math offline: MathJax 3.2.2 as packaged on PyPI by django-static-mathjax (the official mathjax-full
# distribution, no Django needed; pinned in requirements-site.txt), copied once into build/site/_mathjax/
# for both languages by tools/authoring/build_site.py. Chosen over the CDN default, over Sphinx's imgmath (a LaTeX
# install of several hundred MB), over npm's copy (a second package manager for one file) and over
# jupyter-server-mathjax's MathJax 2.7 (its font check requests about:blank, a console error in Chromium).
# CHTML output with MathJax's own woff fonts, served from the same folder. The path is relative to each
# language's _static/, i.e. build/site/_mathjax/.
mathjax_path = f"../../{cs.MATHJAX_DIR}/tex-chtml.js"
mathjax3_config = {
    # Only Sphinx's delimiters (MyST turns $...$ into them): a `$` in prose or outputs stays text.
    "tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]},
}


def _lang_switch(app, pagename, templatename, context, doctree):
    """Every page links to its twin in the other language (site/_templates/page.html shows it)."""
    target = cs.other(_lang.code)
    context["lang_switch"] = {"href": cs.twin_href(pagename, _lang.code), "name": target.name,
                              "hreflang": target.sphinx.replace("_", "-")}


def setup(app):
    app.connect("html-page-context", _lang_switch)
    if _lang.code == "zh":
        # Sphinx indexes Chinese words cut by jieba (requirements-site.txt); without it a whole run of Chinese
        # text is one "word" and searching 注意力 finds nothing. Importing it here fails the build if it is
        # missing; its progress messages are not warnings.
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
