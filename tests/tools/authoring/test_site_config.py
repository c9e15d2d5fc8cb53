"""The static site's model and config, without Sphinx (the browser test is `make test-site`)."""

import copy
import json
import runpy
from pathlib import Path

import pytest

from tools import course as _course
from tools.authoring import build_site

ROOT = Path(__file__).resolve().parents[3]

cs = _course.site_module()


def fake_series(tmp_path, en, zh):
    for code, stems in (("en", en), ("zh", zh)):
        (tmp_path / code).mkdir()
        for stem in stems:
            (tmp_path / code / f"{stem}.ipynb").write_text("{}")
    return tmp_path


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_solution_tag_is_the_course_model_s():
    assert cs.SOLUTION_TAG == _course.SOLUTION


def test_every_notebook_has_its_twin_in_the_other_language():
    assert len(cs.pages("en")) > 1
    assert cs.unpaired() == {"en": [], "zh": []}
    assert cs.pages("en") == cs.pages("zh")


@pytest.mark.parametrize("code", ["en", "zh"])
def test_switch_leads_every_page_to_the_same_page_and_back(code):
    there = cs.other(code).code
    for page in cs.pages(code):
        assert cs.twin_href(page, code) == f"../{there}/{page}.html"
        assert cs.twin_href(page, there) == f"../{code}/{page}.html"


def test_a_new_notebook_joins_the_site_without_config_and_a_lone_one_switches_to_the_index(tmp_path):
    series = fake_series(tmp_path, en=["01_b", "00_a"], zh=["01_b"])
    assert cs.pages("en", series) == ["index", "00_a", "01_b"]
    assert cs.unpaired(series) == {"en": ["00_a"], "zh": []}
    assert cs.twin_href("00_a", "en", series) == "../zh/index.html"
    assert cs.twin_href("01_b", "zh", series) == "../en/01_b.html"
    assert cs.twin_href("search", "zh", series) == "../en/search.html"


def test_unknown_language_is_named():
    with pytest.raises(ValueError, match=r"'fr'.*\['en', 'zh'\]"):
        cs.pages("fr")


def test_index_lists_every_notebook_in_order():
    stems = cs.pages("zh")[1:]
    text = build_site.index_markdown(cs.lang("zh"), stems)
    toctree = text.split("```{toctree}")[1].split("```")[0]
    assert [line for line in toctree.splitlines() if line and not line.startswith(":")] == stems


def test_adapt_replaces_widget_output_and_badge_image_and_folds_solutions():
    badge = (
        "# 02 · x\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/o/r/blob/v1/notebooks/zh/02_x.ipynb)"
    )
    widget = {
        "output_type": "display_data",
        "metadata": {},
        "data": {cs.WIDGET_MIME: {"model_id": "abc"}, "text/plain": ["VBox(children=(IntSlider(…"]},
    }
    stream = {"output_type": "stream", "name": "stdout", "text": ["tensor([1.])\n"]}
    nb = {
        "metadata": {"widgets": {"state": {}}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": [badge]},
            {
                "cell_type": "code",
                "metadata": {},
                "source": ["# Colab setup: ...\n", "import sys"],
                "outputs": [],
                "execution_count": 0,
            },
            {"cell_type": "code", "metadata": {}, "source": "x", "outputs": [stream, widget], "execution_count": 1},
            {
                "cell_type": "code",
                "metadata": {"tags": ["solution"]},
                "source": "y",
                "outputs": [],
                "execution_count": 2,
            },
            {
                "cell_type": "code",
                "metadata": {"tags": ["checker"]},
                "outputs": [],
                "execution_count": 3,
                "source": ["check_y(y)\n", "### BEGIN HIDDEN TESTS\n", "_fresh = 1\n", "### END HIDDEN TESTS"],
            },
        ],
    }
    out = build_site.adapt_notebook(copy.deepcopy(nb), cs.lang("zh"))
    assert out["cells"][0]["source"] == badge.replace(
        "https://colab.research.google.com/assets/colab-badge.svg", cs.BADGE_LOCAL
    )
    assert "(https://colab.research.google.com/github/o/r/blob/v1/notebooks/zh/02_x.ipynb)" in out["cells"][0]["source"]
    setup, shown, solution, checker = out["cells"][1:]
    first, note = shown["outputs"]
    assert first == stream
    assert note["data"]["text/plain"] == cs.lang("zh").explorer_note and "Colab" in note["data"]["text/html"]
    assert cs.WIDGET_MIME not in note["data"] and "widgets" not in out["metadata"]
    assert shown["metadata"] == {} and solution["metadata"]["tags"] == ["solution", "hide-input"]
    assert solution["metadata"]["mystnb"]["code_prompt_show"] == "显示参考解答"
    assert setup["metadata"]["tags"] == ["hide-input"] and setup["source"] == "# Colab setup: ...\nimport sys"
    assert checker["source"] == "check_y(y)" and shown["source"] == "x"


@pytest.mark.parametrize("code", ["en", "zh"])
def test_adapted_series_has_no_widget_no_remote_badge_and_no_hidden_test_left(code):
    for path in cs.notebook_paths(code):
        raw = path.read_text(encoding="utf-8")
        widgets = sum(cs.WIDGET_MIME in o.get("data", {}) for c in load(path)["cells"] for o in c.get("outputs", []))
        text = json.dumps(build_site.adapt_notebook(json.loads(raw), cs.lang(code)), ensure_ascii=False)
        assert cs.WIDGET_MIME not in text and not cs.BADGE_IMG_RE.search(text), path.name
        assert "HIDDEN TESTS" not in text, path.name
        checkers = [c["source"] for c in json.loads(text)["cells"] if "checker" in c["metadata"].get("tags", [])]
        assert all("check_" in src for src in checkers), path.name  # the visible call stays
        assert text.count(json.dumps(cs.lang(code).explorer_note, ensure_ascii=False)) == widgets, path.name


@pytest.mark.parametrize("code", ["en", "zh"])
def test_conf_renders_stored_outputs_with_local_math_and_assets(code, monkeypatch):
    monkeypatch.setenv("SITE_LANG", code)
    conf = runpy.run_path(str(ROOT / "site" / "conf.py"))
    assert conf["language"] == cs.lang(code).sphinx
    assert conf["nb_execution_mode"] == "off" and conf["nb_ipywidgets_js"] == {}
    assert "://" not in conf["mathjax_path"] and conf["mathjax_path"].startswith(f"../../{cs.MATHJAX_DIR}/")
    static = ROOT / "site" / conf["html_static_path"][0]
    for name in conf["html_css_files"] + conf["html_js_files"]:
        assert (static / name).is_file(), name
    templates = ROOT / "site" / conf["templates_path"][0]
    for name in [n for n in conf["html_sidebars"]["**"] if not n.startswith("sidebar/")] + ["page.html"]:
        assert "lang_switch.href" in (templates / name).read_text(), name
