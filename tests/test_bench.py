"""Smoke test of benchmarks/bench.py at tiny sizes: structure of the results, never timings."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("llm_lab_bench", ROOT / "benchmarks" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_attention_results_cover_every_implementation(bench):
    results = bench.bench_attention(batch=2, num_tokens=16, d=16, num_heads=4, repeats=2, extra_repeats=1,
                                    warmup_tokens=8)
    assert set(results) == set(bench.IMPLEMENTATIONS)
    for key, res in results.items():
        assert res.equal, f"{key} is not allclose to llm_lab.MultiHeadAttention"
        assert len(res.times) == (2 if key in bench.CORE else 1)
        assert all(t > 0 for t in res.times)
        assert res.saved_bytes > 0
    ratios = bench.ratios(results)
    assert ratios[bench.BASELINE] == 1.0
    assert all(r > 0 for r in ratios.values())
    # the explicit softmax keeps (B, nh, T, T) weights for backward, the fused kernel does not
    weights_bytes = 2 * 4 * 16 * 16 * 4  # (B, nh, T, T) float32
    assert results["manual"].saved_bytes >= weights_bytes
    assert results["manual"].saved_bytes > results["fused"].saved_bytes
    table = bench.attention_table(results)
    assert len(table) == 2 + len(bench.IMPLEMENTATIONS)


def test_every_implementation_matches_the_reference_with_gradients(bench):
    torch.manual_seed(0)
    x = torch.randn(2, 12, 16)
    ref, mods = bench.build_all(16, 4, 12, torch.device("cpu"))
    ref.train()
    ref(x).sum().backward()
    for key, module in mods.items():
        assert torch.allclose(module.train()(x), ref(x), atol=1e-5), key
        module(x).sum().backward()
        out_grad = module.out_proj.bias.grad if hasattr(module, "out_proj") else module.mha.out_proj.bias.grad
        assert torch.allclose(out_grad, ref.out_proj.bias.grad, atol=1e-5), key


def test_fused_does_the_same_work_as_bare_sdpa(bench):
    same, n_fused, n_bare = bench.same_work("fused", bench.BASELINE, d=16, num_heads=4, num_tokens=8)
    assert same and n_fused == n_bare > 0
    assert not bench.same_work("manual", bench.BASELINE, d=16, num_heads=4, num_tokens=8)[0]


def test_sweep_and_plot(bench, tmp_path):
    pytest.importorskip("matplotlib")
    keys = ["manual", "fused", "bare_sdpa"]
    results = bench.sweep(batch=1, tokens=[8, 16], d=8, num_heads=2, repeats=1, keys=keys)
    assert list(results) == [8, 16]
    assert all(set(row) == set(keys) and all(v > 0 for v in row.values()) for row in results.values())
    png = tmp_path / "bench.png"
    bench.plot_sweep(results, png, "smoke")
    assert png.stat().st_size > 0


def test_dataset_windows_equal_between_approaches(bench):
    ids = bench.token_ids(2_000)
    assert len(ids) >= 2_000
    for max_length, stride in [(4, 1), (4, 4), (16, 5)]:
        assert bench.windows_equal(ids, max_length, stride)
        views = bench.build_dataset("views", ids, max_length, stride)
        book = bench.build_dataset("list", ids, max_length, stride)
        assert len(views) == len(book) == (len(ids) - max_length - 1) // stride + 1


def test_dataset_bench_structure(bench):
    configs = [(16, 16), (16, 4)]
    results = bench.bench_dataset(3_000, configs, views_repeats=2, list_repeats=1, in_child=False)
    assert list(results) == configs
    for res in results.values():
        views, book = res["views"], res["list"]
        assert views["windows"] == book["windows"] > 0
        assert len(views["times"]) == 2 and len(book["times"]) == 1
        assert all(t > 0 for t in views["times"] + book["times"])
        assert book["equal"] is True
    slopes = bench.per_window_slopes(results)
    assert set(slopes) == {16} and set(slopes[16]) == {"views", "list"}
    assert len(bench.dataset_table(results)) == 2 + len(configs)


def test_dataset_child_process(bench):
    res = bench.measure_dataset_in_child("list", 1_000, 8, 8, 1)
    assert res["approach"] == "list" and res["windows"] == (res["n_tokens"] - 9) // 8 + 1
    assert res["equal"] is True
