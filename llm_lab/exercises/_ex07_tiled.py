"""Notebook 07 (transfer): blocked causal attention over all queries with an online softmax; sliding-window
attention of a chunk of new queries on a KV cache, both edges of its mask aligned to the newest query."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ._core import Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same, shape_str
from ._harness import last_observed
from ._observe import called, called_matching, marked
from ._shared import call_unchanged, gen, unless_reference
from ._texts_ex07_tiled import _CACHED_FIXES, _CACHED_MESSAGES, _FIXES, _MESSAGES

NEG_INF = float("-inf")


def tiled(q, k, v, block, *, causal=True, scale=True, rescale_acc=True, rescale_sum=True, skip=False, init=NEG_INF):
    """Blocked attention with an online softmax, optionally with one planted mistake.

    ``skip``: key blocks wholly in the future are not visited (the notebook's loop); ``init``: the running
    maximum's start (``0.0``: the underflow mistake)."""
    b, nh, t, hs = q.shape
    q = q / hs**0.5 if scale else q
    out = torch.empty_like(v)
    for qs in range(0, t, block):
        qb = q[:, :, qs : qs + block]
        m = torch.full(qb.shape[:-1], init, dtype=q.dtype)
        s_run = torch.zeros(qb.shape[:-1], dtype=q.dtype)
        acc = torch.zeros(*qb.shape[:-1], hs, dtype=q.dtype)
        rows = torch.arange(qs, qs + qb.shape[2]).unsqueeze(-1)
        for ks in range(0, qs + qb.shape[2] if skip else t, block):
            scores = qb @ k[:, :, ks : ks + block].transpose(-2, -1)
            if causal:
                cols = torch.arange(ks, min(ks + block, t))
                scores = scores.masked_fill(cols > rows, NEG_INF)
            m_new = torch.maximum(m, scores.amax(-1))
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # an all-hidden block so far
            p = torch.exp(scores - safe.unsqueeze(-1))
            factor = torch.exp(m - safe)
            s_run = (s_run * factor if rescale_sum else s_run) + p.sum(-1)
            acc = (acc * factor.unsqueeze(-1) if rescale_acc else acc) + p @ v[:, :, ks : ks + block]
            m = m_new
        out[:, :, qs : qs + block] = acc / s_run.unsqueeze(-1)
    return out


def _extreme_scores() -> tuple:
    """(1, 1, 4, 4) queries and keys whose scaled scores are exact in float32 and far past what exp survives:
    row 0 sees one score, -800 (a running maximum started at 0 underflows it to 0/0); row 1 sees 800 and 790
    (exp overflows even float64 unless the maximum is subtracted); rows 2 and 3 jump by 500 between blocks."""
    k = 40.0 * torch.eye(4)  # score(i, j) = q[i, j] * 40 / sqrt(4) = 20 * q[i, j]
    q = torch.tensor([[-40.0, 0, 0, 0], [40, 39.5, 0, 0], [-40, 0, 0.25, 0], [-25, 0, 25, 50]])
    return q[None, None], k[None, None]


# (B, nh, T, hs, block_size, kind): blocks that divide T, that do not, one block, one-token blocks; scores around
# +-100 ("large": exp overflows float32 past 88.7 unless the running maximum is subtracted); hand-built scores of
# +-800 ("extreme": past float64's exp, and below what a running maximum started at 0 can hold); and a long
# sequence ("long") where the (T, T) scores, or block_size whole rows of them, are far larger than any tensor
# blocked attention needs: B * nh * T * hs inputs, B * nh * block_size**2 scores per step.
CASES = (
    (1, 1, 8, 4, 4, "plain"),
    (2, 3, 10, 8, 4, "plain"),
    (1, 2, 7, 4, 3, "plain"),
    (2, 1, 5, 4, 8, "plain"),
    (1, 1, 6, 2, 1, "plain"),
    (1, 2, 8, 4, 4, "large"),
    (1, 1, 4, 4, 1, "extreme"),
    (1, 1, 4, 4, 3, "extreme"),
    (2, 4, 64, 2, 8, "long"),
)
LABELS = {"plain": "", "large": " large scores", "extreme": " extreme scores", "long": ""}


def _inputs(g, b, nh, t, hs, kind):
    q, k, v = (torch.randn(b, nh, t, hs, generator=g) for _ in range(3))
    if kind == "large":
        q, k = q * 10.0, k * 10.0
    elif kind == "extreme":
        q, k = _extreme_scores()
    return q, k, v


def _run(fn, q, k, v, block, case):
    """The learner's call on copies (observed); Fail if it changed them or reached SDPA by any route."""
    try:
        out = call_unchanged(
            fn, q, k, v, block, names=("queries", "keys", "values", "block_size"), case=case, observe=True
        )
    finally:
        sdpa = called_matching(last_observed(), "scaled_dot_product")
        if sdpa:  # before anything else, a raised error included: the ban holds whatever the values
            unless_reference(Fail("uses_sdpa", ref=sdpa))
    return as_tensor(out, case), last_observed()


def _full_blocks_work(fn, q, k, v, block, case) -> bool:
    """Does the learner's code work once T is cut to a multiple of block_size (after it raised on the rest)?"""
    full = q.shape[-2] // block * block
    try:
        out, _ = _run(fn, *(t[:, :, :full] for t in (q, k, v)), block, case)
    except Fail:
        return False
    return same(out, _want(*(t[:, :, :full] for t in (q, k, v))))


def _want(q, k, v):
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()


def _mistakes(q, k, v, block, init=None) -> list:
    """The known wrong computations; ``init=0.0``: only the running maximum started at 0."""
    if init is not None:
        return [("max_init_zero", lambda: tiled(q, k, v, block, init=init))]
    return [
        ("future_open", lambda: tiled(q, k, v, block, causal=False)),
        ("future_open", lambda: tiled(q, k, v, block, causal=False, skip=True)),  # the notebook's skipping kept
        ("scale_missing", lambda: tiled(q, k, v, block, scale=False)),
        ("rescale_missing", lambda: tiled(q, k, v, block, rescale_acc=False, rescale_sum=False)),
        ("rescale_missing", lambda: tiled(q, k, v, block, rescale_acc=False)),
        ("rescale_missing", lambda: tiled(q, k, v, block, rescale_sum=False)),
    ]


def body_tiled_attention(fn) -> list[str]:
    g = gen(1212)
    cases = []
    for b, nh, t, hs, block, kind in CASES:
        q, k, v = _inputs(g, b, nh, t, hs, kind)
        case = f"queries.shape={shape_str(q.shape)}, block_size={block}" + {
            "large": ", scores x100",
            "extreme": ", scores up to 1000",
        }.get(kind, "")
        try:
            out, observed = _run(fn, q, k, v, block, case)
        except LearnerError:
            if t % block and _full_blocks_work(fn, q, k, v, block, case):
                raise Fail("partial_block", case=case) from None
            raise
        want = _want(q, k, v)
        if kind in ("large", "extreme") and out.shape == want.shape and not torch.isfinite(out).all():
            diagnose(out, _mistakes(q, k, v, block, init=0.0), want, case=case)
            raise Fail("max_not_subtracted", case=case)
        full = t // block * block
        if (
            0 < full < t
            and out.shape == want.shape
            and not same(out, want)
            and same(out[:, :, :full], want[:, :, :full])
        ):
            raise Fail("partial_block", case=case)
        compare(out, want, case, _mistakes(q, k, v, block), atol=1e-5 if kind in ("plain", "long") else 1e-4)
        limit = b * nh * t * block  # block_size whole rows of scores per batch entry and head
        if called(observed, "numpy", "__array__", "tolist"):  # the size bound below sees torch tensors only
            unless_reference(Fail("left_torch", case=case))
        largest = int((observed or {}).get("largest") or 0)  # no record (a kernel that sent none): nothing seen
        if kind == "long" and largest >= limit:
            unless_reference(Fail("not_blocked", largest=largest, step=b * nh * block * block, limit=limit, case=case))
        cases.append(f"T={t} block={block}" + LABELS[kind])
    return cases


# ---- a chunk of new queries on a KV cache -------------------------------------------------------------------


def cached(
    q,
    k,
    v,
    window,
    *,
    align="bottom_right",
    scale=True,
    window_align="bottom_right",
    width=0,
    window_after_softmax=False,
    empty_rows=0.0,
):
    """The reference and its known mistakes. The causal edge: aligned bottom right (query i at position
    k_len - q_len + i), top left (``is_causal=True``'s), shifted one key too far back (the query's own key hidden),
    or absent (``align=None``). The window's edge (a query sees its own key and the ``window - 1`` before it):
    aligned bottom right, top left, to the newest key for every query of the chunk (``"newest_key"``: the last
    ``window`` keys of the cache), absent (``window_align=None``), or ``width`` keys too wide (> 0) or narrow;
    ``window_after_softmax``: the softmax over the causal past, then the weights outside the window zeroed, not
    renormalised. ``empty_rows``: the output of a query that sees no key (0, as SDPA gives, or NaN, as a softmax
    of a row of -inf gives)."""
    q_len, k_len = q.shape[-2], k.shape[-2]
    rows, cols = torch.arange(q_len).unsqueeze(-1), torch.arange(k_len)
    offsets = {"bottom_right": k_len - q_len, "top_left": 0, "own_hidden": k_len - q_len - 1}
    s = (q.double() @ k.double().transpose(-2, -1)) / (q.shape[-1] ** 0.5 if scale else 1.0)
    hidden = torch.zeros(q_len, k_len, dtype=torch.bool)
    if align is not None:
        hidden |= cols > rows + offsets[align]
    outside = torch.zeros(q_len, k_len, dtype=torch.bool)
    if window_align == "newest_key":
        outside |= cols <= k_len - 1 - (window + width)
    elif window_align is not None:
        outside |= cols <= rows + offsets[window_align] - (window + width)
    if window_after_softmax:
        weights = torch.softmax(s.masked_fill(hidden, NEG_INF), dim=-1).masked_fill(outside, 0.0)
    else:
        weights = torch.softmax(s.masked_fill(hidden | outside, NEG_INF), dim=-1)
    return (weights.nan_to_num(empty_rows) @ v.double()).float()


# (B, nh, q_len, k_len, hs, window): one new token on a cache of 6 with a window as long as the cache, a chunk of 5
# longer than its window of 2 (the window cuts inside the chunk: every wrong edge differs from every other here), a
# chunk of 3 with a window of 3, a chunk as long as the cache (a full prompt) with a window longer than it, a chunk
# of 2 on 9 keys with a window of 4, a window of 1 (each query sees only its own key)
CACHED_CASES = [
    (1, 1, 1, 6, 4, 6),
    (1, 2, 5, 8, 2, 2),
    (2, 3, 3, 7, 5, 3),
    (1, 2, 4, 4, 8, 10),
    (2, 1, 2, 9, 3, 4),
    (2, 2, 3, 6, 4, 1),
]
CACHED_MISTAKES = (
    ("mask_top_left", {"align": "top_left", "window_align": "top_left"}),
    ("mask_top_left", {"align": "top_left"}),
    ("cache_future_open", {"align": None}),
    ("cache_own_key_hidden", {"align": "own_hidden"}),
    ("window_ignored", {"window_align": None}),
    ("window_top_left", {"window_align": "top_left"}),
    ("window_one_too_wide", {"width": 1}),
    ("window_one_too_narrow", {"width": -1}),
    ("scale_missing", {"scale": False}),
)
# named only when the learner's output is theirs on every case (run in full): (hint, its ways of computing it)
CACHED_WHOLE_MISTAKES = (
    ("window_not_renormalized", ({"window_after_softmax": True},)),
    (
        "window_from_newest_key",
        ({"window_align": "newest_key"}, {"window_align": "newest_key", "empty_rows": float("nan")}),
    ),
)


def _cached_wrong(out, q, k, v, window, case) -> None:
    """Fail for the first wrong case: a mistake read on this case alone, else shape, NaN or the first wrong value."""
    mistakes = [(hint, functools.partial(cached, q, k, v, window, **kw)) for hint, kw in CACHED_MISTAKES]
    compare(out, cached(q, k, v, window), case, mistakes)


def body_cached_attention(fn) -> list[str]:
    g = gen(707)
    cases, observed, runs, wrong = [], [], [], None
    for b, nh, q_len, k_len, hs, window in CACHED_CASES:
        q = torch.randn(b, nh, q_len, hs, generator=g)
        k, v = torch.randn(b, nh, k_len, hs, generator=g), torch.randn(b, nh, k_len, hs, generator=g)
        case = f"queries.shape={shape_str(q.shape)}, keys.shape={shape_str(k.shape)}, window={window}"
        try:
            out = as_tensor(
                call_unchanged(
                    fn, q, k, v, window, names=("queries", "keys", "values", "window"), case=case, observe=True
                ),
                case,
            )
        except Fail:
            if wrong is not None:  # an earlier case was wrong: that is said first
                _cached_wrong(*wrong)
            raise
        observed.append(last_observed())
        runs.append((out, q, k, v, window))
        if wrong is None and not same(out, cached(q, k, v, window)):
            wrong = (out, q, k, v, window, case)
        cases.append(f"q_len={q_len} k_len={k_len} window={window}")
    if wrong is not None:
        for hint, ways in CACHED_WHOLE_MISTAKES:
            if all(any(same(out, cached(q, k, v, w, **kw)) for kw in ways) for out, q, k, v, w in runs):
                raise Fail(hint, case=wrong[-1])
        _cached_wrong(*wrong)
    for record in observed:  # "build that mask yourself": judged once every value is right
        if marked(record, "is_causal=True"):
            unless_reference(Fail("uses_is_causal", ref=called_matching(record, "scaled_dot_product") or "is_causal"))
    return cases


RECORDS = [
    Exercise(
        name="cached_attention",
        notebook="07",
        body=body_cached_attention,
        points=2,
        takes="function",
        signature="``fn(queries (B, nh, q_len, hs), keys, values (B, nh, k_len, hs), window) -> (B, nh, q_len, hs)``: "
        "sliding-window causal attention of the q_len newest tokens on all k_len keys and values (the cache included), "
        "``q_len <= k_len``: each query sees its own key and the ``window - 1`` before it.",
        hints=(
            "mask_top_left",
            "cache_future_open",
            "cache_own_key_hidden",
            "window_ignored",
            "window_top_left",
            "window_one_too_wide",
            "window_one_too_narrow",
            "window_not_renormalized",
            "window_from_newest_key",
            "scale_missing",
            "input_modified",
            "uses_is_causal",
        ),
        references=(
            "kv_cache.cached_attention",
            "kv_cache.causal_mask_bottom_right",
            "kv_cache.decode_step",
            "exercises._ex07_tiled.cached",
        ),
        messages=_CACHED_MESSAGES,
        fixes=_CACHED_FIXES,
    ),
    Exercise(
        name="tiled_attention",
        notebook="07",
        body=body_tiled_attention,
        points=3,
        takes="function",
        signature="``fn(queries, keys, values (B, nh, T, hs), block_size) -> (B, nh, T, hs)``: causal attention "
        "computed block by block with an online softmax, equal to ``F.scaled_dot_product_attention(..., "
        "is_causal=True)``.",
        hints=(
            "uses_sdpa",
            "future_open",
            "scale_missing",
            "rescale_missing",
            "max_not_subtracted",
            "max_init_zero",
            "partial_block",
            "left_torch",
            "not_blocked",
            "input_modified",
        ),
        # llm_lab's own ways to the answer, the checkers' helpers included
        references=(
            "multihead.FusedMultiHeadAttention",
            "masks.causal_softmax",
            "exercises._ex07_tiled.tiled",
            "exercises._shared.attention",
            "exercises._shared.softmax_masked",
        ),
        forbidden=(
            ("torch.nn.functional", "scaled_dot_product_attention", "uses_sdpa"),
            ("torch._C._nn", "scaled_dot_product_attention", "uses_sdpa"),
        ),
        messages=_MESSAGES,
        fixes=_FIXES,
    ),
]
