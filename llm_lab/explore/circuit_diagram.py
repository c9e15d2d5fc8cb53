"""The induction circuit of notebook 08, drawn as a picture of the mechanism.

It imports ``plotting``, so importing it registers the course's CJK font too; its words are in ``figure_words``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from .. import _checks
from .figure_words import FIGURE_LANGUAGES, figure_word
from .plotting import use_figure_font

use_figure_font()
BOX = {"boxstyle": "round,pad=0.3", "fc": "white"}


def induction_circuit_diagram(ax=None, lang: str = "en"):
    """The induction circuit on a row ``… A B … A``, drawn as a picture of the mechanism.

    A row of tokens; below it, layer 0's previous-token head: ``B``'s position attends to ``A`` just before it and
    writes "the token before me was A" into the residual stream there; above it, layer 1's induction head: the
    query at the last ``A`` matches the key at ``B``'s position, and the head copies ``B``, the prediction for the
    next token (dashed box). ``lang``: the language of the words (one of ``FIGURE_LANGUAGES``).
    Returns the ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.0))
    tokens = ["…", "A", "B", "…", "A"]
    for x, token in enumerate(tokens):
        ax.text(x, 0, token, ha="center", va="center", fontsize=13, bbox={**BOX, "ec": "0.4"})
    ax.text(5.2, 0, "B", ha="center", va="center", fontsize=13, color="C3", bbox={**BOX, "ec": "C3", "ls": "--"})
    ax.annotate("", xy=(5.0, 0), xytext=(4.25, 0), arrowprops={"arrowstyle": "->", "color": "C3"})
    ax.text(5.2, -0.55, figure_word("circuit copies", lang), ha="center", va="top", fontsize=8, color="C3")
    # layer 0, below the row: B's position reads the token before it
    ax.annotate(
        "",
        xy=(1.05, -0.3),
        xytext=(1.95, -0.3),
        arrowprops={"arrowstyle": "->", "color": "C2", "lw": 1.5, "connectionstyle": "arc3,rad=-0.6"},
    )
    ax.text(1.5, -0.75, figure_word("circuit layer 0", lang), ha="center", va="top", fontsize=8, color="C2")
    ax.text(3.1, -0.45, figure_word("circuit writes", lang), ha="center", va="top", fontsize=8, color="C2")
    # layer 1, above the row: the query at the last A finds the key at B's position
    ax.annotate(
        "",
        xy=(2.05, 0.3),
        xytext=(3.95, 0.3),
        arrowprops={"arrowstyle": "->", "color": "C0", "lw": 1.5, "connectionstyle": "arc3,rad=0.45"},
    )
    ax.text(3.0, 1.05, figure_word("circuit layer 1", lang), ha="center", va="bottom", fontsize=8, color="C0")
    ax.set_title(figure_word("circuit title", lang), fontsize=9)
    ax.set_xlim(-0.6, 6.0)
    ax.set_ylim(-1.5, 1.5)
    ax.axis("off")
    return ax
