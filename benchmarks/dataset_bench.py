"""The sliding-window dataset two ways, over >= 1M tokens: ``llm_lab.GPTDatasetV1`` (one tensor + strided
views) and the book's loop that stores one tensor per window.

Both start from the same precomputed ids (a tokenizer stub returns them), so tokenization is excluded from
both. Each construction runs in a fresh child process (``python dataset_bench.py --child '[...]'``) that
reports its time and its memory growth (RSS), so memory freed by an earlier run cannot hide a later one's.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import llm_lab

TARGET = 20.0  # list approach time / views approach time


class StubTokenizer:
    """Returns precomputed token ids, so building the dataset is timed without tokenization."""

    def __init__(self, ids):
        self.ids = ids

    def encode(self, txt, allowed_special=None):
        return self.ids


class BookGPTDatasetV1:
    """The book's construction: slice the id list per window and store one new tensor per input and target."""

    def __init__(self, token_ids, max_length, stride):
        self.input_ids, self.target_ids = [], []
        for i in range(0, len(token_ids) - max_length, stride):
            self.input_ids.append(torch.tensor(token_ids[i : i + max_length]))
            self.target_ids.append(torch.tensor(token_ids[i + 1 : i + max_length + 1]))

    def __len__(self):
        return len(self.input_ids)


def token_ids(min_tokens):
    """The Verdict's GPT-2 ids repeated to at least ``min_tokens`` (a Python list of ints)."""
    ids = llm_lab.gpt2_tokenizer().encode(llm_lab.load_text("the-verdict"))
    return ids * math.ceil(min_tokens / len(ids))


def build_dataset(approach, ids, max_length, stride):
    if approach == "views":
        return llm_lab.GPTDatasetV1("", StubTokenizer(ids), max_length, stride)
    if approach == "list":
        return BookGPTDatasetV1(ids, max_length, stride)
    raise ValueError(f"unknown approach {approach!r}; use 'views' or 'list'")


def windows_equal(ids, max_length, stride):
    """Both approaches give the same windows (inputs and targets), checked element by element."""
    views, book = build_dataset("views", ids, max_length, stride), build_dataset("list", ids, max_length, stride)
    if len(views) != len(book):
        return False
    return torch.equal(views.input_ids, torch.stack(book.input_ids)) and torch.equal(
        views.target_ids, torch.stack(book.target_ids)
    )


def _proc_status(field_name):
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss():
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset VmHWM to the current RSS
        return True
    except OSError:
        return False


def measure_dataset(approach, n_tokens, max_length, stride, repeats):
    """Run in a fresh process: time and memory of building the dataset from precomputed ids."""
    ids = token_ids(n_tokens)
    build_dataset(approach, ids[: 4 * max_length + 4], max_length, stride)  # warm up lazy initialization
    base = _proc_status("VmRSS")
    peak_ok = _reset_peak_rss()
    t0 = time.perf_counter()
    ds = build_dataset(approach, ids, max_length, stride)
    times = [time.perf_counter() - t0]
    peak = _proc_status("VmHWM") if peak_ok else None
    kept = _proc_status("VmRSS")
    n_windows = len(ds)
    equal = None
    if approach == "list":  # the book's windows, element by element, against the views
        views = build_dataset("views", ids, max_length, stride)
        equal = (
            len(views) == n_windows
            and torch.equal(views.input_ids, torch.stack(ds.input_ids))
            and (torch.equal(views.target_ids, torch.stack(ds.target_ids)))
        )
        del views
    del ds
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        ds = build_dataset(approach, ids, max_length, stride)
        times.append(time.perf_counter() - t0)
        del ds
    return {
        "approach": approach,
        "n_tokens": len(ids),
        "max_length": max_length,
        "stride": stride,
        "windows": n_windows,
        "times": times,
        "equal": equal,
        "kept_bytes": None if base is None or kept is None else kept - base,
        "peak_bytes": None if base is None or peak is None else peak - base,
    }


def measure_dataset_in_child(approach, n_tokens, max_length, stride, repeats):
    """measure_dataset in a new interpreter, so memory freed by an earlier run cannot hide this run's growth."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        json.dumps([approach, n_tokens, max_length, stride, repeats]),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_dataset(n_tokens, configs, views_repeats, list_repeats, in_child=True):
    """{(max_length, stride): {"views": {...}, "list": {...}}} plus per-window memory slopes."""
    run = measure_dataset_in_child if in_child else measure_dataset
    out = {}
    for max_length, stride in configs:
        out[(max_length, stride)] = {
            "views": run("views", n_tokens, max_length, stride, views_repeats),
            "list": run("list", n_tokens, max_length, stride, list_repeats),
        }
    return out


def per_window_slopes(dataset_results):
    """Extra bytes kept per extra window, between configs that share max_length (None without two)."""
    slopes = {}
    by_len = {}
    for (max_length, _stride), res in dataset_results.items():
        by_len.setdefault(max_length, []).append(res)
    for max_length, runs in by_len.items():
        if len(runs) < 2:
            continue
        runs = sorted(runs, key=lambda r: r["views"]["windows"])
        lo, hi = runs[0], runs[-1]
        slopes[max_length] = {}
        for approach in ("views", "list"):
            a, b = lo[approach], hi[approach]
            dw = b["windows"] - a["windows"]
            ok = dw > 0 and a["kept_bytes"] is not None and b["kept_bytes"] is not None
            slopes[max_length][approach] = (b["kept_bytes"] - a["kept_bytes"]) / dw if ok else None
    return slopes


def _mib(n):
    return "n/a" if n is None else f"{n / 2**20:,.1f}"


def _ms(seconds):
    return f"{seconds * 1e3:,.1f} ms"


def dataset_table(dataset_results):
    rows = [
        "| max_length | stride | windows | views (GPTDatasetV1) | book's list | list / views | "
        "views: memory kept (MiB) | list: memory kept (MiB) | windows equal |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (max_length, stride), res in dataset_results.items():
        v, lst = res["views"], res["list"]
        tv, tl = statistics.median(v["times"]), statistics.median(lst["times"])
        rows.append(
            f"| {max_length} | {stride} | {v['windows']:,} | {_ms(tv)} | {_ms(tl)} | {tl / tv:.1f}x | "
            f"{_mib(v['kept_bytes'])} | {_mib(lst['kept_bytes'])} | {lst['equal']} |"
        )
    return rows


def speedups(results):
    """{(max_length, stride): list time / views time} (medians)."""
    return {
        cfg: statistics.median(res["list"]["times"]) / statistics.median(res["views"]["times"])
        for cfg, res in results.items()
    }


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(measure_dataset(*json.loads(sys.argv[2]))))
    else:
        sys.exit(
            "usage: dataset_bench.py --child '[approach, n_tokens, max_length, stride, repeats]' (called by bench.py)"
        )
