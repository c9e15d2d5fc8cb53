"""Hygiene of the stored notebooks: what nbval would silently skip, and what breaks on another machine."""

import json
import re
from pathlib import Path

import pytest

from tools import course as _course
from tools.authoring import learner, nbtool

ROOT = Path(__file__).resolve().parents[2]

LANGS = _course.LANGS
# the learner versions (notebooks/LANG, what Colab and `make lab` open) and the instructor versions
NOTEBOOKS = {lang: sorted((ROOT / "notebooks" / lang).glob("[0-9][0-9]_*.ipynb")) for lang in LANGS}
INSTRUCTOR = {lang: sorted((_course.INSTRUCTOR / lang).glob("[0-9][0-9]_*.ipynb")) for lang in LANGS}
ALL = [p for lang in LANGS for p in NOTEBOOKS[lang] + INSTRUCTOR[lang]]
IGNORE = "# NBVAL_IGNORE_OUTPUT"


def version_of(path: Path) -> str:
    return _course.INSTRUCTOR_VERSION if path.parent.parent.name == "instructor" else _course.LEARNER


def shown(path: Path) -> str:
    return f"{'instructor/' if version_of(path) == _course.INSTRUCTOR_VERSION else ''}{path.parent.name}/{path.name}"


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def instructor_outputs(learner_path: Path) -> dict:
    """Cell id -> stored outputs of the instructor version of a learner notebook."""
    twin = _course.INSTRUCTOR / learner_path.parent.name / learner_path.name
    return {c.get("id"): c.get("outputs") for c in code_cells(load(twin))}


def text_of(output):
    data = output.get("data", {})
    return "".join(output.get("text", "")) + "".join(data.get("text/plain", ""))


def merged_outputs(cell):
    """(type, text) per output, consecutive chunks of one stream merged as nbval merges them."""
    merged = []
    for o in cell["outputs"]:
        key = (o["output_type"], o.get("name"))
        if merged and key[0] == "stream" and merged[-1][0] == key:
            merged[-1] = (key, merged[-1][1] + text_of(o))
        else:
            merged.append((key, text_of(o)))
    return merged


def test_series_is_numbered_contiguously_and_twinned():
    numbers = {lang: [p.name[:2] for p in NOTEBOOKS[lang]] for lang in LANGS}
    assert numbers["en"], "no notebooks found"
    assert [p.name for p in NOTEBOOKS["en"]] == [p.name for p in NOTEBOOKS["zh"]]
    assert [p.name for p in NOTEBOOKS["en"]] == [p.name for p in INSTRUCTOR["en"]] == [p.name for p in INSTRUCTOR["zh"]]
    first = int(numbers["en"][0])
    assert first in (0, 1), "the series starts at 00 (an optional opener) or 01"
    assert numbers["en"] == [f"{i:02d}" for i in range(first, first + len(numbers["en"]))]


@pytest.mark.parametrize("path", ALL, ids=shown)
def test_notebook_hygiene(path):
    nb = load(path)
    lang = path.parent.name
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb["metadata"], "widget state stored in metadata"
    repo, ref = nbtool.colab_config()
    header = "".join(nb["cells"][0]["source"])
    assert nb["cells"][0]["cell_type"] == "markdown"
    if version_of(path) == _course.LEARNER:  # the badge opens this very notebook
        assert nbtool.badge_markdown(repo, ref, lang, path.name) in header
    else:  # the instructor version says what it is and where learners go; no badge (it would open the other)
        assert _course.INSTRUCTOR_NOTE[lang].format(name=path.name) in header and "colab-badge" not in header
    setup = "".join(nb["cells"][1]["source"])
    assert setup == nbtool.setup_code(repo, ref, lang)
    counts = []
    start = learner.exercises_start(nbtool.nbformat.reads(json.dumps(nb), as_version=4))
    for i, cell in enumerate(code_cells(nb)):
        src = "".join(cell["source"])
        if not src.strip():
            continue
        where = f"{path.name} code cell {i}"
        checker = "checker" in cell.get("metadata", {}).get("tags", [])
        if cell["execution_count"] is None and version_of(path) == _course.LEARNER and not checker:
            # the learner version's exercises keep no output but the checkers' (nothing given away); only a
            # cell with something to hide (its instructor twin printed) is stored unexecuted
            assert start is not None and nb["cells"].index(cell) > start, f"{where}: not executed"
            assert not cell["outputs"], f"{where}: outputs without an execution count"
            assert instructor_outputs(path).get(cell.get("id")), f"{where}: nothing to hide, so keep its count"
            continue
        assert cell["execution_count"] is not None, f"{where}: not executed (nbval would skip it)"
        counts.append(cell["execution_count"])
        assert not any(o["output_type"] == "error" for o in cell["outputs"]), f"{where}: stored error"
        assert not any(o.get("name") == "stderr" for o in cell["outputs"]), f"{where}: output on stderr"
        lines = src.splitlines()
        if any(IGNORE in line for line in lines):
            assert lines[0] == IGNORE, f"{where}: the marker must be the exact first line"
            assert len(lines) > 1 and lines[1].startswith("#"), f"{where}: say why the output is ignored"
        assert not re.search(r"plt\.\w+\(.*\);\s*$", src), f"{where}: trailing ';' hides nothing under nbval"
        for out in cell["outputs"]:
            text = text_of(out)
            assert "grad_fn=" not in text, f"{where}: grad_fn in output"
            assert not re.search(r"at 0x[0-9a-f]{6,}", text), f"{where}: memory address in output"
    if version_of(path) == _course.INSTRUCTOR_VERSION:
        assert counts == list(range(1, len(counts) + 1)), f"{path.name}: execution counts not contiguous: {counts}"
    else:  # one run from the top, some exercise outputs cleared afterwards
        assert counts == sorted(set(counts)) and counts[0] == 1, f"{path.name}: not one run in order: {counts}"


HEADINGS = {"en": ("## Learning objectives", "## Summary"), "zh": ("## 学习目标", "## 小结")}


@pytest.mark.parametrize("path", ALL, ids=shown)
def test_objectives_first_summary_last_then_exercises(path):
    nb = load(path)
    objectives, summary = HEADINGS[path.parent.name]
    prose = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    assert prose[1].startswith(objectives), "the first cell after the title states the learning objectives"
    at = [i for i, text in enumerate(prose) if text.startswith(summary)]
    assert len(at) == 1, f"one {summary!r} cell expected"
    exercises = [i for i, text in enumerate(prose) if text.startswith(("## Exercises", "## 练习"))]
    if (nbtool.SRC / path.name.replace(".ipynb", ".exercises.nbsrc")).exists():
        assert exercises and exercises[0] > at[0], "a notebook with exercises ends with them, after the summary"
        assert len(prose) - 1 - at[0] > 1
    else:
        assert at[0] == len(prose) - 1, "the summary is the last prose cell"


def assert_same_code_apart_from_words(en_code: str, zh_code: str, where: str) -> None:
    """The same code in both languages: only strings may differ, each either the language switch ("en" for "zh",
    ``{{LANG}}``) or words in Chinese (a figure's title, an axis label)."""
    (en_skeleton, en_strings), (zh_skeleton, zh_strings) = map(nbtool.code_and_strings, (en_code, zh_code))
    assert en_skeleton == zh_skeleton, f"{where} differs between en and zh (comments and strings aside)"
    for en, zh in zip(en_strings, zh_strings, strict=True):
        if en != zh:
            assert (en, zh) == ('"en"', '"zh"') or nbtool.CJK.search(zh), (
                f"{where}: the string {en!r} became {zh!r} in zh: only the language switch or Chinese words may differ"
            )
            assert not nbtool.CJK.search(en), f"{where}: Chinese in the English notebook's string {en!r}"


@pytest.mark.parametrize(
    "en,zh,ok",
    [
        ('set_language("en")\nax.set_title("key")', 'set_language("zh")\nax.set_title("键")', True),
        ('ax.set_title(f"head {i}")', 'ax.set_title(f"{i} 号头")', True),
        ('ax.set_title("key")', 'ax.set_title("query")', False),  # a changed value, not a translation
        ('x = "a"', 'x = "中" + "b"', False),  # changed code
        ("x = 1", "x = 2", False),
    ],
)
def test_the_parity_rule_allows_translated_strings_only(en, zh, ok):
    if ok:
        assert_same_code_apart_from_words(en, zh, "cell")
    else:
        with pytest.raises(AssertionError):
            assert_same_code_apart_from_words(en, zh, "cell")


WIDGET = "application/vnd.jupyter.widget-view+json"


def assert_explorer_stand_ins(outs_en, outs_zh, where: str) -> None:
    """The outputs of an explorer cell: the same kinds, and each text in its own language only."""
    assert [k for k, _ in outs_en] == [k for k, _ in outs_zh], f"{where}: different outputs in en and zh"
    for (_, en), (_, zh) in zip(outs_en, outs_zh, strict=True):
        assert not nbtool.CJK.search(en), f"{where}: Chinese in the English notebook's output {en!r}"
        assert nbtool.CJK.search(zh) and not re.search(r"[A-Za-z]{4,} [a-z]{3,}", zh), (
            f"{where}: the Chinese notebook's output {zh!r} is not in Chinese only"
        )


def test_the_stand_in_rule_can_fail():
    en_ok, zh_ok = (
        [(("display_data", None), "mask explorer: run this cell for the live controls")],
        [(("display_data", None), "遮蔽探索器：运行本单元即可交互")],
    )
    assert_explorer_stand_ins(en_ok, zh_ok, "cell")
    both = "mask explorer: run this cell for the live controls (遮蔽探索器：运行本单元即可交互)"
    for en, zh in ((both, zh_ok[0][1]), (en_ok[0][1], both), (en_ok[0][1], en_ok[0][1])):
        with pytest.raises(AssertionError):
            assert_explorer_stand_ins([(("display_data", None), en)], [(("display_data", None), zh)], "cell")


@pytest.mark.parametrize("version", _course.VERSIONS)
@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS["en"]])
def test_languages_share_code_and_outputs(name, version):
    en, zh = (load(_course.version_dir(version) / lang / name) for lang in LANGS)
    en_code, zh_code = code_cells(en), code_cells(zh)
    assert len(en_code) == len(zh_code), "different number of code cells"
    for i, (a, b) in enumerate(zip(en_code, zh_code, strict=True)):
        if "".join(a["source"]).startswith(nbtool.SETUP_MARK):
            continue  # the builder writes the setup cell per language; test_notebook_hygiene checks it exactly
        # comments are in the notebook's language (nbtool's '# zh:' twins), and so are the words a figure draws
        # ('# zh>' code twins): the code itself, the strings aside, must be identical
        assert_same_code_apart_from_words("".join(a["source"]), "".join(b["source"]), f"code cell {i}")
        if "checker" in a.get("metadata", {}).get("tags", []):
            continue  # a checker speaks the notebook's language
        if "".join(a["source"]).startswith(IGNORE):
            continue
        outs_a, outs_b = merged_outputs(a), merged_outputs(b)
        if any(WIDGET in o.get("data", {}) for o in a["outputs"]):
            # an explorer's saved stand-in is one line in the notebook's language: English, then Chinese only
            assert_explorer_stand_ins(outs_a, outs_b, f"code cell {i}")
            continue
        assert outs_a == outs_b, f"code cell {i}: outputs differ between en and zh"
    assert sum(c["cell_type"] == "markdown" for c in en["cells"]) == sum(
        c["cell_type"] == "markdown" for c in zh["cells"]
    )


def test_stored_notebooks_match_their_sources(capsys):
    assert nbtool.main(["check"]) == 0, capsys.readouterr().out


SOURCES = sorted(nbtool.SRC.glob("[0-9][0-9]_*.nbsrc"))


def heading_outline(markdown: str) -> list[tuple[int, str | None]]:
    """(level, section number or None) of every heading line: what a translation must keep."""
    outline = []
    for line in markdown.splitlines():
        m = re.match(r"^(#{1,6})\s+(?:(\d+)\.\s)?", line)
        if m:
            outline.append((len(m[1]), m[2]))
    return outline


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_chinese_prose_keeps_every_heading(src):
    cells = nbtool.parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))["cells"]
    for i, cell in enumerate(c for c in cells if c["type"] == "md"):
        en, zh = heading_outline(cell["en"]), heading_outline(cell["zh"])
        assert en == zh, f"markdown cell {i} ({cell['en'][:40]!r}): headings (level, number) en {en} != zh {zh}"


FIGURE_TEXT = re.compile(
    r"\.(set_title|set_xlabel|set_ylabel|suptitle|text|annotate|legend|set_xticks|set_yticks|"
    r"set_xticklabels|set_yticklabels)\(|\blabel=|\btitle="
)


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_chinese_in_code_is_the_zh_figures_words_only(src):
    """The en notebook's code holds no Chinese; the zh notebook's only in strings (its '# zh>' code twins: the words
    a figure draws), never in names or numbers. The figures draw those words with llm_lab's shipped CJK font
    (tests/tools/authoring/test_figure_font.py): Colab and a fresh machine have none, and a missing glyph warns on
    stderr."""
    cells = nbtool.parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))["cells"]
    for cell in (c for c in cells if c["type"] == "code"):
        en = nbtool.strip_comments(nbtool.localize_code(cell["source"], "en", cell["at"]))
        assert not nbtool.CJK.search(en), f"{cell['at']}: Chinese in the English code (give the line a '# zh>' twin)"
        zh = nbtool.localize_comments(nbtool.localize_code(cell["source"], "zh", cell["at"]), "zh", cell["at"])
        skeleton, _ = nbtool.code_and_strings(zh)
        assert not any(nbtool.CJK.search(token) for _, token in skeleton), f"{cell['at']}: Chinese outside a string"


def test_library_figures_carry_no_chinese():
    """The figures llm_lab draws (heatmaps, diagrams, explorers) take their words from one table per language,
    llm_lab/explore/figure_words.py: no Chinese in a matplotlib text call itself."""
    for path in sorted((ROOT / "llm_lab").rglob("*.py")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FIGURE_TEXT.search(line):
                assert not nbtool.CJK.search(line), f"{path.name}:{lineno}: Chinese text in a figure"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_chinese_notebooks_have_chinese_comments(src):
    """Every English prose comment in the code has a '# zh:' twin (``python -m tools.authoring.nbtool comments``
    lists them)."""
    missing = nbtool.untranslated(src)
    assert not missing, "comments without a Chinese twin ('# zh: ...'):\n" + "\n".join(missing)


MAINTAINER_ONLY = re.compile(r"nbval|ipywidgets|NBVAL_(?!IGNORE_OUTPUT$)|not compared by the tests|测试不比较", re.I)


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_learners_are_not_told_about_the_test_machinery(src):
    """Markers such as '# NBVAL_IGNORE_OUTPUT' stay unexplained in the notebooks: docs/authoring.md explains them."""
    cells = nbtool.parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))["cells"]
    for cell in cells:
        texts = (
            [cell["en"], cell["zh"]]
            if cell["type"] == "md"
            else [
                text
                for _, en, twins in nbtool.comment_twins(cell["source"], cell["at"])[1].values()
                for text in (en, *twins.values())
                if text and text.strip() != "# NBVAL_IGNORE_OUTPUT"
            ]
        )
        for text in texts:
            where = cell.get("at", src.name)
            assert not MAINTAINER_ONLY.search(text), f"{where}: {text[:80]!r} (move it to docs/authoring.md)"
