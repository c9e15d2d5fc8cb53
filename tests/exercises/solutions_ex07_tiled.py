"""Notebook 07's exercises (tiled attention, attention over a cache with a window): solutions, planted mistakes,
and blocked attention with switches.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import numpy as np
import torch
import torch.nn.functional as F
from _exercise_solutions import NEG_INF


def tiled_attention(queries, keys, values, block_size):
    t, hs = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for qs in range(0, t, block_size):
        q = queries[:, :, qs : qs + block_size] / hs**0.5
        running_max = torch.full(q.shape[:-1], NEG_INF)
        running_sum = torch.zeros(q.shape[:-1])
        acc = torch.zeros(q.shape)
        rows = torch.arange(qs, qs + q.shape[2])[:, None]
        for ks in range(0, qs + q.shape[2], block_size):  # blocks wholly in the future are skipped
            s = q @ keys[:, :, ks : ks + block_size].transpose(-2, -1)
            s = s.masked_fill(torch.arange(ks, ks + s.shape[-1]) > rows, NEG_INF)
            new_max = torch.maximum(running_max, s.amax(-1))
            p = torch.exp(s - new_max[..., None])
            factor = torch.exp(running_max - new_max)
            running_sum = running_sum * factor + p.sum(-1)
            acc = acc * factor[..., None] + p @ values[:, :, ks : ks + block_size]
            running_max = new_max
        out[:, :, qs : qs + block_size] = acc / running_sum[..., None]
    return out


def chunk_attention(queries, keys, values, window):
    """Written out by hand: the softmax over scores with both edges of the mask at the key positions."""
    q_len, k_len = queries.shape[-2], keys.shape[-2]
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    position = torch.arange(q_len).unsqueeze(-1) + (k_len - q_len)  # where each new query sits
    back = position - torch.arange(k_len)  # how far behind the query each key is
    hidden = (back < 0) | (back >= window)
    return torch.softmax(scores.masked_fill(hidden, NEG_INF), dim=-1) @ values


def chunk_with(offset=None, mask=True, scale=True, in_place=False, window_offset=None, width=0, use_window=True):
    """A planted mistake: the causal edge's offset (0: is_causal's top left), no mask, no scale, queries scaled in
    place; the window's edge at another offset, ``width`` keys too wide, or no window."""

    def attend(queries, keys, values, window):
        q_len, k_len = queries.shape[-2], keys.shape[-2]
        if in_place:
            queries /= queries.shape[-1] ** 0.5
        else:
            queries = queries / queries.shape[-1] ** 0.5 if scale else queries
        scores = queries @ keys.transpose(-2, -1)
        rows, cols = torch.arange(q_len).unsqueeze(-1), torch.arange(k_len)
        if mask:
            shift = k_len - q_len if offset is None else offset(q_len, k_len)
            scores = scores.masked_fill(cols > rows + shift, NEG_INF)
        if use_window:
            shift = k_len - q_len if window_offset is None else window_offset(q_len, k_len)
            scores = scores.masked_fill(cols <= rows + shift - window - width, NEG_INF)
        return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ values

    return attend


def chunk_window_zeroed(renormalize=False):
    """The window applied after the softmax: the weights outside it zeroed, not renormalised (``renormalize``:
    each row divided by its sum afterwards, correct)."""

    def attend(queries, keys, values, window):
        q_len, k_len = queries.shape[-2], keys.shape[-2]
        scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
        future = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
        weights = torch.softmax(scores.masked_fill(future, NEG_INF), dim=-1)
        weights = weights.masked_fill(torch.ones(q_len, k_len, dtype=torch.bool).tril(k_len - q_len - window), 0.0)
        if renormalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights @ values

    return attend


def chunk_last_keys(sdpa=False):
    """The window anchored to the newest key for the whole chunk: the cache cut to its last ``window`` keys, then
    the causal mask aligned bottom right (a query that sees no key: NaN from the softmax, 0 from SDPA)."""

    def attend(queries, keys, values, window):
        keys, values = keys[:, :, -window:], values[:, :, -window:]
        q_len, k_len = queries.shape[-2], keys.shape[-2]
        hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
        if sdpa:
            return F.scaled_dot_product_attention(queries, keys, values, attn_mask=~hidden)
        scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
        return torch.softmax(scores.masked_fill(hidden, NEG_INF), dim=-1) @ values

    return attend


def chunk_by_query(queries, keys, values, window):
    """Correct, one query at a time: its own slice of keys, p - window + 1 … p."""
    q_len, k_len = queries.shape[-2], keys.shape[-2]
    rows = []
    for i in range(q_len):
        p = k_len - q_len + i
        lo = max(0, p - window + 1)
        k, v = keys[:, :, lo : p + 1], values[:, :, lo : p + 1]
        w = torch.softmax(queries[:, :, i : i + 1] @ k.transpose(-2, -1) / queries.shape[-1] ** 0.5, dim=-1)
        rows.append(w @ v)
    return torch.cat(rows, dim=2)


def _sdpa_window(is_causal=False, causal=False):
    def attend(q, k, v, window):
        q_len, k_len = q.shape[-2], k.shape[-2]
        old = torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)
        if is_causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        hidden = old | torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1) if causal else old
        return F.scaled_dot_product_attention(q, k, v, attn_mask=~hidden)

    return attend


def numpy_whole(queries, keys, values, block_size):
    """The whole (T, T) scores and a causal softmax in NumPy, never in blocks: right values, no torch op to see."""
    q, k, v = (t.detach().numpy().astype(np.float64) for t in (queries, keys, values))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    t = scores.shape[-1]
    scores[..., np.triu(np.ones((t, t), dtype=bool), 1)] = -np.inf
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return torch.from_numpy(weights / weights.sum(axis=-1, keepdims=True) @ v).to(queries.dtype)


SOLUTIONS = {
    "tiled_attention": tiled_attention,
    "cached_attention": chunk_attention,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("tiled_attention", numpy_whole, "left_torch"),
    ("cached_attention", _sdpa_window(is_causal=True), "mask_top_left"),
    (
        "cached_attention",
        chunk_with(offset=lambda q_len, k_len: 0, window_offset=lambda q_len, k_len: 0),
        "mask_top_left",
    ),
    ("cached_attention", chunk_with(offset=lambda q_len, k_len: 0), "mask_top_left"),
    ("cached_attention", _sdpa_window(), "cache_future_open"),
    ("cached_attention", chunk_with(offset=lambda q_len, k_len: k_len - q_len - 1), "cache_own_key_hidden"),
    ("cached_attention", chunk_with(use_window=False), "window_ignored"),
    ("cached_attention", chunk_with(window_offset=lambda q_len, k_len: 0), "window_top_left"),
    ("cached_attention", chunk_with(width=1), "window_one_too_wide"),
    ("cached_attention", chunk_with(width=-1), "window_one_too_narrow"),
    ("cached_attention", chunk_with(scale=False), "scale_missing"),
    ("cached_attention", chunk_window_zeroed(), "window_not_renormalized"),
    ("cached_attention", chunk_last_keys(), "window_from_newest_key"),
    ("cached_attention", chunk_last_keys(sdpa=True), "window_from_newest_key"),
    ("cached_attention", chunk_with(in_place=True), "input_modified"),
]
CORRECT_BUT_DIFFERENT = [
    ("cached_attention", chunk_window_zeroed(renormalize=True)),  # zeroed after the softmax, then renormalised
    ("cached_attention", chunk_by_query),
]


def _hidden(t, rows, k_start, width):
    return torch.arange(k_start, k_start + width) > rows


def blocked(
    queries, keys, values, block_size, *, dtype=None, init=NEG_INF, mask=True, max_sub=True, order=1, inplace=False
):
    """The notebook's blocked online softmax with switches: dtype of the internals, the running maximum's start,
    the causal mask inside blocks, the maximum subtracted or not, key blocks forward (1) or backward (-1)."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    dtype = dtype or queries.dtype
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        if inplace:
            q = queries[:, :, q_start : q_start + block_size]
            q /= head_dim**0.5
        else:
            q = queries[:, :, q_start : q_start + block_size].to(dtype) / head_dim**0.5
        rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        running_max = torch.full(q.shape[:-1], init, dtype=dtype)
        running_sum = torch.zeros(q.shape[:-1], dtype=dtype)
        acc = torch.zeros(q.shape, dtype=dtype)
        starts = list(range(0, q_start + q.shape[2], block_size))[::order]
        for k_start in starts:
            scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1).to(dtype)
            if mask:
                scores = scores.masked_fill(_hidden(num_tokens, rows, k_start, scores.shape[-1]), NEG_INF)
            v_block = values[:, :, k_start : k_start + block_size].to(dtype)
            if not max_sub:
                p = torch.exp(scores)
                running_sum, acc = running_sum + p.sum(-1), acc + p @ v_block
                continue
            new_max = torch.maximum(running_max, scores.amax(dim=-1))
            safe = torch.where(new_max.isinf(), torch.zeros_like(new_max), new_max) if order < 0 else new_max
            rescale = torch.exp(running_max - safe)
            p = torch.exp(scores - safe.unsqueeze(-1))
            running_sum = running_sum * rescale + p.sum(dim=-1)
            acc = acc * rescale.unsqueeze(-1) + p @ v_block
            running_max = new_max
        out[:, :, q_start : q_start + block_size] = (acc / running_sum.unsqueeze(-1)).to(out.dtype)
    return out


def whole_rows(queries, keys, values, block_size):
    """Score blocks, concatenated into whole rows, then one softmax per row: blocked, but not online."""
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5
        rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        scores = torch.cat(
            [q @ keys[:, :, k : k + block_size].transpose(-2, -1) for k in range(0, num_tokens, block_size)], dim=-1
        )
        scores = scores.masked_fill(torch.arange(num_tokens) > rows, NEG_INF)
        out[:, :, q_start : q_start + block_size] = torch.softmax(scores, dim=-1) @ values
    return out


def full_scores(q, k, v, block_size):
    t = q.shape[-2]
    s = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), NEG_INF)
    return torch.softmax(s, -1) @ v


def tiled_factory(rescale=True, subtract_max=True, causal=True, scale=True, last_block=True, sdpa=False):
    def fn(queries, keys, values, block_size):
        if sdpa:
            return F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        t, hs = queries.shape[-2], queries.shape[-1]
        out = torch.zeros_like(values)
        stop = t if last_block else t - block_size + 1
        for qs in range(0, stop, block_size):
            q = queries[:, :, qs : qs + block_size] / (hs**0.5 if scale else 1.0)
            m = torch.full(q.shape[:-1], NEG_INF)
            total, acc = torch.zeros(q.shape[:-1]), torch.zeros(q.shape)
            rows = torch.arange(qs, qs + q.shape[2])[:, None]
            for ks in range(0, t, block_size):
                s = q @ keys[:, :, ks : ks + block_size].transpose(-2, -1)
                if causal:
                    s = s.masked_fill(torch.arange(ks, ks + s.shape[-1]) > rows, NEG_INF)
                new = torch.maximum(m, s.amax(-1))
                new = torch.where(new.isinf(), torch.zeros_like(new), new) if subtract_max else torch.zeros_like(new)
                p = torch.exp(s - new[..., None])
                factor = torch.exp(m - new) if rescale and subtract_max else torch.ones_like(new)
                factor = torch.where(m.isinf() & (total == 0), torch.zeros_like(factor), factor)
                total = total * factor + p.sum(-1)
                acc = acc * factor[..., None] + p @ values[:, :, ks : ks + block_size]
                m = new if subtract_max else torch.maximum(m, s.amax(-1))
            out[:, :, qs : qs + block_size] = acc / total[..., None]
        return out

    return fn


# graded in both languages: the transfer exercise, tiled attention
TRANSFER_MISTAKES = [
    ("tiled_attention", tiled_factory(sdpa=True), "uses_sdpa"),
    ("tiled_attention", tiled_factory(rescale=False), "rescale_missing"),
    ("tiled_attention", tiled_factory(subtract_max=False), "max_not_subtracted"),
    ("tiled_attention", tiled_factory(causal=False), "future_open"),
    ("tiled_attention", tiled_factory(scale=False), "scale_missing"),
    ("tiled_attention", tiled_factory(last_block=False), "partial_block"),
]
