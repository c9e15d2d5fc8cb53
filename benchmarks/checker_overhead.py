"""What the checkers' own instrumentation costs: each observed checker run with it and without it.

A checker runs the learner's code under hooks: the observer (``_observe``: names, sizes, marks), the watch for
llm_lab's references (``sys.setprofile``) and the time limit. This grades, per checker, the lesson's solution
and a correct but naive one (a Python loop over single elements, the slowest code a learner plausibly hands
in), once as ``grade`` runs it and once with those hooks replaced by no-ops, and prints the ratio (with / without:
the overhead) and what a solution 10x slower than the lesson's would take under the checker, against its
``TIMEOUT``. Medians of ``--repeat`` runs; the load average is printed, since a shared machine is slower.

Usage: python -m benchmarks.checker_overhead [--repeat 3] [--only tiled_attention,dropout] [--out FILE]

Not a test (timings depend on the machine). With ``--out docs/benchmarks.md`` the table also goes into that
report, between ``<!-- checkers:begin -->`` and ``<!-- checkers:end -->`` (replaced, or appended the first time).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from benchmarks import report as _report
from llm_lab import exercises as ex

NEG_INF = float("-inf")


# ---- the lesson's solutions and naive correct ones ---------------------------------------------------------------


def tiled_lesson(queries, keys, values, block_size):
    t, hs = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for qs in range(0, t, block_size):
        q = queries[:, :, qs : qs + block_size] / hs**0.5
        m, s, acc = torch.full(q.shape[:-1], NEG_INF), torch.zeros(q.shape[:-1]), torch.zeros(q.shape)
        rows = torch.arange(qs, qs + q.shape[2])[:, None]
        for ks in range(0, qs + q.shape[2], block_size):
            sc = q @ keys[:, :, ks : ks + block_size].transpose(-2, -1)
            sc = sc.masked_fill(torch.arange(ks, ks + sc.shape[-1]) > rows, NEG_INF)
            new = torch.maximum(m, sc.amax(-1))
            p, factor = torch.exp(sc - new[..., None]), torch.exp(m - new)
            s, acc, m = s * factor + p.sum(-1), acc * factor[..., None] + p @ values[:, :, ks : ks + block_size], new
        out[:, :, qs : qs + block_size] = acc / s[..., None]
    return out


def tiled_naive(queries, keys, values, block_size):
    """One query, one key at a time: the online softmax over single scores (blocks of one)."""
    b, nh, t, hs = queries.shape
    out = torch.zeros_like(values)
    for bi in range(b):
        for h in range(nh):
            for i in range(t):
                m, s, acc = torch.tensor(NEG_INF), torch.tensor(0.0), torch.zeros(hs)
                for j in range(i + 1):
                    score = (queries[bi, h, i] * keys[bi, h, j]).sum() / hs**0.5
                    new = torch.maximum(m, score)
                    factor, p = torch.exp(m - new), torch.exp(score - new)
                    s, acc, m = s * factor + p, acc * factor + p * values[bi, h, j], new
                out[bi, h, i] = acc / s
    return out


def cached_lesson(queries, keys, values, window):
    q_len, k_len = queries.shape[-2], keys.shape[-2]
    hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
    hidden |= torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)
    scores = (queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5).masked_fill(hidden, NEG_INF)
    return torch.softmax(scores, dim=-1) @ values


def cached_naive(queries, keys, values, window):
    b, nh, q_len, hs = queries.shape
    k_len = keys.shape[-2]
    out = torch.zeros_like(queries)
    for bi in range(b):
        for h in range(nh):
            for i in range(q_len):
                seen = range(max(0, k_len - q_len + i - window + 1), k_len - q_len + i + 1)
                scores = torch.stack([(queries[bi, h, i] * keys[bi, h, j]).sum() / hs**0.5 for j in seen])
                weights = torch.softmax(scores, dim=0)
                for n, j in enumerate(seen):
                    out[bi, h, i] += weights[n] * values[bi, h, j]
    return out


def padded_lesson(queries, keys, values, key_padding_mask):
    t = queries.shape[-2]
    hidden = torch.ones(t, t, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :]
    w = torch.softmax((queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5).masked_fill(hidden, NEG_INF), -1)
    return w.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0) @ values


def padded_naive(queries, keys, values, key_padding_mask):
    b, nh, t, hs = queries.shape
    out = torch.zeros_like(queries)
    for bi in range(b):
        for h in range(nh):
            for i in range(t):
                seen = [j for j in range(i + 1) if not key_padding_mask[bi, j]]
                if not seen:
                    continue
                scores = torch.stack([(queries[bi, h, i] * keys[bi, h, j]).sum() / hs**0.5 for j in seen])
                weights = torch.softmax(scores, dim=0)
                for n, j in enumerate(seen):
                    out[bi, h, i] += weights[n] * values[bi, h, j]
    return out


def split_qkv_naive(qkv, num_heads, num_kv_heads):
    b, t, w = qkv.shape
    hd = w // (num_heads + 2 * num_kv_heads)
    outs = []
    for start, heads in ((0, num_heads), (num_heads, num_kv_heads), (num_heads + num_kv_heads, num_kv_heads)):
        out = torch.zeros(b, heads, t, hd)
        for bi in range(b):
            for i in range(t):
                for h in range(heads):
                    for f in range(hd):
                        out[bi, h, i, f] = qkv[bi, i, (start + h) * hd + f]
        outs.append(out)
    return tuple(outs)


def windows_lesson(token_ids, max_length, stride):
    documents, current = [], []
    for token in token_ids:
        current.append(token)
        if token == 50256:
            documents.append(current)
            current = []
    documents.append(current)
    starts = [(doc, s) for doc in documents for s in range(0, len(doc) - max_length, stride)]
    inputs = torch.tensor([doc[s : s + max_length] for doc, s in starts], dtype=torch.long).reshape(-1, max_length)
    targets = torch.tensor([doc[s + 1 : s + max_length + 1] for doc, s in starts], dtype=torch.long)
    return inputs, targets.reshape(-1, max_length)


def windows_naive(token_ids, max_length, stride):
    inputs, targets = windows_lesson(token_ids, max_length, stride)
    out_i, out_t = torch.zeros_like(inputs), torch.zeros_like(targets)
    for w in range(inputs.shape[0]):
        for k in range(max_length):
            out_i[w, k], out_t[w, k] = inputs[w, k], targets[w, k]
    return out_i, out_t


def dropout_lesson(x, p, training=True):
    if not training or p == 0:
        return x
    return x * (torch.rand_like(x) >= p) / (1 - p)


def dropout_naive(x, p, training=True):
    """Element by element over the flattened tensor (the mask drawn at once, so the random stream is the same)."""
    if not training or p == 0:
        return x
    keep = torch.rand_like(x) >= p
    flat, mask, out = x.reshape(-1), keep.reshape(-1), torch.zeros(x.numel())
    for i in range(flat.shape[0]):
        if mask[i]:
            out[i] = flat[i] / (1 - p)
    return out.reshape(x.shape)


def additive_class(naive: bool):
    class Additive(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__()
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), NEG_INF), 1))

        def forward(self, x):
            n = x.shape[1]
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            scores = q @ k.transpose(1, 2) + self.mask[:n, :n]
            weights = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
            if not naive:
                return weights @ v
            out = torch.zeros(x.shape[0], n, v.shape[-1])
            for bi in range(x.shape[0]):
                for i in range(n):
                    for j in range(n):
                        out[bi, i] = out[bi, i] + weights[bi, i, j] * v[bi, j]
            return out

    return Additive


CASES = {  # checker: (lesson's solution, naive solution)
    "tiled_attention": (tiled_lesson, tiled_naive),
    "cached_attention": (cached_lesson, cached_naive),
    "padded_attention": (padded_lesson, padded_naive),
    "split_qkv": (
        lambda qkv, nh, n_kv: qkv.unflatten(-1, (nh + 2 * n_kv, -1)).transpose(1, 2).split([nh, n_kv, n_kv], dim=1),
        split_qkv_naive,
    ),
    "document_windows": (windows_lesson, windows_naive),
    "dropout": (dropout_lesson, dropout_naive),
    "additive_attention": (additive_class(naive=False), additive_class(naive=True)),
}


# ---- timing ------------------------------------------------------------------------------------------------------


def seconds(name: str, obj, repeat: int) -> tuple[float, float]:
    """Median seconds of ``grade`` with the hooks off and on, the two run in turn (a burst of load from other
    processes then slows both alike)."""
    off, on = [], []
    for _ in range(repeat):
        for hooks_are_off, times in ((True, off), (False, on)):
            with ex.uninstrumented() if hooks_are_off else contextlib.nullcontext():
                start = time.perf_counter()
                result = ex.grade(name, obj, timeout=None)
                times.append(time.perf_counter() - start)
            if not hooks_are_off and not result.passed:  # hooks off, the observed checks see nothing: no verdict
                raise SystemExit(f"{name}: the benchmark's solution does not pass: {result.message}")
    return statistics.median(off), statistics.median(on)


BEGIN, END = "<!-- checkers:begin -->", "<!-- checkers:end -->"


def write_section(path: Path, lines: list[str]) -> None:
    """Put ``lines`` into the report at ``path`` as its checkers section."""
    _report.replace_section(
        path,
        BEGIN,
        END,
        [
            "## What the checkers cost",
            "",
            "Written by `python -m benchmarks.checker_overhead --out docs/benchmarks.md`; never edit the "
            "numbers by hand. *Off*: the same `grade` with the observer, the reference watch and the "
            "time limit replaced by no-ops (the code's own cost, plus the checker's comparisons). "
            "*Naive*: a correct solution looping over single elements "
            "(`benchmarks/checker_overhead.py`). "
            "*10x lesson, graded*: what a solution ten times slower than the lesson's would take under "
            "the checker at the naive solution's overhead, against the 10 s limit.",
            "",
            *lines,
        ],
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is shown)")
    parser.add_argument("--only", default="", help="comma-separated checker names (default: all observed ones)")
    parser.add_argument("--out", type=Path, help="also write the table into this report (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"unknown checker(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    lines = [
        f"- load average (1 min) {os.getloadavg()[0]:.2f} at the start, {os.cpu_count()} CPUs, torch "
        f"{torch.__version__}, time limit {ex.TIMEOUT:g} s per check, median of {args.repeat} runs",
        "",
        "| checker | lesson, off | naive, off | naive, graded | overhead (graded / off) | 10x lesson, graded |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    print(lines[0])
    print(*lines[2:], sep="\n")
    for name in names:
        lesson, naive = CASES[name]
        ex.grade(name, lesson)  # warm-up: first-call imports and caches are not the checker's cost
        lesson_off, _ = seconds(name, lesson, args.repeat)
        naive_off, naive_on = seconds(name, naive, args.repeat)
        ratio = naive_on / naive_off
        lines.append(
            f"| `{name}` | {lesson_off:.2f} s | {naive_off:.2f} s | {naive_on:.2f} s | {ratio:.2f}x | "
            f"{10 * lesson_off * ratio:.2f} s |"
        )
        print(lines[-1], flush=True)
    lines += ["", f"- load average (1 min) {os.getloadavg()[0]:.2f} at the end"]
    print(lines[-1])
    if args.out:
        write_section(args.out, lines)


if __name__ == "__main__":
    main()
