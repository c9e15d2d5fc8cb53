"""Small matplotlib helpers shared by the notebooks and the widgets.

Importing this module registers the course's CJK font with matplotlib (``use_figure_font``): a subset of Noto Sans
CJK SC shipped in the package, holding the Chinese characters the zh figures draw, placed after the default family
so Latin text keeps matplotlib's own font. Colab and a fresh machine have no CJK font; without it a Chinese label
would draw as boxes. The helpers that put words in a figure take ``lang``, one of ``FIGURE_LANGUAGES`` (the
languages of ``FIGURE_WORDS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import font_manager

from .. import _checks, resources
from .figure_words import FIGURE_LANGUAGES, FIGURE_WORDS, figure_word  # noqa: F401 (FIGURE_WORDS: re-exported)


@cache
def _registered_family() -> str:
    """Add the shipped CJK subset to matplotlib's font list (once per process); its family name."""
    path = resources.verified_path(*resources.FIGURE_FONT)
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name()


def use_figure_font() -> str:
    """Register the shipped CJK subset with matplotlib and append it to ``font.family``; return its family name.

    Matplotlib draws each character with the first family in the list that has it: Latin text stays in the
    default font (DejaVu Sans), Chinese falls back to this one. Runs when this module is imported; call it again
    after ``plt.style.use`` or ``matplotlib.rcdefaults()``, which reset ``font.family``.
    """
    family = _registered_family()
    families = list(matplotlib.rcParams["font.family"])
    if family not in families:
        matplotlib.rcParams["font.family"] = [*families, family]
    return family


use_figure_font()


def _as_array(matrix) -> np.ndarray:
    if isinstance(matrix, torch.Tensor):
        matrix = matrix.detach().float().cpu().numpy()
    array = np.asarray(matrix, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {array.shape}")
    return array


def heatmap(
    matrix, labels=None, title=None, ax=None, annotate=True, fmt=".2f", cmap="Blues", vmin=0.0, vmax=None, lang="en"
):
    """Draw a (rows, cols) matrix as a heatmap; masked (-inf / nan) cells are left blank.

    ``labels``: token strings for both axes (queries on rows, keys on columns), or None. ``lang``: the language
    of the axis names (one of ``FIGURE_LANGUAGES``).
    Returns the ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    array = _as_array(matrix)
    if labels is not None and len(labels) != array.shape[0]:
        raise ValueError(f"got {len(labels)} labels for a matrix with {array.shape[0]} rows")
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3.5))
    shown = np.ma.masked_invalid(array)
    image = ax.imshow(shown, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if labels is not None:
        ax.set_xticks(range(len(labels)), labels, rotation=90)
        ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel(figure_word("key", lang))
    ax.set_ylabel(figure_word("query", lang))
    if title:
        ax.set_title(title)
    if annotate and array.size <= 144:
        # text colour follows the colour scale actually used, so a shared vmax keeps labels readable
        if vmax is not None:
            top = vmax
        else:
            top = np.nanmax(np.where(np.isfinite(array), array, np.nan)) if np.isfinite(array).any() else 1.0
        for (i, j), value in np.ndenumerate(array):
            if np.isnan(value):
                continue  # a blank cell stays blank
            text = "-inf" if value == -np.inf else format(value, fmt)
            dark = np.isfinite(value) and value > 0.6 * top
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    return ax


def _grid(ax, x0, y0, colors, cell=0.3, texts=None):
    """Draw a (rows, cols) grid of coloured cells with its top-left corner at (x0, y0); return its width, height."""
    from matplotlib.patches import Rectangle

    rows, cols = len(colors), len(colors[0])
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c * cell, y0 - (r + 1) * cell), cell, cell, fc=colors[r][c], ec="white"))
            if texts is not None:
                ax.text(
                    x0 + (c + 0.5) * cell,
                    y0 - (r + 0.5) * cell,
                    texts[r][c],
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white",
                )
    return cols * cell, rows * cell


def _check_positive_ints(**values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class _HeadSplitLayout:
    """Where the parts of ``head_split_diagram`` go: each grid has ``num_tokens`` rows of ``cell``-sized squares;
    the heads' blocks are stacked ``gap`` apart, and the full-width grids sit level with the middle of the stack."""

    num_tokens: int
    d_out: int
    num_heads: int
    cell: float = 0.3
    gap: float = 0.35

    @property
    def hs(self) -> int:
        return self.d_out // self.num_heads

    @property
    def height(self) -> float:  # one grid's height: T rows
        return self.num_tokens * self.cell

    @property
    def top(self) -> float:  # the full-width grids' top edge
        return self.num_heads * (self.height + self.gap) / 2 + self.height / 2

    @property
    def mid(self) -> float:  # the full-width grids' middle: where the arrows run
        return self.top - self.height / 2

    @property
    def heads_top(self) -> float:  # the first head's top edge
        return self.num_heads * (self.height + self.gap) - self.gap + (self.top - self.height) / 2

    def colors(self) -> list[list[str]]:
        """(T, d_out) cell colours: each feature column in the colour of the head it belongs to."""
        return [[f"C{c // self.hs}" for c in range(self.d_out)] for _ in range(self.num_tokens)]

    def features(self) -> list[list[str]]:
        """(T, d_out) cell texts: each column's feature index."""
        return [[f"{c}" for c in range(self.d_out)] for _ in range(self.num_tokens)]


def _arrow(ax, x_from, x_to, y, label):
    """A grey arrow from ``x_from`` to ``x_to`` at height ``y``, with the code it stands for above it."""
    ax.annotate("", xy=(x_to, y), xytext=(x_from, y), arrowprops={"arrowstyle": "->", "color": "0.3"})
    ax.text((x_from + x_to) / 2, y + 0.12, label, ha="center", va="bottom", fontsize=7, family="monospace")


def _labelled_grid(ax, x, layout: _HeadSplitLayout, colors, texts, label: str) -> float:
    """A full-width (T, d_out) grid at ``x`` with ``label`` above it; its width."""
    width, _ = _grid(ax, x, layout.top, colors, layout.cell, texts)
    ax.text(x + width / 2, layout.top + 0.1, label, ha="center", va="bottom", fontsize=8)
    return width


def _heads(ax, x, layout: _HeadSplitLayout) -> None:
    """The heads' (T, hs) blocks at ``x``, stacked top to bottom, each with its index and what it computes."""
    hs, colors, features = layout.hs, layout.colors(), layout.features()
    for h in range(layout.num_heads):
        y = layout.heads_top - h * (layout.height + layout.gap)
        block = [row[h * hs : (h + 1) * hs] for row in colors]
        w, _ = _grid(ax, x, y, block, layout.cell, [row[h * hs : (h + 1) * hs] for row in features])
        ax.text(x - 0.08, y - layout.height / 2, f"h={h}", ha="right", va="center", fontsize=8)
        ax.text(
            x + w + 0.15,
            y - layout.height / 2,
            r"softmax$(q k^T / \sqrt{hs})\,v$",
            ha="left",
            va="center",
            fontsize=7,
        )
    ax.text(x + hs * layout.cell / 2, layout.heads_top + 0.1, "(nh, T, hs)", ha="center", va="bottom", fontsize=8)


def head_split_diagram(num_tokens: int = 4, d_out: int = 6, num_heads: int = 2, ax=None, lang: str = "en"):
    """The head split and merge of multi-head attention, drawn for one sequence.

    Left to right: ``W_query(x)`` ``(T, d_out)`` with each feature column coloured by the head it belongs to;
    ``view`` + ``transpose`` cut it into ``num_heads`` blocks ``(T, hs)`` (one per head, each attends on its
    own); ``transpose`` + ``contiguous`` + ``view`` put the heads' context vectors side by side again (as notebook
    05's module writes it); ``out_proj`` mixes them, so every output feature (grey) draws on all heads. Text:
    code names, shapes and numbers, and the word "output" in ``lang`` (one of ``FIGURE_LANGUAGES``). Returns the
    ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    _check_positive_ints(num_tokens=num_tokens, d_out=d_out, num_heads=num_heads)
    if d_out % num_heads:
        raise ValueError(f"d_out={d_out} must be divisible by num_heads={num_heads}")
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.4))
    layout = _HeadSplitLayout(num_tokens, d_out, num_heads)
    x, mid = 0.0, layout.mid
    width = _labelled_grid(ax, x, layout, layout.colors(), layout.features(), "W_query(x)\n(T, d_out)")
    _arrow(ax, x + width + 0.15, x + width + 2.0, mid, "view(T, nh, hs)\n.transpose(0, 1)")
    x += width + 2.4
    _heads(ax, x, layout)
    x += layout.hs * layout.cell + 2.3
    _arrow(ax, x - 0.1, x + 1.8, mid, ".transpose(0, 1)\n.contiguous()\n.view(T, d_out)")
    x += 2.0
    width = _labelled_grid(ax, x, layout, layout.colors(), None, "context_vec\n(T, d_out)")
    _arrow(ax, x + width + 0.1, x + width + 1.3, mid, "out_proj")
    x += width + 1.5
    grey = [["0.45"] * d_out for _ in range(num_tokens)]
    width = _labelled_grid(ax, x, layout, grey, None, f"{figure_word('output', lang)}\n(T, d_out)")
    ax.set_xlim(-0.6, x + width + 0.2)
    bottom = layout.heads_top - num_heads * (layout.height + layout.gap) + 0.1
    ax.set_ylim(bottom, max(layout.top, layout.heads_top) + 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def tile_diagram(num_tokens: int = 16, block_size: int = 4, ax=None, lang: str = "en"):
    """Blocked causal attention's tiles: which (query block, key block) tiles a fused kernel computes.

    Every ``(query i, key j)`` pair is a cell. Tiles below the diagonal are computed whole (blue); tiles on it are
    computed with the keys after their query hidden (orange, set to ``-inf``); tiles above it lie entirely in the
    future and are skipped (white). ``lang``: the language of the title and axis names (one of
    ``FIGURE_LANGUAGES``).
    Returns the ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
    from matplotlib.patches import Rectangle

    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    _check_positive_ints(num_tokens=num_tokens, block_size=block_size)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 4.2))
    blocks = -(-num_tokens // block_size)  # ceil: the last block may be shorter
    image = np.ones((num_tokens, num_tokens, 3))  # white: a skipped tile
    visible, hidden = np.array([0.27, 0.51, 0.71]), np.array([0.99, 0.75, 0.45])
    for i in range(num_tokens):
        for j in range(num_tokens):
            if j // block_size <= i // block_size:  # the tile is computed
                image[i, j] = visible if j <= i else hidden
    ax.imshow(image, extent=(-0.5, num_tokens - 0.5, num_tokens - 0.5, -0.5))
    for qb in range(blocks):
        for kb in range(blocks):
            lo_q, lo_k = qb * block_size - 0.5, kb * block_size - 0.5
            size_q = min(block_size, num_tokens - qb * block_size)
            size_k = min(block_size, num_tokens - kb * block_size)
            ax.add_patch(Rectangle((lo_k, lo_q), size_k, size_q, fill=False, ec="0.2", lw=1.2))
            if kb > qb:
                ax.text(lo_k + size_k / 2, lo_q + size_q / 2, "×", ha="center", va="center", color="0.6")
    computed = blocks * (blocks + 1) // 2
    title = figure_word(
        "tiles", lang, num_tokens=num_tokens, block_size=block_size, computed=computed, total=blocks * blocks
    )
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(figure_word("keys j", lang))
    ax.set_ylabel(figure_word("queries i", lang))
    ticks = list(range(0, num_tokens, block_size))
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    return ax


def _batch_grid(ax, x, top, colors, cell) -> float:
    """One sequence's grid at ``x`` with a grey copy behind it, offset up and right: the batch's other sequences."""
    from matplotlib.patches import Rectangle

    rows, cols = len(colors), len(colors[0])
    shift = cell * 0.6
    ax.add_patch(Rectangle((x + shift, top + shift - rows * cell), cols * cell, rows * cell, fc="0.85", ec="0.6"))
    return _grid(ax, x, top, colors, cell)[0]


def causal_attention_shapes(
    batch_size: int = 2, num_tokens: int = 6, d_in: int = 3, d_out: int = 2, ax=None, lang="en"
):
    """The tensors of ``CausalAttention.forward`` and their shapes, left to right, for one batch.

    ``x`` ``(B, T, d_in)``; the projections ``W_query``, ``W_key``, ``W_value`` give ``queries``, ``keys`` and
    ``values`` ``(B, T, d_out)``; ``queries @ keys.transpose(1, 2)`` gives ``attn_scores`` ``(B, T, T)``;
    ``masked_fill`` sets the future to ``-inf`` (white cells marked ×); the softmax (scaled by ``√d_out``) and the
    dropout give ``attn_weights`` ``(B, T, T)``, 0 in the future; ``attn_weights @ values`` gives ``context_vec``
    ``(B, T, d_out)``. Each tensor: one sequence's ``T`` rows, a cell per number, a grey copy behind it for the rest
    of the batch; under it its shape in letters (``T`` is ``num_tokens``) and numbers. ``lang``: the title's
    language (``FIGURE_LANGUAGES``). Returns the ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    _check_positive_ints(batch_size=batch_size, num_tokens=num_tokens, d_in=d_in, d_out=d_out)
    if ax is None:
        _, ax = plt.subplots(figsize=(13, 3.6))
    cell = min(0.3, 1.8 / num_tokens)
    top, mid = num_tokens * cell, num_tokens * cell / 2
    future = [[c > r for c in range(num_tokens)] for r in range(num_tokens)]

    def label(x, width, name, letters, numbers):
        ax.text(x + width / 2, top + cell * 0.6 + 0.08, name, ha="center", va="bottom", fontsize=8, family="monospace")
        ax.text(x + width / 2, -0.12, f"{letters}\n{numbers}", ha="center", va="top", fontsize=7)

    def arrow(x_from, code, length=1.9):
        _arrow(ax, x_from + 0.15, x_from + length - 0.15, mid, code)
        return x_from + length

    x = 0.0
    width = _batch_grid(ax, x, top, [["0.55"] * d_in] * num_tokens, cell)
    label(x, width, "x", "(B, T, d_in)", (batch_size, num_tokens, d_in))
    x = arrow(x + width + cell * 0.6, "W_query\nW_key\nW_value", 2.0)
    start = x
    for name, color in (("queries", "C0"), ("keys", "C1"), ("values", "C2")):
        width = _batch_grid(ax, x, top, [[color] * d_out] * num_tokens, cell)
        ax.text(x + width / 2, top + cell * 0.6 + 0.08, name, ha="center", va="bottom", fontsize=8, family="monospace")
        x += max(width + cell * 0.6, 1.3)
    label(start, x - start - 1.3 + width, "", "(B, T, d_out)", (batch_size, num_tokens, d_out))
    x = arrow(x - 1.3 + width + cell * 0.6, "queries @\nkeys.transpose(1, 2)", 3.3)
    width = _batch_grid(ax, x, top, [["C0"] * num_tokens] * num_tokens, cell)
    label(x, width, "attn_scores", "(B, T, T)", (batch_size, num_tokens, num_tokens))
    x = arrow(x + width + cell * 0.6, "masked_fill(\nmask[:T, :T], -inf)", 3.3)
    width = _batch_grid(ax, x, top, [["white" if hidden else "C0" for hidden in row] for row in future], cell)
    for r, c in zip(*np.triu_indices(num_tokens, 1), strict=True):  # the future: -inf
        ax.text(x + (c + 0.5) * cell, top - (r + 0.5) * cell, "×", ha="center", va="center", size=6, color="0.5")
    label(x, width, "attn_scores", "(B, T, T)", (batch_size, num_tokens, num_tokens))
    x = arrow(x + width + cell * 0.6, "softmax(/ √d_out)\ndropout", 2.9)
    width = _batch_grid(ax, x, top, [["white" if hidden else "C9" for hidden in row] for row in future], cell)
    label(x, width, "attn_weights", "(B, T, T)", (batch_size, num_tokens, num_tokens))
    x = arrow(x + width + cell * 0.6, "attn_weights\n@ values", 2.2)
    width = _batch_grid(ax, x, top, [["C3"] * d_out] * num_tokens, cell)
    label(x, width, "context_vec", "(B, T, d_out)", (batch_size, num_tokens, d_out))
    title = figure_word("shapes", lang, b=batch_size, T=num_tokens, d_in=d_in, d_out=d_out)
    ax.set_title(title, fontsize=9, loc="left")
    ax.set(xlim=(-0.3, x + width + 0.6), ylim=(-0.9, top + cell * 0.6 + 0.5))
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _two_decimals(x: float) -> str:
    return f"{round(float(x), 2) + 0.0:.2f}"  # + 0.0: -0.001 prints 0.00, not -0.00


def _one_query(attn_scores_row, attn_weights_row, values, labels, query):
    """``attention_diagram``'s inputs as arrays: scores (T,), weights (T,), values (T, d_v); checked to agree."""
    scores = _as_array(torch.as_tensor(attn_scores_row).reshape(1, -1))[0]
    weights = _as_array(torch.as_tensor(attn_weights_row).reshape(1, -1))[0]
    vals = _as_array(values)
    num_tokens = len(scores)
    if not (len(weights) == vals.shape[0] == len(labels) == num_tokens):
        raise ValueError(
            f"got {len(scores)} scores, {len(weights)} weights, {vals.shape[0]} values and "
            f"{len(labels)} labels: one of each per key"
        )
    if not 0 <= query < num_tokens:
        raise ValueError(f"query={query} is not a key index 0..{num_tokens - 1}")
    return scores, weights, vals


_BOX = {"boxstyle": "round,pad=0.3", "fc": "white"}


def _key_row(ax, j, y, middle, label, score, weight, value, hidden):
    """Key ``j``'s row at height ``y``: its line from the query (at ``middle``), its box, its score, its weight as
    a bar and a number, its value vector and, if it has weight, its arrow into the context vector."""
    style = {"color": "0.7", "ls": "--", "lw": 0.8} if hidden else {"color": "C0", "lw": 0.5 + 6 * weight}
    ax.plot([0.8, 2.2], [middle, y], **style)
    ax.text(
        2.9,
        y,
        f"$k_{{{j}}}$ {label}",
        ha="center",
        va="center",
        color="0.6" if hidden else "black",
        bbox={**_BOX, "ec": "0.7" if hidden else "C0"},
    )
    ax.text(4.4, y, "$-\\infty$" if hidden else f"{score:.2f}", ha="center", va="center")
    ax.barh(y, 1.2 * weight, left=5.1, height=0.5, color="C0")
    ax.text(6.4, y, f"{weight:.2f}", ha="left", va="center")
    vector = ", ".join(_two_decimals(x) for x in value)
    ax.text(7.3, y, f"$v_{{{j}}}$ = ({vector})", ha="left", va="center", alpha=1.0 if weight > 0 else 0.4)
    if weight > 0:
        ax.annotate(
            "",
            xy=(10.6, middle),
            xytext=(9.8, y),
            arrowprops={"arrowstyle": "->", "color": "C0", "lw": 0.5 + 3 * weight},
        )


def _column_heads(ax, query, top):
    """The columns' names above the rows: the code names of the notebooks, so no word needs a translation."""
    heads = (
        (0.3, f"queries[{query}]"),
        (2.9, "keys"),
        (4.4, "$q \\cdot k_j / \\sqrt{d_k} + M_j$"),
        (6.4, "attn_weights"),
        (8.5, "values"),
        (11.7, f"context_vec[{query}]"),
    )
    for x, head in heads:
        ax.text(x, top, head, ha="center", va="bottom", fontsize=9, color="0.3")


def attention_diagram(attn_scores_row, attn_weights_row, values, labels, query, causal=True, ax=None):
    """Draw the attention of ONE query as a picture of the mechanism, not of a tensor.

    Left to right: the query, a line to every key (thicker = more weight, dashed grey = hidden), the scaled
    score of each key, its softmax weight as a bar, the value vectors, and the weighted average of the values:
    the query's context vector. ``attn_scores_row`` (T,): the query's scaled scores; ``attn_weights_row`` (T,):
    their (masked) softmax; ``values`` (T, d_v); ``labels``: T token strings; ``query``: the query's index.
    ``causal``: the keys after the query are hidden, shown with the score the mask gives them, -inf (so is any
    key whose score is -inf). All text is symbols, numbers, code names and the labels: no font beyond matplotlib's own.
    Returns the ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
    scores, weights, vals = _one_query(attn_scores_row, attn_weights_row, values, labels, query)
    num_tokens = len(scores)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.8))
    rows = num_tokens - 1 - np.arange(num_tokens)  # key 0 at the top
    middle = (num_tokens - 1) / 2
    ax.text(0.3, middle, f"$q$\n{labels[query]}", ha="center", va="center", bbox={**_BOX, "ec": "C1"})
    context = weights @ vals  # (d_v,)
    for j, y in enumerate(rows):
        hidden = (causal and j > query) or scores[j] == -np.inf
        _key_row(ax, j, y, middle, labels[j], scores[j], weights[j], vals[j], hidden)
    vector = ", ".join(_two_decimals(x) for x in context)
    ax.text(11.7, middle, f"$\\sum_j\\, w_j v_j$\n({vector})", ha="center", va="center", bbox={**_BOX, "ec": "C1"})
    _column_heads(ax, query, num_tokens - 0.2)
    ax.set_xlim(-0.4, 12.9)
    ax.set_ylim(-0.7, num_tokens + 0.3)
    ax.axis("off")
    return ax
