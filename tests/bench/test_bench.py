"""The benchmark at tiny sizes: llm_lab.bench.variants, llm_lab.bench.benchmark and benchmarks/*.py. Structure, never
timings."""

import functools
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_lab.bench import benchmark as lb
from llm_lab.bench import variants

ROOT = Path(__file__).resolve().parents[2]
TINY = lb.BenchSettings(batch=2, d=16, num_heads=4, lengths=(16, 32), repeats=2, warmup_tokens=8)


@pytest.fixture(scope="module")
def scripts():
    """(bench, dataset_bench), the modules `python -m benchmarks.bench` runs."""
    from benchmarks import bench, dataset_bench

    return bench, dataset_bench


def test_every_contestant_matches_the_reference_with_gradients():
    torch.manual_seed(0)
    x = torch.randn(2, 12, 16)
    ref, modules = variants.build_contestants(16, 4, 12)
    assert list(modules) == list(variants.CONTESTANTS)
    ref.train()
    ref(x).sum().backward()
    for key, module in modules.items():
        assert torch.allclose(module.train()(x), ref(x), atol=1e-5), key
        module(x).sum().backward()
        assert torch.allclose(module.out_proj.bias.grad, ref.out_proj.bias.grad, atol=1e-5), key


def test_a_wrong_weight_copy_is_caught():
    ref, modules = variants.build_contestants(16, 4, 12, keys=["einsum"])
    with torch.no_grad():
        modules["einsum"].W_key.mul_(1.01)
    assert lb.outputs_match(ref, modules, torch.randn(1, 12, 16)) == {"einsum": False}


def test_measure_covers_every_contestant():
    results = lb.measure(TINY, 32)
    assert list(results) == list(variants.CONTESTANTS)
    for key, res in results.items():
        assert res.equal, f"{key} is not allclose to llm_lab.MultiHeadAttention"
        assert len(res.times) == TINY.repeats and all(t > 0 for t in res.times)
        assert res.saved_bytes > 0 and res.peak_bytes is None
    # the explicit softmax keeps (B, nh, T, T) float32 weights for backward, the fused kernel does not
    weights_bytes = 2 * 4 * 32 * 32 * 4
    for key, contestant in variants.CONTESTANTS.items():
        if contestant.explicit:
            assert results[key].saved_bytes >= weights_bytes, key
        else:
            assert results[key].saved_bytes < weights_bytes, key
    r = lb.ratios(results)
    assert r[lb.BASELINE] == 1.0 and all(v > 0 for v in r.values())
    rows = lb.table(results)
    assert len(rows) == 2 + len(results)
    medians = [results[row.split("`")[1]].median for row in rows[2:]]
    assert medians == sorted(medians)  # fastest first


def test_measure_a_subset_and_bad_settings():
    results = lb.measure(lb.BenchSettings(1, 8, 2, (8,), repeats=1, keys=("manual", "sdpa")), 8)
    assert list(results) == ["manual", "sdpa"]
    with pytest.raises(ValueError, match="baseline 'sdpa' was not measured"):
        lb.ratios({"manual": results["manual"]})
    with pytest.raises(ValueError, match="unknown contestants"):
        variants.build_contestants(8, 2, 8, keys=["nope"])
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        lb.BenchSettings(1, 8, 2, (8,), repeats=0)
    with pytest.raises(ValueError, match="at least one"):
        lb.BenchSettings(1, 8, 2, ())
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        lb.settings_for("huge", "cpu")


def test_one_quiet_thread_its_cpu_clock_and_the_fastest_round(monkeypatch):
    quiet = lb.BenchSettings(1, 8, 2, (8,), repeats=3, keys=("manual", "sdpa"), threads=1, clock="cpu", statistic="min")
    torch.set_num_threads(2)
    seen = []
    step = lb.train_step
    monkeypatch.setattr(lb, "train_step", lambda *a: (seen.append(torch.get_num_threads()), step(*a))[1])
    results = lb.measure(quiet, 8)
    assert set(seen) == {1} and torch.get_num_threads() == 2  # one thread while measuring, restored afterwards
    for res in results.values():
        assert res.statistic == "min" and res.time == min(res.times) and len(res.times) == 3
    assert "fwd+bwd (min)" in lb.table(results)[0]
    res = lb.Measurement("sdpa", True, times=[3.0, 1.0, 2.0, 9.0])
    assert (res.time, res.median) == (2.5, 2.5)  # the median unless asked for the minimum
    res.statistic = "min"
    assert res.time == 1.0
    # the CPU clock of the calling thread counts a step only when the step runs on that one thread, on the CPU
    with pytest.raises(ValueError, match="threads=1"):
        lb.measure(lb.BenchSettings(1, 8, 2, (8,), repeats=1, keys=("sdpa",), clock="cpu"), 8)
    with pytest.raises(ValueError, match="statistic"):
        lb.BenchSettings(1, 8, 2, (8,), statistic="mean")
    with pytest.raises(ValueError, match="clock"):
        lb.BenchSettings(1, 8, 2, (8,), clock="gpu")
    with pytest.raises(ValueError, match="threads must be a positive int"):
        lb.BenchSettings(1, 8, 2, (8,), threads=0)


def test_presets_and_device():
    assert lb.settings_for("full", "cpu") == lb.PRESETS["full"]
    assert lb.settings_for("quick", "cpu", repeats=7).repeats == 7
    assert lb.PRESETS["notebook"].lengths[-1] == 512
    assert (lb.PRESETS["notebook"].threads, lb.PRESETS["notebook"].clock, lb.PRESETS["notebook"].statistic) == (
        1,
        "cpu",
        "min",
    )
    with pytest.raises(ValueError, match="not a device name"):
        lb.parse_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            lb.parse_device("cuda")


def test_fused_does_the_same_work_as_bare_sdpa():
    same, n_fused, n_bare = lb.same_work("fused", lb.BASELINE, d=16, num_heads=4, num_tokens=8)
    assert same and n_fused == n_bare > 0
    assert not lb.same_work("manual", lb.BASELINE, d=16, num_heads=4, num_tokens=8)[0]


def test_same_call_and_explicit_flags_match_the_operators():
    """`same_as` contestants end in their target's attention kernel; explicit ones run a plain softmax."""
    _, modules = variants.build_contestants(16, 4, 8)
    torch.manual_seed(0)
    x, grad = torch.randn(2, 8, 16), torch.randn(2, 8, 16)

    def kernels(key):
        ops = lb.aten_ops(modules[key].train(), x, grad)
        return {op for op in ops if "attention" in op or "softmax" in op}

    fused_kernels = kernels(lb.BASELINE)
    assert any("scaled_dot_product" in op for op in fused_kernels)
    for key, contestant in variants.CONTESTANTS.items():
        if contestant.same_as:
            assert kernels(key) == kernels(contestant.same_as), key
        if contestant.explicit:
            assert not kernels(key) & fused_kernels and any("softmax" in op for op in kernels(key)), key


def test_sweep_and_plot():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    settings = lb.BenchSettings(1, 8, 2, (8, 16), repeats=1, keys=("manual", "fused", "sdpa"))
    sweep = lb.sweep(settings)
    assert list(sweep) == [8, 16] and all(list(res) == ["manual", "fused", "sdpa"] for res in sweep.values())
    fig = lb.plot_sweep(sweep, "smoke")
    assert len(fig.legends) == 1 and len(fig.legends[0].get_texts()) == 3
    assert fig.axes[0].get_ylabel() == "forward + backward (ms, median)"
    plt.close(fig)
    for res in sweep.values():  # the axis names the statistic the times are
        for r in res.values():
            r.statistic = "min"
    from llm_lab.explore.plotting import use_figure_font

    use_figure_font()  # the shipped CJK font, for the Chinese axis names
    fig = lb.plot_sweep(sweep, "smoke", lang="zh")
    assert fig.axes[0].get_ylabel() == "前向 + 反向（毫秒，最快的一轮）"
    plt.close(fig)


def test_module_entry_point_prints_the_table(monkeypatch, capsys):
    monkeypatch.setitem(lb.PRESETS, "quick", TINY)
    assert lb.main(["--preset", "quick", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "T=32, d=16, 4 heads" in out and "| `sdpa`: 3 Linear" in out and "1.00x" in out
    with pytest.raises(SystemExit):
        lb.main(["--device", "gpu0"])


@pytest.mark.parametrize("module", ["llm_lab.bench.benchmark", "llm_lab.benchmark"])  # old name: docs, notebook 07
def test_python_dash_m_runs_main(module):
    proc = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    # the old path says it is deprecated (tests/repo/test_old_paths.py); the new one prints nothing on stderr
    old = "llm_lab.benchmark"  # the old name, named by the warning
    warned = f"DeprecationWarning: {old} is deprecated and removed in 0.3.0: use llm_lab.bench.benchmark"
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("  ")]  # the echoed source line
    assert [line.split(": ", 1)[1] for line in lines] == ([warned] if module == old else []), lines
    assert proc.stdout.startswith("usage: python -m llm_lab.bench.benchmark") and "--preset" in proc.stdout


def test_bench_script_writes_the_report(scripts, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    bench, dataset_bench = scripts
    monkeypatch.setitem(lb.PRESETS, "quick", TINY)
    monkeypatch.setitem(bench.DATASET_PRESETS, "quick", (2_000, [(16, 16), (16, 4)], 2, 1))
    monkeypatch.setattr(dataset_bench, "bench_dataset", functools.partial(dataset_bench.bench_dataset, in_child=False))
    out = tmp_path / "bench.md"
    assert bench.main(["--quick", "--out", str(out)]) == 0
    report = out.read_text()
    assert "$" not in report  # every template field filled
    assert "| `sdpa`: 3 Linear" in report and "| 16 | 16 |" in report and "same ATen operators" in report
    assert (tmp_path / "bench.png").stat().st_size > 0


def test_dataset_windows_equal_between_approaches(scripts):
    _, db = scripts
    ids = db.token_ids(2_000)
    assert len(ids) >= 2_000
    for max_length, stride in [(4, 1), (4, 4), (16, 5)]:
        assert db.windows_equal(ids, max_length, stride)
        views = db.build_dataset("views", ids, max_length, stride)
        book = db.build_dataset("list", ids, max_length, stride)
        assert len(views) == len(book) == (len(ids) - max_length - 1) // stride + 1


def test_dataset_bench_structure(scripts):
    _, db = scripts
    configs = [(16, 16), (16, 4)]
    results = db.bench_dataset(3_000, configs, views_repeats=2, list_repeats=1, in_child=False)
    assert list(results) == configs
    for res in results.values():
        views, book = res["views"], res["list"]
        assert views["windows"] == book["windows"] > 0
        assert len(views["times"]) == 2 and len(book["times"]) == 1
        assert all(t > 0 for t in views["times"] + book["times"])
        assert book["equal"] is True
    slopes = db.per_window_slopes(results)
    assert set(slopes) == {16} and set(slopes[16]) == {"views", "list"}
    assert len(db.dataset_table(results)) == 2 + len(configs)
    assert set(db.speedups(results)) == set(configs)


def test_dataset_child_process(scripts):
    _, db = scripts
    res = db.measure_dataset_in_child("list", 1_000, 8, 8, 1)
    assert res["approach"] == "list" and res["windows"] == (res["n_tokens"] - 9) // 8 + 1
    assert res["equal"] is True


def test_report_without_matplotlib(scripts, monkeypatch, tmp_path):
    bench, _ = scripts
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    line = bench.write_plot({}, tmp_path / "b.png", "t")
    assert line.startswith("(no figure") and not (tmp_path / "b.png").exists()
