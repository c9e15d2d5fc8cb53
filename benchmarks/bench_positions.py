"""How long notebook 09's trainings take: :func:`llm_lab.explore.positions.train_schemes`, the four schemes with the
notebook's settings (``positions.LESSON_SETTINGS``), on one torch thread.

Target: <= 60 s of CPU time for the four trainings together. CPU time is ``time.process_time`` of this process.
Machines differ several-fold, so it also times, in the same run, notebook 08's training (``induction.train`` with
08's settings) for as many steps, and prints the ratio of the two: a figure that does not depend on the machine.
Prints the load average too: a shared machine is slower, and CPU time still grows there (shared caches).

Usage: python -m benchmarks.bench_positions [--steps N] [--out FILE]   (N: the notebook's steps unless given; the
seconds are scaled to the notebook's count)

With ``--out docs/benchmarks.md`` (what ``make bench-positions`` does) the lines go into that report, between
``<!-- positions:begin -->`` and ``<!-- positions:end -->``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import torch

from benchmarks import report as _report
from llm_lab.explore import induction, positions

TARGET_S = 60.0
BEGIN, END = "<!-- positions:begin -->", "<!-- positions:end -->"


def measure(steps: int | None = None) -> dict:
    """The four trainings of notebook 09 for ``steps`` steps each (the notebook's count unless given) and 08's
    training for as many steps, CPU seconds on one thread, scaled to the notebook's steps; load before and after."""
    full = positions.LESSON_SETTINGS.steps
    steps = steps or full
    settings = dataclasses.replace(positions.LESSON_SETTINGS, steps=steps, measure_every=max(1, steps // 10))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    try:
        runs = positions.train_schemes(positions.LESSON_SCHEMES, settings)
        torch.manual_seed(123)
        old = induction.AttentionOnlyTransformer(induction.InductionConfig())
        cpu = time.process_time()
        induction.train(old, dataclasses.replace(induction.TrainSettings(), steps=steps, measure_every=20))
        old_cpu = time.process_time() - cpu
    finally:
        torch.set_num_threads(threads)
    scale = full / steps
    per_scheme = {s: r["cpu_seconds"] * scale for s, r in runs.items()}
    return {
        "steps": steps,
        "notebook_steps": full,
        "per_scheme": per_scheme,
        "total": sum(per_scheme.values()),
        "old": old_cpu * scale,
        "load": (load_before, os.getloadavg()[0]),
    }


def lines(r: dict) -> list[str]:
    each = ", ".join(f"{s} {sec:.1f} s" for s, sec in r["per_scheme"].items())
    mean = r["total"] / len(r["per_scheme"])
    return [
        f"- {len(r['per_scheme'])} schemes x {r['notebook_steps']} steps of batch 32 x 64 tokens on one torch thread "
        f"({r['steps']} steps timed each): {each}",
        f"- target: the four together <= {TARGET_S:.0f} s of CPU: {r['total']:.1f} s, ratio "
        f"{r['total'] / TARGET_S:.2f} (< 1 meets it)",
        f"- notebook 08's training, as many steps in the same run: {r['old']:.1f} s of CPU; one scheme of 09 takes "
        f"{mean / r['old']:.2f} of it on average (a ratio that does not depend on the machine)",
        f"- load average before {r['load'][0]:.1f}, after {r['load'][1]:.1f} (a shared machine is slower)",
    ]


def write_section(path: Path, body: list[str]) -> None:
    title = "## Notebook 09: the four position schemes' trainings (`make bench-positions`)"
    _report.replace_section(path, BEGIN, END, [title, "", *body])


def main(argv=None) -> int:
    return _report.run(
        argv,
        __doc__.split("\n\n")[0],
        "steps to time per scheme (default: the notebook's; scaled to it)",
        measure,
        lines,
        write_section,
    )


if __name__ == "__main__":
    raise SystemExit(main())
