"""What every explorer in :mod:`llm_lab.explore.widgets` shares: input checks, layout, rendering, the readout.

Compatibility: only widgets and calls that exist in both ipywidgets 7.7 (what Google Colab ships) and 8.x
are used (``IntSlider``, ``FloatSlider``, ``ToggleButtons``, ``Image``, ``Output``, ``VBox``/``HBox``,
``observe(..., names="value")``). Nothing is ever printed and no ``with output:`` block is used:

- the heatmap is drawn on a bare :class:`matplotlib.figure.Figure` (not pyplot, so the inline backend never
  shows a stray copy at the end of the cell and no figure stays open), saved as PNG and put into an
  ``Image`` widget;
- the readout text goes into an ``Output`` widget through ``append_stdout``.

Both only set widget state, which works the same with or without a running kernel and on both ipywidgets
majors, and never writes to the cell's own stdout (which nbval compares).
"""

from __future__ import annotations

import io

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure

from .. import _checks
from ..masks import causal_mask
from .figure_words import FIGURE_LANGUAGES
from .plotting import heatmap

_MAX_LISTED = 12  # readout lines list at most this many per-row values


# ---------------------------------------------------------------------------------------------------------
# input checks


def _as_cpu_tensor(name: str, value) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    value = value.detach().cpu().clone()
    if value.dtype == torch.bool or value.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype} (shape {tuple(value.shape)})")
    return value if value.is_floating_point() else value.float()


def _square_matrix(name: str, value) -> torch.Tensor:
    matrix = _as_cpu_tensor(name, value)
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"{name} must be a square (T, T) matrix with T >= 1, got shape {tuple(matrix.shape)}")
    if not torch.isfinite(matrix).all():
        raise ValueError(f"{name} has NaN or infinite entries (shape {tuple(matrix.shape)}); pass finite values")
    return matrix


def _token_list(name: str, tokens, num_tokens: int, shape: tuple) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
        raise TypeError(f"{name} must be a list of {num_tokens} strings, got {type(tokens).__name__}")
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"{name}[{i}] must be a str, got {token!r} ({type(token).__name__})")
    if len(tokens) != num_tokens:
        raise ValueError(f"{name} has {len(tokens)} strings but the weights have T={num_tokens} tokens (shape {shape})")
    return list(tokens)


def _label(token: str) -> str:
    # GPT-2 tokens carry their leading space (" journey"); whitespace-only tokens are shown quoted
    return token.strip() or repr(token)


def _row_values(values: torch.Tensor) -> str:
    shown = " ".join(f"{float(v):.4f}" for v in values[:_MAX_LISTED])
    return shown + (f" ... ({len(values)} rows)" if len(values) > _MAX_LISTED else "")


def _above_diagonal_max(weights: torch.Tensor) -> float:
    future = causal_mask(weights.shape[-1])
    return float(weights[future].abs().max()) if future.any() else 0.0


# ---------------------------------------------------------------------------------------------------------
# common machinery


class _ExplorerBox(widgets.VBox):
    """The explorer's container: a plain ``VBox`` whose text stand-in is a short hint.

    ipywidgets 7 and 8 both take a widget's ``text/plain`` from ``repr(widget)``; that text is what a
    notebook shows before it runs (or when it is not trusted) and what nbval compares, so it is fixed
    instead of the default ``VBox(children=(...`` listing, which holds model details.
    """

    hint = "interactive explorer: run this cell to get its controls"

    def __repr__(self) -> str:
        return self.hint


class _Explorer:
    """Shared parts: an ``Image`` widget for the heatmap, an ``Output`` widget for the readout, redraws.

    Layout: the heatmap with the controls to its right (they wrap below it on a narrow page), the readout
    underneath, so the whole explorer fits a 1366x768 screen. The heatmap PNG is rendered at
    ``PIXEL_RATIO`` times the displayed size and shown at exactly its CSS size (``display_size``): never
    stretched, crisp on HiDPI screens.
    """

    figsize = (4.2, 3.6)  # inches at DISPLAY_DPI css pixels per inch
    DISPLAY_DPI = 100
    PIXEL_RATIO = 2
    name = "explorer"  # what the text stand-in calls it (English / Chinese)
    name_zh = "探索器"

    def __init__(self, lang: str = "en"):
        _checks.one_of("lang", lang, FIGURE_LANGUAGES)
        self.lang = lang  # the language of the text stand-in: a notebook shows only its own language
        self.weights: torch.Tensor | None = None  # the (T, T) matrix shown now
        self.image_data: np.ndarray | None = None  # the array drawn on the last render
        self.figure: Figure | None = None  # the figure of the last render (not registered with pyplot)
        self.png: bytes = b""  # the PNG shown in ``self.image``
        self.png_size: tuple[int, int] = (0, 0)  # its (width, height) in pixels
        self.display_size: tuple[int, int] = (0, 0)  # (width, height) in CSS pixels on the page
        self.readout: str = ""  # the readout text shown in ``self.readout_output``
        self.render_count = 0
        self.image = widgets.Image(format="png", layout=widgets.Layout(flex="0 0 auto"))
        self.readout_output = widgets.Output(layout=widgets.Layout(margin="0 0 0 4px"))
        self.ui: widgets.VBox | None = None

    def _build(self, controls: list) -> None:
        for control in controls:
            control.observe(self._on_change, names="value")
        self.controls = widgets.VBox(controls, layout=widgets.Layout(margin="8px 0 0 8px", flex="0 1 auto"))
        top = widgets.HBox(
            [self.image, self.controls], layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start")
        )
        self.ui = _ExplorerBox([top, self.readout_output])
        self.ui.add_class("llm-lab-explorer")  # lets the browser test find every explorer on the page
        self.ui.hint = self.hint_text()
        self.update()

    def hint_text(self) -> str:
        """The text stand-in a saved notebook shows, in the explorer's language only."""
        if self.lang == "zh":
            return f"{self.name_zh}：运行本单元即可交互"
        return f"{self.name}: run this cell for the live controls"

    def _on_change(self, change) -> None:
        self.update()

    def update(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _figsize(self, num_tokens: int) -> tuple[float, float]:
        if num_tokens <= 8:
            return self.figsize
        # from 9 tokens on, cells of 0.3 in (30 css px) up to 12 tokens, so the printed values never touch
        side = 0.3 * min(num_tokens, 12)
        return (1.4 + side, 1.0 + side)

    def _show(self, weights: torch.Tensor, labels, title: str, vmax: float, readout: str) -> None:
        self.weights = weights
        self.image_data = weights.detach().float().cpu().numpy().copy()
        num_tokens = self.image_data.shape[0]
        fig = Figure(figsize=self._figsize(num_tokens), dpi=self.DISPLAY_DPI)
        ax = fig.subplots()
        heatmap(self.image_data, labels=labels, title=title, ax=ax, vmax=vmax, annotate=False)
        _annotate(ax, self.image_data, vmax)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight", dpi=self.DISPLAY_DPI * self.PIXEL_RATIO)
        self.figure = fig
        self.png = buffer.getvalue()
        self.png_size = _png_size(self.png)
        width, height = (-(-side // self.PIXEL_RATIO) for side in self.png_size)  # ceil: never upscaled
        self.display_size = (width, height)
        # a fixed CSS size: without it the image stretches to the output's width (2-3x, blurry)
        self.image.layout.width, self.image.layout.height = f"{width}px", f"{height}px"
        self.image.value = self.png
        self.readout = readout
        # replace, then append: the readout always shows only the latest state
        self.readout_output.outputs = ()
        self.readout_output.append_stdout(readout + "\n")
        self.render_count += 1

    def __repr__(self) -> str:
        return repr(self.ui)

    def _ipython_display_(self):
        # IPython calls this for display(explorer) and for an explorer left as a cell's last expression;
        # displaying the container widget works on ipywidgets 7 (_ipython_display_) and 8 (_repr_mimebundle_)
        from IPython.display import display

        display(self.ui)


def _png_size(png: bytes) -> tuple[int, int]:
    # the IHDR chunk comes first: width and height are big-endian uint32 at bytes 16..24
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _cell_text(value: float, compact: bool) -> str:
    text = f"{value:.2f}"
    if compact:  # 12 columns: ".37" instead of "0.37", "0" for an exact zero, so neighbours never touch
        if value == 0:
            return "0"
        if text.startswith("0."):
            return text[1:]
    return text


def _annotate(ax, array: np.ndarray, vmax: float) -> None:
    """Write each value in its cell (up to 12x12), in a colour readable on the cell's shade."""
    rows, cols = array.shape
    if rows * cols > 144:
        return
    compact = cols > 8
    fontsize = 6.5 if compact else 7
    for (i, j), value in np.ndenumerate(array):
        dark = value > 0.6 * vmax
        ax.text(
            j,
            i,
            _cell_text(float(value), compact),
            ha="center",
            va="center",
            fontsize=fontsize,
            color="white" if dark else "black",
        )


def _slider_style() -> dict:
    return {"description_width": "initial"}


def _toggle_style() -> dict:
    # "auto" sizes each button to its label; the default fixed width cuts "mask + renormalize"
    return {"button_width": "auto", "description_width": "initial"}
