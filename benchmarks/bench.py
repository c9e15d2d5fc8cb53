"""Benchmarks for llm-lab, written to docs/benchmarks.md: attention implementations and the dataset.

    python -m benchmarks.bench                   # full run (B=8, T up to 1024, d=768, 12 heads), writes the report
    python -m benchmarks.bench --quick           # smoke run at small sizes, prints only
    python -m benchmarks.bench --device cuda     # time on a GPU (random numbers still drawn on the CPU)
    python -m benchmarks.bench --out -           # full run, print only

Part 1 is ``llm_lab.bench.benchmark`` (the same code notebook 07 calls); part 2 is ``dataset_bench.py`` next to
this file. The report's text is ``report_template.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from string import Template

from benchmarks import dataset_bench
from llm_lab.bench import benchmark as lb

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "report_template.md"
FUSED_TARGET = 1.05  # fused path / bare SDPA
DATASET_PRESETS = {  # n_tokens, [(max_length, stride)], views repeats, list repeats
    "quick": (20_000, [(256, 128), (256, 32)], 3, 1),
    "full": (1_000_000, [(256, 128), (256, 32), (4, 4)], 5, 1),
}


def fused_lines(results) -> list[str]:
    """The fused-path target, per-round ratios (the two run back to back) and the operator-trace check."""
    r = lb.ratios(results)
    paired = [a / b for a, b in zip(results["fused"].times, results[lb.BASELINE].times, strict=True)]
    same, n_fused, n_bare = lb.same_work("fused", lb.BASELINE)
    return [
        f"target: fused path <= {FUSED_TARGET:.2f}x bare SDPA: {r['fused']:.3f}x, "
        + ("MET" if r["fused"] <= FUSED_TARGET else "MISSED"),
        "fused / bare SDPA in each round: "
        + ", ".join(f"{x:.3f}" for x in paired)
        + f"; median {statistics.median(paired):.3f}",
        "same ATen operators, in the same order, in one forward + backward step of fused and bare SDPA "
        f"(traced with a TorchDispatchMode at a small size): {same} ({n_fused} and {n_bare} operator calls)",
    ]


# Sections other tools write into the same report (tests/e2e/test_e2e_notebooks.py: per-notebook browser timings;
# bench_grade.py: grading a class);
# a rewrite of the benchmark part keeps them as they are.
KEPT = (
    ("<!-- browser:begin -->", "<!-- browser:end -->"),
    ("<!-- grade:begin -->", "<!-- grade:end -->"),
    ("<!-- training:begin -->", "<!-- training:end -->"),
    ("<!-- positions:begin -->", "<!-- positions:end -->"),
    ("<!-- checkers:begin -->", "<!-- checkers:end -->"),
)


def kept_sections(path: Path) -> str:
    """The delimited sections of the existing report at ``path`` that this script does not own."""
    if not path.exists():
        return ""
    old, kept = path.read_text(encoding="utf-8"), []
    for begin, end in KEPT:
        if begin in old and end in old.split(begin, 1)[1]:
            kept.append(begin + old.split(begin, 1)[1].split(end, 1)[0] + end)
    return "".join(f"\n{section}\n" for section in kept)


def sweep_table(sweep) -> list[str]:
    keys = list(next(iter(sweep.values())))
    rows = ["| T | " + " | ".join(f"`{k}`" for k in keys) + " |", "|---:|" + "---:|" * len(keys)]
    for t, res in sweep.items():
        rows.append(f"| {t} | " + " | ".join(f"{res[k].median * 1e3:,.1f}" for k in keys) + " |")
    return rows


def dataset_lines(ds_results) -> list[str]:
    lines = []
    for max_length, sl in dataset_bench.per_window_slopes(ds_results).items():
        v, lst = sl["views"], sl["list"]
        lines.append(
            f"max_length={max_length}: memory kept per extra window: views {v:,.1f} B, list {lst:,.1f} B "
            f"(the list's tensor data alone is 2 x {max_length} x 8 = {16 * max_length:,} B)"
            if v is not None and lst is not None
            else f"max_length={max_length}: RSS not available here"
        )
    target = dataset_bench.TARGET
    lines.append(
        f"target: views >= {target:.0f}x faster than the list: "
        + "; ".join(
            f"max_length={c[0]}, stride={c[1]}: {x:.1f}x {'MET' if x >= target else 'MISSED'}"
            for c, x in dataset_bench.speedups(ds_results).items()
        )
    )
    return lines


def write_plot(sweep, png: Path, title: str) -> str:
    """Save the time-vs-T figure; the report's image line, or a note when matplotlib is missing (a bare GPU box)."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: the report has no figure")
        return "(no figure: matplotlib was not installed where this ran)"
    matplotlib.use("Agg")  # a file, no window
    import matplotlib.pyplot as plt

    fig = lb.plot_sweep(sweep, title)
    fig.savefig(png, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return f"![time vs T]({png.name})"


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="llm-lab benchmarks: attention implementations and dataset building")
    ap.add_argument("--quick", action="store_true", help="small sizes for a smoke run (writes nothing by default)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument(
        "--out",
        default=None,
        help="markdown report path (default docs/benchmarks.md for a full run, none with --quick; "
        "'-' writes nothing); the plot goes next to it as .png",
    )
    ap.add_argument("--repeats", type=int, default=None, help="timed rounds per length")
    ap.add_argument(
        "--note",
        default=os.environ.get("LLM_LAB_BENCH_NOTE", ""),
        help="a sentence about the conditions, added to the report (env LLM_LAB_BENCH_NOTE)",
    )
    args = ap.parse_args(argv)
    try:
        args.device = lb.parse_device(args.device)
    except ValueError as err:
        ap.error(str(err))
    return args


def attention_part(s, device: str) -> tuple[dict, dict]:
    """Part 1, printed as it runs: the sweep over T (for the figure) and the report's fields for it."""
    headline = s.lengths[-1]
    size = f"B={s.batch}, T={headline}, d={s.d}, {s.num_heads} heads, float32, {device}"
    print(f"\n[1] attention forward + backward at T = {', '.join(map(str, s.lengths))}; {size}", flush=True)
    sweep = lb.sweep(s, device)
    results = sweep[headline]
    attention_rows, fused = lb.table(results), fused_lines(results)
    sweep_rows = sweep_table(sweep)
    print("\n".join(attention_rows + fused + [""] + sweep_rows))
    return sweep, dict(
        size=size,
        repeats=s.repeats,
        headline=headline,
        attention_table="\n".join(attention_rows),
        fused_lines="\n".join(f"- {x}" for x in fused),
        sweep_table="\n".join(sweep_rows),
    )


def dataset_part(preset: str) -> dict:
    """Part 2, printed as it runs: views vs the book's list of tensors; the report's fields for it."""
    n_tokens, configs, views_rep, list_rep = DATASET_PRESETS[preset]
    print(f"\n[2] dataset over >= {n_tokens:,} tokens: views vs the book's list of tensors", flush=True)
    ds_results = dataset_bench.bench_dataset(n_tokens, configs, views_rep, list_rep)
    ds_rows, ds_lines = dataset_bench.dataset_table(ds_results), dataset_lines(ds_results)
    print("\n".join(ds_rows + ds_lines))
    return dict(
        n_tokens=f"{n_tokens:,}",
        views_repeats=views_rep,
        list_repeats=list_rep,
        dataset_table="\n".join(ds_rows),
        dataset_lines="\n".join(f"- {x}" for x in ds_lines),
    )


def load_average() -> float | None:
    """The 1-minute load average, or None where the platform has none."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def machine_section(machine: list[str], load_line: str, elapsed: float, note: str) -> str:
    """The report's machine list: the machine, the load and run time, and the caller's note."""
    lines = [f"- {m}" for m in machine]
    lines.append(
        f"- {load_line}, total run time {elapsed:.0f} s." if load_line else f"- total run time {elapsed:.0f} s."
    )
    lines += [f"- {note}"] if note else []
    return "\n".join(lines)


def report_path(args: argparse.Namespace) -> Path | None:
    """Where the report goes: ``--out`` (relative to the repository root), docs/benchmarks.md for a full run,
    None with ``--quick`` or ``--out -``."""
    out = args.out if args.out is not None else (None if args.quick else "docs/benchmarks.md")
    if not out or out == "-":
        return None
    return Path(out) if Path(out).is_absolute() else ROOT / out


def main(argv=None) -> int:
    args = parse_args(argv)
    preset = "quick" if args.quick else "full"
    s = lb.settings_for(preset, args.device, args.repeats)
    load0, started = load_average(), time.perf_counter()
    machine = lb.machine_lines(args.device)
    print("\n".join(machine))
    sweep, fields = attention_part(s, args.device)
    fields.update(dataset_part(preset))
    elapsed, load1 = time.perf_counter() - started, load_average()
    load_line = f"load average (1 min) {load0:.2f} at the start, {load1:.2f} at the end" if load0 is not None else ""
    print(f"\ntotal {elapsed:.0f} s; {load_line}")
    path = report_path(args)
    if path is None:
        return 0
    png = path.with_suffix(".png")
    title = f"causal MHA forward + backward, B={s.batch}, d={s.d}, {s.num_heads} heads, {args.device}"
    fields.update(
        plot_line=write_plot(sweep, png, title), machine=machine_section(machine, load_line, elapsed, args.note)
    )
    write_report(path, fields)
    print(f"wrote {path}" + (f" and {png.name}" if png.exists() else ""))
    return 0


def write_report(path: Path, fields: dict) -> None:
    """The report from docs' template, keeping the sections other benchmarks wrote after it."""
    report = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(**fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report + kept_sections(path), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
