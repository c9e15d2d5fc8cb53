"""Notebook 09's exercises (RoPE from any start, a chunk of new queries with RoPE on a cache): correct solutions
written otherwise than the notebook's, and the planted mistakes the statement invites (the wrong pairing, the wrong
sign, positions from 1, the frequencies in the wrong order, rotating v, ...).

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


def in_place(x, start, base):
    x *= 1.0  # changes nothing but writes into the caller's tensor
    x[..., 0] += 0.0
    x.add_(1.0)
    return rope_at(x - 1.0, start, base)


SOLUTIONS = {"rope_at": rope_at, "rope_chunk_attention": rope_chunk_attention}
PLANTED = [
    ("rope_at", rope_factory(pairing="interleaved"), "rope_interleaved"),
    ("rope_at", rope_factory(sign=-1.0), "rope_wrong_sign"),
    ("rope_at", rope_factory(shift=1), "rope_positions_from_1"),
    ("rope_at", rope_factory(use_start=False), "rope_start_ignored"),
    ("rope_at", rope_factory(reverse=True), "rope_frequencies_reversed"),
    ("rope_at", rope_factory(use_base=False), "rope_base_ignored"),
    ("rope_at", in_place, "input_modified"),
    ("rope_chunk_attention", chunk_factory(rotate_v=True), "rope_on_values"),
    ("rope_chunk_attention", chunk_factory(queries_from_0=True), "rope_queries_from_0"),
    ("rope_chunk_attention", chunk_factory(top_left=True), "rope_mask_top_left"),
    ("rope_chunk_attention", chunk_factory(rotate=False), "rope_not_applied"),
    ("rope_chunk_attention", chunk_factory(keys=False), "rope_keys_not_rotated"),
    ("rope_chunk_attention", chunk_factory(pairing="interleaved"), "rope_interleaved"),
    ("rope_chunk_attention", chunk_factory(scale=False), "scale_missing"),
]
