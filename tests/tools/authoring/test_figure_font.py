"""The zh figures draw every character: llm_lab ships the CJK font they need (Colab and a fresh machine have none).

Every Chinese string a zh notebook's code draws (the '# zh>' code twins of the sources, and llm_lab's figure words)
is rendered with matplotlib as the notebooks run it, with the shipped font registered; matplotlib warns
"Glyph ... missing from font(s)" for a character no font in the list has, and nbval counts that warning as a failure.
"""

import ast
import io
import re
import warnings

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch
from fontTools.ttLib import TTFont
from matplotlib import font_manager

from llm_lab import resources
from llm_lab.bench import benchmark
from llm_lab.explore import circuit_diagram, plotting
from tools.authoring import figure_font, nbtool

FONT = resources.verified_path(*resources.FIGURE_FONT)
STRINGS = figure_font.figure_strings()
ABSENT = "龘"  # a character no notebook uses: the subset lacks it, so drawing it must warn (the positive control)


def missing_glyphs(draw) -> list[str]:
    """The 'Glyph ... missing' warnings of drawing a figure with ``draw(fig)`` and rendering it to PNG and PDF."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = plt.figure(figsize=(6, 4))
        try:
            draw(fig)
            for fmt in ("png", "pdf"):
                fig.savefig(io.BytesIO(), format=fmt)
        finally:
            plt.close(fig)
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_the_zh_notebooks_draw_chinese_in_their_figures():
    where = {at.split(".nbsrc")[0][:2] for at, _ in STRINGS if ".nbsrc" in at}
    assert {"00", "01", "02", "03", "05", "06", "07"} <= where, sorted(where)
    assert len(STRINGS) >= 35, len(STRINGS)
    assert all(nbtool.CJK.search(text) for _, text in STRINGS)


def test_the_shipped_font_covers_every_cjk_character_of_the_figures():
    have = figure_font.shipped_chars()
    lacking = [
        f"{at}: {ch!r} in {text!r}" for at, text in STRINGS for ch in figure_font.cjk_chars(text) if ch not in have
    ]
    assert not lacking, (
        "rebuild the font: python -m tools.authoring.figure_font build --source "
        "NotoSansCJK-Regular.ttc (docs/authoring.md)\n" + "\n".join(lacking)
    )
    assert figure_font.main(["check"]) == 0


def test_every_zh_figure_string_renders_without_a_missing_glyph():
    def draw(fig):
        for i, (_, text) in enumerate(STRINGS):
            fig.text(0.02, 1 - (i + 1) / (len(STRINGS) + 1), text, fontsize=6)

    assert missing_glyphs(draw) == []


def test_a_character_outside_the_subset_is_caught():
    """The positive control: without it a capture that sees nothing would pass the test above."""
    assert ABSENT not in figure_font.shipped_chars()
    found = missing_glyphs(lambda fig: fig.text(0.1, 0.5, f"{ABSENT} 键"))
    assert found and all("CJK UNIFIED IDEOGRAPH-9F98" in message for message in found), found


def test_the_helpers_draw_their_chinese_words_with_no_missing_glyph():
    keys = list(benchmark.CONTESTANTS)[:2]
    sweep = {
        t: {k: benchmark.Measurement(key=k, equal=True, times=[1e-3], saved_bytes=2**20) for k in keys}
        for t in (16, 32)
    }

    def draw(fig):
        axes = fig.subplots(1, 5)
        plotting.heatmap(torch.rand(3, 3), labels=["a", "b", "c"], title="分数", ax=axes[0], lang="zh")
        plotting.tile_diagram(8, 4, ax=axes[1], lang="zh")
        plotting.head_split_diagram(4, 6, 2, ax=axes[2], lang="zh")
        plotting.causal_attention_shapes(2, 6, 3, 2, ax=axes[3], lang="zh")
        circuit_diagram.induction_circuit_diagram(ax=axes[4], lang="zh")
        assert axes[0].get_xlabel() == "键" and axes[0].get_ylabel() == "查询"
        assert axes[1].get_title() == "T=8，block_size=4：4 个块中计算 3 个"
        assert axes[3].get_title(loc="left").startswith("CausalAttention.forward 中的张量：B = 2，")

    assert missing_glyphs(draw) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = benchmark.plot_sweep(sweep, "B=1，2 个头", lang="zh")
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
    assert not [w for w in caught if "missing from font" in str(w.message)]
    assert fig.axes[0].get_ylabel() == "前向 + 反向（毫秒，中位数）"


def test_english_stays_the_default():
    ax = plotting.heatmap(torch.rand(2, 2))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key", "query")
    plt.close(ax.figure)
    assert plotting.tile_diagram(8, 4).get_title() == "T=8, block_size=4: 3 of 4 tiles"
    plt.close("all")


@pytest.mark.parametrize(
    "helper",
    [
        plotting.heatmap,
        plotting.tile_diagram,
        plotting.head_split_diagram,
        plotting.causal_attention_shapes,
        circuit_diagram.induction_circuit_diagram,
    ],
)
@pytest.mark.parametrize("lang,error", [("fr", ValueError), ("ZH", ValueError), (None, TypeError)])
def test_an_unknown_language_is_refused_by_name(helper, lang, error):
    args = (torch.rand(2, 2),) if helper is plotting.heatmap else ()
    with pytest.raises(error, match=r"lang.*'en', 'zh'"):
        helper(*args, lang=lang)


def test_latin_text_keeps_matplotlibs_default_font():
    """The subset is a fallback, after the default family: Latin text is drawn by DejaVu Sans as before."""
    family = plotting.use_figure_font()
    assert family == figure_font.FAMILY
    assert list(matplotlib.rcParams["font.family"])[-1] == family
    fonts = font_manager.fontManager._find_fonts_by_props(font_manager.FontProperties())
    assert fonts[0].endswith("DejaVuSans.ttf") and fonts[-1] == str(FONT), fonts


def test_use_figure_font_restores_the_fallback_after_a_style_reset():
    family = plotting.use_figure_font()
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        assert family not in matplotlib.rcParams["font.family"]
        assert plotting.use_figure_font() == family
        assert list(matplotlib.rcParams["font.family"]) == ["sans-serif", family]
        assert plotting.use_figure_font() == family and matplotlib.rcParams["font.family"].count(family) == 1
        assert missing_glyphs(lambda fig: fig.text(0.1, 0.5, "因果注意力权重")) == []


def test_the_font_is_small_renamed_and_licensed():
    assert FONT.stat().st_size < 1_000_000
    with TTFont(str(FONT)) as font:
        names = font["name"]
        assert names.getDebugName(1) == figure_font.FAMILY != figure_font.SOURCE_FACE  # a modified font, renamed
        assert "Adobe" in names.getDebugName(0) and "Open Font License" in names.getDebugName(13)
        assert "glyf" in font and "CFF " not in font  # TrueType outlines: every backend embeds them
    licence = FONT.with_name("LICENSE.noto-cjk").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence and "Adobe" in licence
    readme = (FONT.parent / "README.md").read_text(encoding="utf-8")
    assert resources.FIGURE_FONT[1] in readme and FONT.name in readme and "LICENSE.noto-cjk" in readme


HELPERS = {
    "heatmap",
    "tile_diagram",
    "head_split_diagram",
    "causal_attention_shapes",
    "induction_circuit_diagram",
    "plot_sweep",
}  # the helpers that draw words
TEXT_CALLS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "text", "annotate"}
TEXT_KEYWORDS = {"label", "title"}
# Notebook 08's figures are being rewritten; they take up their '# zh>' twins and lang= with it (docs/authoring.md).
PENDING: set[str] = set()


def _english_words(node) -> list[str]:
    """The English prose words of a string literal (a plain word of 3+ letters: not a code name like max_length)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    else:
        return []
    if nbtool.CJK.search(text):
        return []
    return [w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text) if re.fullmatch(r"[A-Za-z]{3,}", w)]


def figure_gaps_of(source: str, at: str = "cell") -> list[str]:
    """Where a code cell's zh version would still draw English: an English title, axis name or legend in a
    matplotlib text call, or a helper called without ``lang=``."""
    gaps = []
    zh = nbtool.localize_code(source, "zh", at).replace("{{LANG}}", '"zh"')
    for node in ast.walk(ast.parse(zh)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name in HELPERS and not any(k.arg == "lang" for k in node.keywords):
            gaps.append(f"{at}+{node.lineno}: {name}(...) without lang={{{{LANG}}}}")
        texts = [*node.args] if name in TEXT_CALLS else []
        texts += [k.value for k in node.keywords if k.arg in TEXT_KEYWORDS]
        gaps += [
            f"{at}+{node.lineno}: English in a zh figure: {words}" for words in map(_english_words, texts) if words
        ]
    return gaps


def figure_gaps(src) -> list[str]:
    cells = nbtool.parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))["cells"]
    return [gap for cell in cells if cell["type"] == "code" for gap in figure_gaps_of(cell["source"], cell["at"])]


@pytest.mark.parametrize(
    "src", [p for p in sorted(nbtool.SRC.glob("[0-9][0-9]_*.nbsrc")) if p.name[:2] not in PENDING], ids=lambda p: p.name
)
def test_every_zh_figure_speaks_chinese(src):
    gaps = figure_gaps(src)
    assert not gaps, "give these lines a '# zh>' twin (docs/authoring.md):\n" + "\n".join(gaps)


def test_the_gap_finder_sees_english_figures():
    """It flags the figures of a notebook not yet translated, so the test above cannot pass vacuously."""
    for number in PENDING:
        gaps = [gap for p in sorted(nbtool.SRC.glob(f"{number}_*.nbsrc")) for gap in figure_gaps(p)]
        assert gaps, f"notebook {number}'s figures are translated: drop it from PENDING"
    old_cell = 'heatmap(w, title="causal weights")\nax.set_xlabel("sequence length T")\nax.plot(t, label=f"head {i}")'
    assert len(figure_gaps_of(old_cell)) == 4  # no lang=, three English labels
