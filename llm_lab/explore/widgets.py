"""Interactive explorers for the notebooks: move a control, watch the attention weights change.

    from llm_lab.explore.widgets import mask_explorer   # old path, until 0.3.0: from llm_lab.widgets
    mask_explorer()   # as the last line of a cell: controls, a heatmap and a short readout

Three explorers, each a small class built by a factory function:

- :func:`mask_explorer`: number of tokens ``T`` and the masking method (mask + renormalize, ``-inf`` +
  softmax, or no mask) on the running example's scores.
- :func:`dropout_explorer`: dropout rate ``p``, seed, train or eval mode on a weights matrix.
- :func:`heads_explorer`: batch row and head of a ``(B, nh, T, T)`` weights tensor, with token labels.

Every explorer keeps what it shows in plain attributes (``weights``, ``image_data``, ``figure``, ``png``,
``readout``), so tests and curious students can inspect them without a browser.

The machinery they share (layout, PNG rendering, the readout, what works on both ipywidgets 7.7 and 8.x) is in
:mod:`llm_lab.explore._explorer`.

Random draws happen under a fixed seed inside ``torch.random.fork_rng``: the picture depends only on the
controls, and the notebook's own random stream is left untouched. All tensors live on the CPU.
"""

from __future__ import annotations

import numbers

import ipywidgets as widgets
import torch
import torch.nn.functional as F

from ..attention import SelfAttention
from ..example import TOKENS, book_inputs
from ..masks import causal_softmax, mask_and_renormalize
from ._explorer import (
    _MAX_LISTED,
    _above_diagonal_max,
    _as_cpu_tensor,
    _Explorer,
    _label,
    _row_values,
    _slider_style,
    _square_matrix,
    _toggle_style,
    _token_list,
)

__all__ = [
    "DropoutExplorer",
    "HeadsExplorer",
    "MaskExplorer",
    "dropout_explorer",
    "example_attn_scores",
    "heads_explorer",
    "mask_explorer",
]


def example_attn_scores() -> torch.Tensor:
    """Scaled attention scores ``(6, 6)`` of the course's running example ("Your journey starts with one step").

    Built like the notebooks do it: ``torch.manual_seed(789); SelfAttention(d_in=3, d_out=2)``, scores
    ``queries @ keys.T / sqrt(d_out)``. The seed is set inside ``fork_rng``, so the caller's random
    state is unchanged. ``torch.softmax(scores, dim=-1)[0]`` starts 0.1921, 0.1646, ...
    """
    inputs = book_inputs()  # (6, 3)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(789)
        sa_v2 = SelfAttention(d_in=3, d_out=2)
    with torch.no_grad():
        queries, keys = sa_v2.W_query(inputs), sa_v2.W_key(inputs)  # (6, 2)
        return (queries @ keys.T) / keys.shape[-1] ** 0.5  # (6, 6)


# ---------------------------------------------------------------------------------------------------------
# 1. mask and softmax


class MaskExplorer(_Explorer):
    """Causal masking two ways on the first ``T`` tokens of a score matrix.

    Controls: ``tokens_slider`` (T, 1..max) and ``method_toggle`` (``"manual"``: softmax, zero the future,
    renormalize; ``"-inf"``: fill the future with -inf, then softmax; ``"none"``: plain softmax, no mask).
    After each change: ``weights`` (T, T), ``manual_weights`` and ``neg_inf_weights`` (both methods),
    ``max_difference`` (largest |manual - (-inf)|), ``image_data``, ``figure``, ``png``, ``readout``.
    """

    METHODS = {"manual": "mask + renormalize", "-inf": "-inf + softmax", "none": "no mask"}
    name, name_zh = "mask explorer", "遮蔽探索器"

    def __init__(self, attn_scores=None, tokens=None, num_tokens=None, method="manual", lang="en"):
        super().__init__(lang)
        if attn_scores is None:
            attn_scores = example_attn_scores()
            tokens = TOKENS if tokens is None else tokens
        self.attn_scores = _square_matrix("attn_scores", attn_scores)  # (T_max, T_max)
        max_tokens = self.attn_scores.shape[0]
        shape = tuple(self.attn_scores.shape)
        self.tokens = None if tokens is None else _token_list("tokens", tokens, max_tokens, shape)
        if num_tokens is None:
            num_tokens = max_tokens
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, numbers.Integral):
            raise TypeError(f"num_tokens must be an int, got {num_tokens!r} ({type(num_tokens).__name__})")
        if not 1 <= num_tokens <= max_tokens:
            raise ValueError(f"num_tokens must be in 1..{max_tokens} (attn_scores shape {shape}), got {num_tokens}")
        if method not in self.METHODS:
            raise ValueError(f"method must be one of {list(self.METHODS)}, got {method!r}")
        self.tokens_slider = widgets.IntSlider(
            value=int(num_tokens),
            min=1,
            max=max_tokens,
            step=1,
            description="T (tokens)",
            continuous_update=False,
            style=_slider_style(),
        )
        self.method_toggle = widgets.ToggleButtons(
            options=[(label, key) for key, label in self.METHODS.items()],
            value=method,
            description="method",
            style=_toggle_style(),
        )
        self.manual_weights = self.neg_inf_weights = None
        self.max_difference = 0.0
        self._build([self.tokens_slider, self.method_toggle])

    def update(self) -> None:
        num_tokens = self.tokens_slider.value
        method = self.method_toggle.value
        scores = self.attn_scores[:num_tokens, :num_tokens]  # (T, T)
        unmasked = torch.softmax(scores, dim=-1)
        self.manual_weights = mask_and_renormalize(unmasked)
        self.neg_inf_weights = causal_softmax(scores)
        self.max_difference = float((self.manual_weights - self.neg_inf_weights).abs().max())
        weights = {"manual": self.manual_weights, "-inf": self.neg_inf_weights, "none": unmasked}[method]
        same = torch.allclose(self.manual_weights, self.neg_inf_weights, atol=1e-6)
        readout = "\n".join(
            [
                f"T = {num_tokens} tokens, method: {self.METHODS[method]}",
                f"row sums: {_row_values(weights.sum(dim=-1))}",
                f"largest weight above the diagonal (the future): {_above_diagonal_max(weights):.4f}",
                f"max |manual - (-inf)| = {self.max_difference:.1e}, allclose: {same}",
            ]
        )
        labels = None if self.tokens is None else [_label(t) for t in self.tokens[:num_tokens]]
        self._show(weights, labels, f"{self.METHODS[method]}, T={num_tokens}", vmax=1.0, readout=readout)


def mask_explorer(attn_scores=None, tokens=None, num_tokens=None, method="manual", lang="en") -> MaskExplorer:
    """Explore causal masking: pick ``T`` and the method, see the weights and their row sums.

    ``attn_scores``: scaled scores ``(T, T)``; default: the running example (:func:`example_attn_scores`,
    with its six tokens as labels). ``tokens``: T strings for the axes. ``num_tokens``, ``method``: the
    starting values of the controls. ``lang`` (``"en"`` or ``"zh"``): the language of the one-line stand-in a
    saved notebook shows.
    """
    return MaskExplorer(attn_scores, tokens=tokens, num_tokens=num_tokens, method=method, lang=lang)


# ---------------------------------------------------------------------------------------------------------
# 2. dropout


class DropoutExplorer(_Explorer):
    """Dropout on a weights matrix, exactly as ``torch.manual_seed(seed); torch.nn.Dropout(p)(weights)``.

    Controls: ``p_slider`` (0..0.9), ``seed_slider`` (0..999), ``mode_toggle`` (``"train"`` / ``"eval"``).
    After each change: ``weights`` (after dropout), ``weights_before``, ``scale`` (1/(1-p) in train mode,
    1 in eval), ``zeroed`` (bool mask of weights dropout set to 0), ``zeroed_fraction`` (of the nonzero
    weights), ``image_data``, ``figure``, ``png``, ``readout``.
    """

    name, name_zh = "dropout explorer", "丢弃探索器"

    def __init__(self, attn_weights=None, tokens=None, p=0.5, seed=123, mode="train", lang="en"):
        super().__init__(lang)
        if attn_weights is None:
            attn_weights = causal_softmax(example_attn_scores())
            tokens = TOKENS if tokens is None else tokens
        self.weights_before = _square_matrix("attn_weights", attn_weights)  # (T, T)
        shape = tuple(self.weights_before.shape)
        self.tokens = None if tokens is None else _token_list("tokens", tokens, shape[0], shape)
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 0.9:
            raise ValueError(f"p must be a float in [0, 0.9] (the slider's range), got {p!r}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed <= 999:
            raise ValueError(f"seed must be an int in 0..999 (the slider's range), got {seed!r}")
        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
        self.p_slider = widgets.FloatSlider(
            value=float(p),
            min=0.0,
            max=0.9,
            step=0.05,
            description="p (dropout)",
            readout_format=".2f",
            continuous_update=False,
            style=_slider_style(),
        )
        self.seed_slider = widgets.IntSlider(
            value=int(seed),
            min=0,
            max=999,
            step=1,
            description="seed",
            continuous_update=False,
            style=_slider_style(),
        )
        self.mode_toggle = widgets.ToggleButtons(
            options=["train", "eval"],
            value=mode,
            description="mode",
            style=_toggle_style(),
        )
        self.scale = 1.0
        self.zeroed = None
        self.zeroed_fraction = 0.0
        self._build([self.p_slider, self.seed_slider, self.mode_toggle])

    def update(self) -> None:
        p = round(float(self.p_slider.value), 6)  # a slider may hand back 0.15000000000000002
        seed = int(self.seed_slider.value)
        training = self.mode_toggle.value == "train"
        before = self.weights_before
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            after = F.dropout(before, p=p, training=training)  # what nn.Dropout(p) does in this mode
        self.scale = 1.0 / (1.0 - p) if training else 1.0
        nonzero = before != 0
        self.zeroed = nonzero & (after == 0)
        num_nonzero = int(nonzero.sum())
        num_zeroed = int(self.zeroed.sum())
        self.zeroed_fraction = num_zeroed / num_nonzero if num_nonzero else 0.0
        if training:
            head = f"mode: train, p = {p:.2f}, seed = {seed}"
            scale = f"kept weights are scaled by 1/(1-p) = {self.scale:.2f}"
        else:
            head = f"mode: eval, p = {p:.2f} (dropout is switched off: the weights pass unchanged)"
            scale = "no scaling in eval mode (factor 1)"
        readout = "\n".join(
            [
                head,
                scale,
                f"zeroed: {num_zeroed} of {num_nonzero} nonzero weights ({100 * self.zeroed_fraction:.1f}%)",
                f"row sums: {_row_values(after.sum(dim=-1))}",
            ]
        )
        labels = None if self.tokens is None else [_label(t) for t in self.tokens]
        vmax = max(1.0, float(before.max()) * self.scale)
        title = f"dropout p={p:.2f}, {self.mode_toggle.value}"
        self._show(after, labels, title, vmax=vmax, readout=readout)


def dropout_explorer(attn_weights=None, tokens=None, p=0.5, seed=123, mode="train", lang="en") -> DropoutExplorer:
    """Explore dropout on attention weights: pick ``p``, the seed and train/eval mode.

    ``attn_weights``: a ``(T, T)`` matrix; default: the running example's causal weights (six tokens,
    labelled). Pass ``torch.ones(6, 6)`` to see the book's demo. ``p``, ``seed``, ``mode``: starting values.
    ``lang`` (``"en"`` or ``"zh"``): the language of the one-line stand-in a saved notebook shows.
    """
    return DropoutExplorer(attn_weights, tokens=tokens, p=p, seed=seed, mode=mode, lang=lang)


# ---------------------------------------------------------------------------------------------------------
# 3. heads


def _index_slider(description: str, value: int, size: int) -> widgets.IntSlider:
    """A slider over the indices 0..size-1 of one dimension, starting at ``value`` (disabled when size is 1)."""
    return widgets.IntSlider(
        value=int(value),
        min=0,
        max=size - 1,
        step=1,
        description=description,
        disabled=size == 1,
        continuous_update=False,
        style=_slider_style(),
    )


class HeadsExplorer(_Explorer):
    """One ``(T, T)`` slice at a time of multi-head weights ``(B, nh, T, T)``.

    Controls: ``batch_slider`` (0..B-1) and ``head_slider`` (0..nh-1), disabled when there is one choice.
    After each change: ``weights`` is ``attn_weights[batch, head]``, plus ``image_data``, ``figure``,
    ``png``, ``readout`` (shape, row sums, largest weight above the diagonal, each query's strongest key).
    ``tokens_per_row`` holds the label list used for each batch row (or None).
    """

    name, name_zh = "heads explorer", "注意力头探索器"

    def __init__(self, attn_weights, tokens=None, batch=0, head=0, lang="en"):
        super().__init__(lang)
        weights = _as_cpu_tensor("attn_weights", attn_weights)
        shape = tuple(weights.shape)
        if weights.dim() != 4:
            hint = ""
            if weights.dim() == 3:
                hint = (
                    "; for one head's weights (B, T, T) use attn_weights.unsqueeze(1), for the heads of one "
                    "sequence (nh, T, T) use attn_weights.unsqueeze(0)"
                )
            elif weights.dim() == 2:
                hint = "; for a single (T, T) matrix use attn_weights[None, None]"
            raise ValueError(f"attn_weights must have shape (B, nh, T, T), got {weights.dim()}-D shape {shape}{hint}")
        batch_size, num_heads, num_queries, num_keys = shape
        if num_queries != num_keys:
            raise ValueError(f"attn_weights must have shape (B, nh, T, T) with equal last two sizes, got {shape}")
        if min(shape) == 0:
            raise ValueError(f"attn_weights has an empty dimension: shape {shape}")
        if torch.isnan(weights).any():
            raise ValueError(f"attn_weights has NaN entries (shape {shape})")
        if not torch.isfinite(weights).all():
            raise ValueError(
                f"attn_weights has NaN or infinite entries (shape {shape}); pass the weights after the "
                "softmax, not the -inf masked scores"
            )
        self.attn_weights = weights  # (B, nh, T, T)
        self.tokens_per_row = self._tokens(tokens, batch_size, num_queries, shape)
        for name, value, size in (("batch", batch, batch_size), ("head", head, num_heads)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
            if not 0 <= value < size:
                raise ValueError(f"{name} must be in 0..{size - 1} (attn_weights shape {shape}), got {value}")
        self.batch_slider = _index_slider("batch", batch, batch_size)
        self.head_slider = _index_slider("head", head, num_heads)
        self.vmax = max(float(weights.max()), 1e-12)  # one colour scale for all slices
        self._build([self.batch_slider, self.head_slider])

    @staticmethod
    def _tokens(tokens, batch_size: int, num_tokens: int, shape: tuple):
        """None, one list of T strings for every row, or B lists of T strings (one per batch row)."""
        if tokens is None:
            return None
        if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
            raise TypeError(
                f"tokens must be a list of {num_tokens} strings or a list of {batch_size} such lists "
                f"(attn_weights shape {shape}), got {type(tokens).__name__}"
            )
        nested = [isinstance(t, (list, tuple)) for t in tokens]
        if any(nested) and not all(nested):  # lists mixed with single entries
            bad = tokens[nested.index(False)]
            raise TypeError(
                f"tokens mixes lists with single entries: found {bad!r} ({type(bad).__name__}); pass one list of "
                f"{num_tokens} strings, or {batch_size} such lists (one per batch row)"
            )
        if not any(nested):  # one flat list shared by every batch row
            if tokens and not any(isinstance(t, str) for t in tokens):
                raise TypeError(
                    f"tokens must be strings, found {tokens[0]!r} ({type(tokens[0]).__name__}): decode token ids "
                    "to strings first (e.g. [tokenizer.decode([i]) for i in ids])"
                )
            return [_token_list("tokens", tokens, num_tokens, shape)] * batch_size
        if len(tokens) != batch_size:
            raise ValueError(
                f"tokens has {len(tokens)} entries but attn_weights has B={batch_size} batch rows (shape {shape}); "
                f"pass one list of {num_tokens} strings per batch row, or a single list of {num_tokens} strings"
            )
        return [_token_list(f"tokens[{b}]", row, num_tokens, shape) for b, row in enumerate(tokens)]

    def update(self) -> None:
        batch, head = int(self.batch_slider.value), int(self.head_slider.value)
        batch_size, num_heads, num_tokens, _ = self.attn_weights.shape
        weights = self.attn_weights[batch, head]  # (T, T)
        labels = None
        if self.tokens_per_row is not None:
            labels = [_label(t) for t in self.tokens_per_row[batch]]
        names = labels if labels is not None else [str(i) for i in range(num_tokens)]
        strongest = weights.argmax(dim=-1).tolist()
        pairs = ", ".join(f"{names[q]}->{names[k]}" for q, k in enumerate(strongest[:_MAX_LISTED]))
        if num_tokens > _MAX_LISTED:
            pairs += ", ..."
        readout = "\n".join(
            [
                f"batch {batch} of 0..{batch_size - 1}, head {head} of 0..{num_heads - 1}: "
                f"attn_weights[{batch}, {head}] has shape ({num_tokens}, {num_tokens})",
                f"row sums: {_row_values(weights.sum(dim=-1))}",
                f"largest weight above the diagonal (the future): {_above_diagonal_max(weights):.4f}",
                f"strongest key per query: {pairs}",
            ]
        )
        self._show(weights, labels, f"batch {batch}, head {head}", vmax=self.vmax, readout=readout)


def heads_explorer(attn_weights, tokens=None, batch=0, head=0, lang="en") -> HeadsExplorer:
    """Explore multi-head attention weights one batch row and one head at a time.

    ``attn_weights``: ``(B, nh, T, T)``, e.g. the second output of
    ``MultiHeadAttention(...)(x, return_attn_weights=True)``. ``tokens``: labels for the axes, either one
    list of T strings shared by every batch row or a list of B such lists (one per row), or None.
    ``batch``, ``head``: starting values. ``lang`` (``"en"`` or ``"zh"``): the language of the one-line stand-in a
    saved notebook shows. Bad shapes or labels raise ``ValueError``/``TypeError`` naming them.
    """
    return HeadsExplorer(attn_weights, tokens=tokens, batch=batch, head=head, lang=lang)
