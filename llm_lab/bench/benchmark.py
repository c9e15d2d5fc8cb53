"""Time and memory of the attention contestants in :mod:`llm_lab.bench.variants`, for notebook 07 and ``make bench``.

    python -m llm_lab.bench.benchmark                  # GPT-2 small sizes (B=8, d=768, 12 heads), on the CPU
    python -m llm_lab.bench.benchmark --device cuda    # the same on a GPU (e.g. Colab, after the setup cell)
    python -m llm_lab.bench.benchmark --preset quick   # small sizes, seconds

(``python -m llm_lab.benchmark``, the old name, runs the same until the next release.)

One step is forward + backward in train mode. Each contestant first runs a warm-up step at a short length;
then timed rounds go round-robin over the contestants, so a burst of load from other programs slows all of
them alike, and each reports its median, or with ``statistic="min"`` its fastest round, the one least disturbed.
Notebook 07 also times on one thread (``threads=1``) by that thread's CPU time (``clock="cpu"``), which stops
while other programs run. Memory: the bytes autograd saves for backward (distinct storages seen by
``torch.autograd.graph.saved_tensors_hooks``; parameters, buffers and the input excluded), and on CUDA also the
peak allocated during the step. Inputs are drawn on the CPU, then moved to the device.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field, replace

import torch

from .. import _checks
from .variants import BASELINE, CONTESTANTS, build_contestants


@dataclass(frozen=True)
class BenchSettings:
    """What to measure: one batch size and width, several sequence lengths (the last is the headline)."""

    batch: int
    d: int
    num_heads: int
    lengths: tuple[int, ...]
    repeats: int = 3  # timed rounds per length
    keys: tuple[str, ...] | None = None  # None: every contestant
    warmup_tokens: int = 64
    seed: int = 123
    threads: int | None = None  # torch threads while measuring (None: leave as set); 1 is the quietest
    statistic: str = "median"  # of the timed rounds: "median", or "min" (the step least disturbed by other load)
    clock: str = "wall"  # "wall" (time.perf_counter), or "cpu": this thread's CPU time (CPU device, threads=1 only)

    def __post_init__(self):
        for name in ("batch", "d", "num_heads", "repeats", "warmup_tokens"):
            _checks.positive_int(name, getattr(self, name))
        if self.threads is not None:
            _checks.positive_int("threads", self.threads)
        _checks.one_of("statistic", self.statistic, STATISTICS)
        _checks.one_of("clock", self.clock, CLOCKS)
        if not self.lengths:
            raise ValueError("lengths must name at least one sequence length")
        for t in self.lengths:
            _checks.positive_int("lengths[i]", t)


STATISTICS = ("median", "min")
CLOCKS = ("wall", "cpu")

PRESETS = {
    # notebook 07: small enough for a laptop CPU in a few seconds; one thread, its CPU time and the fastest of 9
    # rounds, so that other programs on the machine change the numbers little
    "notebook": BenchSettings(
        batch=2, d=64, num_heads=4, lengths=(64, 128, 256, 512), repeats=9, threads=1, statistic="min", clock="cpu"
    ),
    "quick": BenchSettings(batch=2, d=64, num_heads=4, lengths=(128, 256), repeats=3),
    # GPT-2 small's width and heads at its context length (and below, for the sweep)
    "full": BenchSettings(batch=8, d=768, num_heads=12, lengths=(256, 512, 1024), repeats=5),
    "full-cuda": BenchSettings(batch=8, d=768, num_heads=12, lengths=(256, 512, 1024, 2048), repeats=10),
}


@dataclass
class Measurement:
    """One contestant at one length: its times (seconds per step) and memory."""

    key: str
    equal: bool  # allclose to llm_lab.MultiHeadAttention with the same weights
    times: list = field(default_factory=list)
    saved_bytes: int = 0
    peak_bytes: int | None = None  # CUDA only
    statistic: str = "median"  # what ``time`` reports: "median" or "min" of ``times``

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def time(self) -> float:
        """Seconds per step: the median of the timed rounds, or their minimum (``statistic``)."""
        return min(self.times) if self.statistic == "min" else self.median


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def train_step(module, x, grad) -> None:
    """Forward + backward, as in training."""
    module.zero_grad(set_to_none=True)
    module(x).backward(grad)


def saved_activation_bytes(module, x, grad) -> int:
    """Bytes of the distinct storages autograd saves for backward in one step (params, buffers, x excluded)."""
    skip = {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers(), x]}
    storages = {}

    def pack(t):  # called for every tensor autograd saves; it only looks
        s = t.untyped_storage()
        if s.data_ptr() not in skip:  # views of one storage count once
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        train_step(module, x, grad)
    return sum(storages.values())


def cpu_saved_bytes(settings: BenchSettings, num_tokens: int) -> dict[str, int]:
    """``{key: bytes}`` autograd saves for one training step of each contestant, counted on the CPU.

    Exact counts, the same on every machine: what each version keeps for backward. (On a GPU the fused kernels
    save other statistics; :func:`measure` counts on the device it times.)
    """
    _checks.positive_int("num_tokens", num_tokens)
    s = settings
    _, modules = build_contestants(s.d, s.num_heads, max(num_tokens, s.warmup_tokens), s.keys, s.seed)
    torch.manual_seed(s.seed + num_tokens)
    x = torch.randn(s.batch, num_tokens, s.d)
    grad = torch.randn(s.batch, num_tokens, s.d)
    return {k: saved_activation_bytes(m.train(), x, grad) for k, m in modules.items()}


def cuda_peak_bytes(module, x, grad) -> int:
    """Peak bytes allocated during one step above what was allocated before it (CUDA only)."""
    _sync(x.device)
    torch.cuda.reset_peak_memory_stats(x.device)
    before = torch.cuda.memory_allocated(x.device)
    train_step(module, x, grad)
    _sync(x.device)
    return torch.cuda.max_memory_allocated(x.device) - before


def outputs_match(ref, modules, x, atol=1e-5, rtol=1e-4) -> dict:
    """{key: bool}: each module's output allclose to the reference's (eval mode, no grad)."""
    with torch.no_grad():
        want = ref.eval()(x)
        return {k: bool(torch.allclose(m.eval()(x), want, atol=atol, rtol=rtol)) for k, m in modules.items()}


def measure(settings: BenchSettings, num_tokens: int, device="cpu") -> dict[str, Measurement]:
    """Time and memory of every contestant at one length: ``{key: Measurement}``, in registry order."""
    device = torch.device(device)
    s = settings
    threads = torch.get_num_threads()
    if s.threads is not None:
        torch.set_num_threads(s.threads)
    try:
        return _measure(s, num_tokens, device)
    finally:
        torch.set_num_threads(threads)


def _measure(s: BenchSettings, num_tokens: int, device: torch.device) -> dict[str, Measurement]:
    if s.clock == "cpu" and (device.type != "cpu" or s.threads != 1):
        raise ValueError(
            f"clock='cpu' times the calling thread's CPU time, which counts a step only on a CPU device with "
            f"threads=1; got device {device.type}, threads={s.threads}; use clock='wall' there"
        )
    clock = time.thread_time if s.clock == "cpu" else time.perf_counter
    ref, modules = build_contestants(s.d, s.num_heads, max(num_tokens, s.warmup_tokens), s.keys, s.seed)
    torch.manual_seed(s.seed + num_tokens)
    x = torch.randn(s.batch, num_tokens, s.d)  # drawn on the CPU: the same numbers on every device
    grad = torch.randn(s.batch, num_tokens, s.d)
    equal = outputs_match(ref, modules, x)
    x, grad, ref = x.to(device), grad.to(device), ref.to(device)
    results = {k: Measurement(k, equal[k], statistic=s.statistic) for k in modules}
    warm = min(num_tokens, s.warmup_tokens)
    small_x, small_grad = x[:, :warm].contiguous(), grad[:, :warm].contiguous()
    for k, m in modules.items():
        m.to(device).train()
        train_step(m, small_x, small_grad)  # lazy setup and kernel choice, without paying for a full step
        if device.type == "cuda":
            train_step(m, x, grad)  # cuBLAS and SDPA pick their kernels on the first full-size call
            results[k].peak_bytes = cuda_peak_bytes(m, x, grad)
    for k, m in modules.items():
        results[k].saved_bytes = saved_activation_bytes(m, x, grad)
    for k, times in round_robin(modules, x, grad, s.repeats, clock, device).items():
        results[k].times = times
    for m in modules.values():
        m.zero_grad(set_to_none=True)
    return results


def round_robin(modules, x, grad, repeats, clock, device) -> dict[str, list[float]]:
    """``{key: [seconds per round]}``: one training step of each module per round, the modules in turn."""
    times = {k: [] for k in modules}
    for _ in range(repeats):  # a burst of load from other programs slows every module of that round alike
        for k, m in modules.items():
            _sync(device)  # a GPU runs ahead of Python: wait for it before reading the clock
            start = clock()
            train_step(m, x, grad)
            _sync(device)
            times[k].append(clock() - start)
    return times


def sweep(settings: BenchSettings, device="cpu") -> dict[int, dict[str, Measurement]]:
    """``{T: {key: Measurement}}`` for every length of the settings."""
    return {t: measure(settings, t, device) for t in settings.lengths}


def ratios(results: dict[str, Measurement], baseline: str = BASELINE) -> dict[str, float]:
    """Each contestant's time (median or minimum, as measured) over the baseline's (the bare SDPA call)."""
    if baseline not in results:
        raise ValueError(f"the baseline {baseline!r} was not measured; measured: {list(results)}")
    base = results[baseline].time
    return {k: r.time / base for k, r in results.items()}


def aten_ops(module, x, grad) -> list[str]:
    """The ATen operators one forward + backward step dispatches, in order (what the step computes)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Trace(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    with Trace() as trace:
        train_step(module, x, grad)
    return trace.ops


def same_work(key_a: str, key_b: str, d=64, num_heads=4, num_tokens=32) -> tuple[bool, int, int]:
    """(equal, n_ops_a, n_ops_b): do two contestants dispatch the same ATen operators in the same order?"""
    _, modules = build_contestants(d, num_heads, num_tokens, [key_a, key_b])
    torch.manual_seed(0)
    x, grad = torch.randn(2, num_tokens, d), torch.randn(2, num_tokens, d)
    a, b = aten_ops(modules[key_a].train(), x, grad), aten_ops(modules[key_b].train(), x, grad)
    return a == b, len(a), len(b)


def _mib(n) -> str:
    return "n/a" if n is None else f"{n / 2**20:,.1f}"


def table(results: dict[str, Measurement], labels: bool = True) -> list[str]:
    """A markdown table, fastest first: allclose, time (median or minimum), ratio to the baseline, memory."""
    r = ratios(results)
    has_peak = any(x.peak_bytes is not None for x in results.values())
    stat = next(iter(results.values())).statistic
    head = f"| implementation | allclose to manual | fwd+bwd ({stat}) | / bare SDPA | saved for backward (MiB) |"
    sep = "|---|---|---:|---:|---:|"
    if has_peak:
        head, sep = head + " CUDA peak (MiB) |", sep + "---:|"
    rows = [head, sep]
    for k, res in sorted(results.items(), key=lambda kv: kv[1].time):
        name = f"`{k}`: {CONTESTANTS[k].label}" if labels else f"`{k}`"
        row = f"| {name} | {res.equal} | {res.time * 1e3:,.2f} ms | {r[k]:.2f}x | {_mib(res.saved_bytes)} |"
        rows.append(row + (f" {_mib(res.peak_bytes)} |" if has_peak else ""))
    return rows


def plot_sweep(sweep_results: dict[int, dict[str, Measurement]], title: str = "", lang: str = "en"):
    """Two panels against T, log-log: time per step (median or minimum) and bytes saved for backward; one legend.

    ``lang``: the language of the axis names and the legend's title ("en" or "zh").
    """
    import matplotlib.pyplot as plt

    from ..explore.figure_words import FIGURE_LANGUAGES, figure_word

    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    lengths = sorted(sweep_results)
    keys = list(sweep_results[lengths[0]])
    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(10, 3.8))
    for k in keys:
        style = "--" if CONTESTANTS[k].explicit else "-"  # solid: the fused kernel paths
        times = [sweep_results[t][k].time * 1e3 for t in lengths]
        saved = [sweep_results[t][k].saved_bytes / 2**20 for t in lengths]
        ax_time.plot(lengths, times, style, marker="o", markersize=3, label=k)
        ax_mem.plot(lengths, saved, style, marker="o", markersize=3, label=k)
    for ax in (ax_time, ax_mem):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(figure_word("sequence length T", lang))
        ax.grid(alpha=0.3)
    fastest = sweep_results[lengths[0]][keys[0]].statistic == "min"
    ax_time.set_ylabel(figure_word("time min" if fastest else "time", lang))
    ax_mem.set_ylabel(figure_word("saved", lang))
    fig.legend(
        *ax_time.get_legend_handles_labels(),
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        fontsize=8,
        title=figure_word("dashed", lang),
        title_fontsize=8,
    )
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def machine_lines(device) -> list[str]:
    import os
    import platform
    from pathlib import Path

    device = torch.device(device)
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines = [
        f"CPU: {cpu}, {os.cpu_count()} logical cores, torch threads: {torch.get_num_threads()}",
        f"torch {torch.__version__}, Python {platform.python_version()}, {platform.system()} {platform.release()}",
    ]
    if device.type == "cuda":
        lines.append(f"GPU: {torch.cuda.get_device_name(device)}")
    return lines


def settings_for(preset: str, device, repeats: int | None = None) -> BenchSettings:
    """A preset by name; ``full`` on a GPU becomes ``full-cuda`` (longer sweep, more repeats)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {list(PRESETS)}")
    if preset == "full" and torch.device(device).type == "cuda":
        preset = "full-cuda"
    s = PRESETS[preset]
    return replace(s, repeats=repeats) if repeats else s


def parse_device(name: str) -> torch.device:
    """The device named, or a ValueError saying why it cannot be used here."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"--device {name!r} is not a device name; use cpu or cuda") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "--device cuda: no CUDA device is visible to torch (on Colab: Runtime > Change runtime type > GPU)"
        )
    return device


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m llm_lab.bench.benchmark",
        description="Time forward + backward of nine causal multi-head attention layers.",
    )
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--preset", default="full", choices=list(PRESETS), help="sizes to measure (default: full)")
    ap.add_argument("--repeats", type=int, default=None, help="timed rounds per length (default: the preset's)")
    args = ap.parse_args(argv)
    try:
        device = parse_device(args.device)
    except ValueError as err:
        ap.error(str(err))
    s = settings_for(args.preset, device, args.repeats)
    print("\n".join(machine_lines(device)))
    for t in s.lengths:
        print(
            f"\nB={s.batch}, T={t}, d={s.d}, {s.num_heads} heads, float32, {device}, {s.statistic} of {s.repeats}",
            flush=True,
        )
        print("\n".join(table(measure(s, t, device))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
