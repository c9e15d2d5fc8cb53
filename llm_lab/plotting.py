"""Small matplotlib helpers shared by the notebooks and the widgets."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch


def _as_array(matrix) -> np.ndarray:
    if isinstance(matrix, torch.Tensor):
        matrix = matrix.detach().float().cpu().numpy()
    array = np.asarray(matrix, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {array.shape}")
    return array


def heatmap(matrix, labels=None, title=None, ax=None, annotate=True, fmt=".2f", cmap="Blues", vmin=0.0, vmax=None):
    """Draw a (rows, cols) matrix as a heatmap; masked (-inf / nan) cells are left blank.

    ``labels``: token strings for both axes (queries on rows, keys on columns), or None.
    Returns the ``Axes``; call ``plt.show()`` afterwards in a notebook.
    """
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
    ax.set_xlabel("key")
    ax.set_ylabel("query")
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
