"""How llm_lab.explore.widgets' explorers look: the container widget they display as, the short text stand-in, the
picture at its natural size beside its controls, labels that neither get cut nor touch (no browser, no kernel;
`make test-browser` checks the same in Chromium).

Runs under ipywidgets 8 (the main .venv) and 7.7.1 (`make widgets7`, Colab's version), as test_widgets.py does.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # before matplotlib is imported anywhere

import ipywidgets  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from llm_lab import causal_softmax  # noqa: E402
from llm_lab.explore.widgets import dropout_explorer, heads_explorer, mask_explorer  # noqa: E402

IPYWIDGETS_MAJOR = int(ipywidgets.__version__.split(".")[0])


def test_explorers_display_as_their_container_widget(mha_weights, monkeypatch, capsys):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    for explorer in (mask_explorer(), dropout_explorer(), heads_explorer(mha_weights)):
        assert isinstance(explorer.ui, ipywidgets.VBox)
        parts = list(_descendants(explorer.ui))
        assert explorer.image in parts and explorer.readout_output in parts
        assert all(control in parts for control in explorer.controls.children)
        explorer._ipython_display_()
        assert shown[-1] is explorer.ui
    assert capsys.readouterr().out == ""


def _descendants(widget):
    for child in getattr(widget, "children", ()):
        yield child
        yield from _descendants(child)


def _text_plain(widget, monkeypatch):
    """The text/plain that displaying ``widget`` stores in the notebook, on ipywidgets 7 or 8."""
    if IPYWIDGETS_MAJOR >= 8:
        return widget._repr_mimebundle_()["text/plain"]
    import ipywidgets.widgets.widget as widget_module  # 7.x: _ipython_display_ sends a raw bundle

    bundles = []
    monkeypatch.setattr(widget_module, "display", lambda data, raw=False: bundles.append(data))
    widget._ipython_display_()
    return bundles[-1]["text/plain"]


def test_text_stand_in_is_a_short_fixed_hint(mha_weights, monkeypatch):
    # what a notebook shows before the cell runs, and what nbval compares: no VBox(children=... listing
    # in the notebook's language only: an English notebook shows no Chinese, a Chinese one no English sentence
    hints = {}
    for make in (mask_explorer, dropout_explorer, lambda **kw: heads_explorer(mha_weights, **kw)):
        for lang, words, other in (("en", "run this cell", "运行本单元"), ("zh", "运行本单元", "run this cell")):
            first, second = make(lang=lang), make(lang=lang)
            text = _text_plain(first.ui, monkeypatch)
            assert text == _text_plain(second.ui, monkeypatch) == repr(first)  # no model ids in it
            assert words in text and other not in text and len(text) <= 110
            assert "VBox" not in text and "children" not in text
            hints[type(first).__name__, lang] = text
    assert hints["MaskExplorer", "en"].startswith("mask explorer")
    assert hints["HeadsExplorer", "en"].startswith("heads explorer")
    assert hints["MaskExplorer", "zh"].startswith("遮蔽探索器")
    assert len(set(hints.values())) == 6


# --- layout: what fits a 1366x768 screen ------------------------------------------------------------------


def _css_px(value):
    assert value.endswith("px"), value
    return int(value[:-2])


@pytest.fixture
def heads12():
    torch.manual_seed(0)
    weights = causal_softmax(torch.randn(4, 4, 12, 12))  # notebook 06: 4 windows, 4 heads, 12 tokens
    tokens = [" I", " had", " always", " thought", " Jack", " Gis", "burn", " rather", " a", " cheap", " genius", "--"]
    return weights, tokens


def test_heatmap_shown_at_natural_size_never_stretched(heads12):
    weights, tokens = heads12
    for explorer in (mask_explorer(), dropout_explorer(), heads_explorer(weights, tokens)):
        png_w, png_h = explorer.png_size
        assert (png_w, png_h) == (
            int.from_bytes(explorer.png[16:20], "big"),
            int.from_bytes(explorer.png[20:24], "big"),
        )
        width, height = explorer.display_size
        # rendered at twice the CSS size: crisp on HiDPI screens, never upscaled on ordinary ones
        assert explorer.PIXEL_RATIO == 2 and png_w <= 2 * width <= png_w + 1 and png_h <= 2 * height <= png_h + 1
        assert (_css_px(explorer.image.layout.width), _css_px(explorer.image.layout.height)) == (width, height)
        # small enough that controls, heatmap and readout fit together below JupyterLab's bars at 768 px
        assert 250 <= height <= 480 and 250 <= width <= 560, explorer.display_size
    explorer.batch_slider.value = 3  # another window's labels: the size follows the new picture
    assert explorer.display_size == tuple(-(-s // 2) for s in explorer.png_size)
    assert explorer.image.layout.width == f"{explorer.display_size[0]}px"


def test_controls_sit_beside_the_heatmap_and_labels_are_not_cut():
    explorer = mask_explorer()
    top, readout = explorer.ui.children
    assert readout is explorer.readout_output
    assert top.children == (explorer.image, explorer.controls)
    assert top.layout.flex_flow == "row wrap"  # a narrow page puts the controls under the heatmap
    # ToggleButtons have a fixed button width by default, which cuts "mask + renormalize" to "mask + renormal…"
    assert explorer.method_toggle.style.button_width == "auto"
    assert dropout_explorer().mode_toggle.style.button_width == "auto"


def _overlaps(a, b, pad=0.5):
    return a.x0 < b.x1 + pad and b.x0 < a.x1 + pad and a.y0 < b.y1 + pad and b.y0 < a.y1 + pad


def test_12x12_heads_map_values_and_labels_do_not_touch(heads12):
    weights, tokens = heads12
    explorer = heads_explorer(weights, tokens)
    fig = explorer.figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)  # lay out the tick labels as they were saved
    ax = fig.axes[0]
    values = [t for t in ax.texts if t.get_text()]
    assert len(values) == 144
    boxes = [t.get_window_extent(renderer) for t in values]
    touching = [
        (values[i].get_text(), values[j].get_text())
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if _overlaps(boxes[i], boxes[j])
    ]
    assert touching == []
    # every value also stays inside its own cell
    cell = ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]
    assert max(b.width for b in boxes) < cell - 2, (max(b.width for b in boxes), cell)
    for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
        tick_boxes = [t.get_window_extent(renderer) for t in ticks]
        assert not any(_overlaps(a, b, pad=0) for a, b in zip(tick_boxes, tick_boxes[1:], strict=False))
    texts = {t.get_text() for t in values}
    assert "0" in texts and not any(t.startswith("0.") for t in texts)  # compact: ".37", exact zeros "0"
    # six tokens keep the two-decimal values
    assert {t.get_text() for t in mask_explorer().figure.axes[0].texts} >= {"1.00", "0.00"}
