"""Notebook 07's exercise (tiled attention): a correct solution.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""


import torch
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


SOLUTIONS = {
    "tiled_attention": tiled_attention,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
]
