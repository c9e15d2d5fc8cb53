"""Notebook 09's exercises (ALiBi's bias, a chunk of new queries with RoPE on a cache): correct solutions written
otherwise than the notebook's, and the planted mistakes the statement invites (the penalty's sign, offsets j - i,
the slopes in the wrong order, the future not -inf, no head dimension, the wrong pairing, rotating v, ...).

The generic checks run over these tables in tests/exercises/test_exercises.py; the exercises' own tests are in
test_ex09_positions.py."""

import math

import torch


def rope_factory(pairing="half", sign=1.0, shift=0, reverse=False, use_start=True, use_base=True):
    """A RoPE written with complex numbers (pairs as re + i im), or with the mistake asked for planted."""

    def rope_at(x, start, base):
        t, hs = x.shape[-2], x.shape[-1]
        b = base if use_base else 10000.0
        theta = torch.tensor([b ** (-2 * k / hs) for k in range(hs // 2)], dtype=torch.float64)
        if reverse:
            theta = theta.flip(0)
        first = (start if use_start else 0) + shift
        angle = sign * torch.arange(first, first + t, dtype=torch.float64)[:, None] * theta
        if pairing == "half":
            z = torch.complex(x[..., : hs // 2].double(), x[..., hs // 2 :].double())
        else:
            z = torch.complex(x[..., 0::2].double(), x[..., 1::2].double())
        z = z * torch.polar(torch.ones_like(angle), angle)
        if pairing == "half":
            out = torch.cat([z.real, z.imag], dim=-1)
        else:
            out = torch.stack([z.real, z.imag], dim=-1).flatten(-2)
        return out.to(x.dtype)

    return rope_at


rope_at = rope_factory()


def alibi_factory(sign=1.0, first=1, reverse=False, future="-inf", offsets="i-j", heads=True):
    """ALiBi's bias filled entry by entry in Python loops, or with the mistake asked for planted."""

    def alibi_bias(num_heads, T):
        slopes = [2.0 ** (-8.0 * h / num_heads) for h in range(first, first + num_heads)]
        if reverse:
            slopes = slopes[::-1]
        out = torch.empty(num_heads, T, T)
        for h, m in enumerate(slopes):
            for i in range(T):
                for j in range(T):
                    back = i - j if offsets != "j-i" else j - i
                    hidden = (j > i) if offsets != "transposed" else (j < i)
                    value = -sign * m * (abs(back) if offsets == "transposed" else back)
                    if hidden:
                        value = {"-inf": -math.inf, "zero": 0.0, "formula": value, "large": -1e9}[future]
                    out[h, i, j] = value
        return out if heads else out[0]

    return alibi_bias


alibi_bias = alibi_factory()


def alibi_broadcast(num_heads, T):
    """A correct solution in one broadcast, float64, the mask built with ``torch.where``."""
    m = torch.pow(2.0, -8.0 * torch.arange(1, num_heads + 1, dtype=torch.float64) / num_heads)
    pos = torch.arange(T, dtype=torch.float64)
    back = pos.view(1, T, 1) - pos.view(1, 1, T)
    return torch.where(back >= 0, -m.view(-1, 1, 1) * back, torch.tensor(-math.inf, dtype=torch.float64))


def chunk_factory(
    rotate_v=False, queries_from_0=False, top_left=False, rotate=True, keys=True, scale=True, pairing="half"
):
    """The chunk attention as loops over the new queries, or with the mistake asked for planted."""
    rope = rope_factory(pairing=pairing)

    def rope_chunk_attention(q, k, v):
        tq, tk, hs = q.shape[-2], k.shape[-2], q.shape[-1]
        if rotate:
            q = rope(q, 0 if queries_from_0 else tk - tq, 10000.0)
            if keys:
                k = rope(k, 0, 10000.0)
            if rotate_v:
                v = rope(v, 0, 10000.0)
        rows = []
        for a in range(tq):
            last = a if top_left else tk - tq + a  # the last key query a may read
            s = q[..., a : a + 1, :] @ k[..., : last + 1, :].transpose(-2, -1)
            if scale:
                s = s / math.sqrt(hs)
            rows.append(torch.softmax(s, dim=-1) @ v[..., : last + 1, :])
        return torch.cat(rows, dim=-2)

    return rope_chunk_attention


rope_chunk_attention = chunk_factory()


SOLUTIONS = {"alibi_bias": alibi_bias, "rope_chunk_attention": rope_chunk_attention}
CORRECT_BUT_DIFFERENT = [("alibi_bias", alibi_broadcast)]
PLANTED = [
    ("alibi_bias", alibi_factory(sign=-1.0), "alibi_sign"),
    ("alibi_bias", alibi_factory(offsets="j-i"), "alibi_sign"),
    ("alibi_bias", alibi_factory(offsets="transposed"), "alibi_transposed"),
    ("alibi_bias", alibi_factory(reverse=True), "alibi_slopes_reversed"),
    ("alibi_bias", alibi_factory(first=0), "alibi_slopes_from_0"),
    ("alibi_bias", alibi_factory(future="zero"), "alibi_future_not_hidden"),
    ("alibi_bias", alibi_factory(future="formula"), "alibi_future_not_hidden"),
    ("alibi_bias", alibi_factory(future="large"), "alibi_future_not_hidden"),
    ("alibi_bias", alibi_factory(heads=False), "alibi_no_head_dim"),
    ("rope_chunk_attention", chunk_factory(rotate_v=True), "rope_on_values"),
    ("rope_chunk_attention", chunk_factory(queries_from_0=True), "rope_queries_from_0"),
    ("rope_chunk_attention", chunk_factory(top_left=True), "rope_mask_top_left"),
    ("rope_chunk_attention", chunk_factory(rotate=False), "rope_not_applied"),
    ("rope_chunk_attention", chunk_factory(keys=False), "rope_keys_not_rotated"),
    ("rope_chunk_attention", chunk_factory(pairing="interleaved"), "rope_interleaved"),
    ("rope_chunk_attention", chunk_factory(scale=False), "scale_missing"),
]
