"""The per-notebook browser timings in docs/benchmarks.md, between <!-- browser:begin --> and <!-- browser:end -->
(the rest of the file is left as it is; benchmarks/bench.py keeps this section when it rewrites its own)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

BENCH_BEGIN, BENCH_END = "<!-- browser:begin -->", "<!-- browser:end -->"
COLUMNS = ("en", "zh", "en (instructor)", "zh (instructor)")


def column_of(rel: str) -> str:
    """The table column of a notebook path: en/01_x.ipynb -> "en", instructor/zh/01_x.ipynb -> "zh (instructor)"."""
    *where, _ = rel.split("/")
    return " ".join(reversed(where)).replace("instructor", "(instructor)")


def machine(jupyterlab: str, chromium: str, load_start: float) -> dict:
    return {
        "jupyterlab": jupyterlab,
        "chromium": f"Chromium {chromium}",
        "cpus": os.cpu_count(),
        "machine": f"{platform.system()} {platform.machine()}",
        "load": f"{load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end",
    }


def section(timings: dict[str, dict[str, float]], meta: dict) -> str:
    """The Markdown section; `timings` maps a column to {notebook stem: seconds}."""
    names = sorted({name for column in timings.values() for name in column})
    columns = [c for c in COLUMNS if c in timings]
    lines = [
        BENCH_BEGIN,
        "## Notebooks in a real browser (`make test-browser`)",
        "",
        "Written by `tests/e2e/test_e2e_notebooks.py` on a full run; never edit the numbers by hand. JupyterLab "
        f"{meta['jupyterlab']} in headless {meta['chromium']}, window 1366x768, on {meta['cpus']} logical "
        f"cores ({meta['machine']}), load average {meta['load']}. Time from opening the notebook (kernel start "
        "included) to every cell executed after Clear All Outputs + Run All.",
        "",
        "Columns: the learner versions (what Colab and `make lab` open), then the instructor versions.",
        "",
        "| notebook | " + " | ".join(f"{c} (s)" for c in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for name in names:
        cells = [f"{timings[c][name]:.1f}" if name in timings[c] else "-" for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"{sum(timings[c].values()):.1f}" for c in columns]
    return "\n".join(lines + ["| total | " + " | ".join(totals) + " |", "", BENCH_END])


def write_bench(path: Path, timings: dict[str, dict[str, float]], meta: dict) -> None:
    """Replace the section between the markers (or append it when the file has none)."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    new = section(timings, meta)
    if BENCH_BEGIN in text and BENCH_END in text:
        head, rest = text.split(BENCH_BEGIN, 1)
        text = head + new + rest.split(BENCH_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    path.write_text(text, encoding="utf-8")
