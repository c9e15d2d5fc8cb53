"""The interactive explorers in llm_lab.explore.widgets (old path llm_lab.widgets), driven programmatically (no
browser, no kernel).

Runs under ipywidgets 8 (the main .venv) and 7.7.1 (`make widgets7`, Colab's version).
Set LLM_LAB_IPYWIDGETS_MAJOR=7 or 8 to make the run fail if another major is installed.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # before matplotlib is imported anywhere

import subprocess  # noqa: E402
import sys  # noqa: E402

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from llm_lab import causal_mask, causal_softmax, mask_and_renormalize  # noqa: E402
from llm_lab.explore.widgets import (  # noqa: E402
    DropoutExplorer,
    HeadsExplorer,
    MaskExplorer,
    dropout_explorer,
    example_attn_scores,
    heads_explorer,
    mask_explorer,
)

IPYWIDGETS_MAJOR = int(ipywidgets.__version__.split(".")[0])
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]


# The id names the version, so `pytest -v` output shows which ipywidgets major this run tested.
@pytest.mark.parametrize("version", [ipywidgets.__version__], ids=[f"ipywidgets-{ipywidgets.__version__}"])
def test_ipywidgets_major(version):
    expected = os.environ.get("LLM_LAB_IPYWIDGETS_MAJOR")
    assert IPYWIDGETS_MAJOR in (7, 8), f"unsupported ipywidgets {version}"
    if expected:
        assert IPYWIDGETS_MAJOR == int(expected), f"expected ipywidgets {expected}.x, got {version}"


def test_importing_llm_lab_does_not_import_widgets():
    # nor any subpackage, nor the old path: `import llm_lab` loads the book's modules only
    code = (
        "import sys, llm_lab; bad = {'ipywidgets', 'llm_lab.explore', 'llm_lab.bench', 'llm_lab.dev', "
        "'llm_lab.widgets'} & set(sys.modules); assert not bad, bad"  # llm_lab.widgets: the old path
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _check_rendered(explorer, expected_shape):
    assert isinstance(explorer.weights, torch.Tensor)
    assert explorer.weights.device.type == "cpu"
    assert tuple(explorer.weights.shape) == expected_shape
    assert isinstance(explorer.image_data, np.ndarray)
    np.testing.assert_allclose(explorer.image_data, explorer.weights.numpy(), rtol=0, atol=0)
    assert explorer.figure.axes[0].images[0].get_array().shape == expected_shape  # what was drawn
    assert explorer.png.startswith(PNG_MAGIC)
    assert explorer.image.value == explorer.png
    # the readout widget holds exactly the current readout, as one stdout stream
    assert explorer.readout_output.outputs == (
        {"output_type": "stream", "name": "stdout", "text": explorer.readout + "\n"},
    )
    assert plt.get_fignums() == []  # figures never go through pyplot, so none is left open


def _lower_triangular_rows_sum_to_one(weights):
    num_tokens = weights.shape[-1]
    assert torch.all(weights[causal_mask(num_tokens)] == 0)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(num_tokens))


# --- mask explorer -------------------------------------------------------------------------------------


def test_mask_explorer_defaults_to_running_example():
    explorer = mask_explorer()
    assert isinstance(explorer, MaskExplorer)
    assert explorer.tokens_slider.value == 6 and explorer.tokens_slider.max == 6
    assert explorer.method_toggle.value == "manual"
    assert explorer.tokens == TOKENS
    _check_rendered(explorer, (6, 6))
    _lower_triangular_rows_sum_to_one(explorer.weights)
    # the numbers the notebooks print for the running example
    torch.testing.assert_close(explorer.weights[1, :2], torch.tensor([0.5517, 0.4483]), atol=1e-4, rtol=0)
    torch.testing.assert_close(
        torch.softmax(example_attn_scores(), dim=-1)[0],
        torch.tensor([0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510]),
        atol=1e-4,
        rtol=0,
    )
    assert [t.get_text() for t in explorer.figure.axes[0].get_xticklabels()] == TOKENS


def test_mask_explorer_redraws_when_controls_move(capsys):
    explorer = mask_explorer()
    scores = example_attn_scores()
    renders = explorer.render_count
    explorer.tokens_slider.value = 4
    assert explorer.render_count == renders + 1
    _check_rendered(explorer, (4, 4))
    expected = mask_and_renormalize(torch.softmax(scores[:4, :4], dim=-1))
    torch.testing.assert_close(explorer.weights, expected)
    assert "T = 4 tokens, method: mask + renormalize" in explorer.readout
    assert "row sums: 1.0000 1.0000 1.0000 1.0000" in explorer.readout
    assert "largest weight above the diagonal (the future): 0.0000" in explorer.readout
    assert "allclose: True" in explorer.readout
    assert [t.get_text() for t in explorer.figure.axes[0].get_yticklabels()] == TOKENS[:4]

    explorer.method_toggle.value = "-inf"
    _check_rendered(explorer, (4, 4))
    torch.testing.assert_close(explorer.weights, causal_softmax(scores[:4, :4]), rtol=0, atol=0)
    _lower_triangular_rows_sum_to_one(explorer.weights)
    assert "method: -inf + softmax" in explorer.readout
    assert explorer.max_difference < 1e-6
    assert f"max |manual - (-inf)| = {explorer.max_difference:.1e}" in explorer.readout

    explorer.method_toggle.value = "none"
    torch.testing.assert_close(explorer.weights, torch.softmax(scores[:4, :4], dim=-1))
    assert explorer.weights[0, 1] > 0  # no mask: the future is visible
    assert "method: no mask" in explorer.readout
    assert "(the future): 0.0000" not in explorer.readout

    explorer.tokens_slider.value = 1
    _check_rendered(explorer, (1, 1))
    assert explorer.weights.item() == 1.0
    # a shorter prefix leaves the earlier rows unchanged: that is what causal means
    explorer.method_toggle.value = "manual"
    prefix = explorer.weights
    explorer.tokens_slider.value = 6
    torch.testing.assert_close(explorer.weights[:1, :1], prefix)

    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_mask_explorer_custom_scores_and_errors():
    torch.manual_seed(0)
    scores = torch.randn(9, 9)
    state = torch.get_rng_state()
    explorer = mask_explorer(scores, num_tokens=5, method="-inf")
    assert torch.equal(torch.get_rng_state(), state)  # the explorer leaves the global random stream alone
    assert explorer.tokens is None and explorer.tokens_slider.max == 9
    _check_rendered(explorer, (5, 5))
    torch.testing.assert_close(explorer.weights, causal_softmax(scores[:5, :5]))

    with pytest.raises(ValueError, match=r"square \(T, T\) matrix.*\(3, 4\)"):
        mask_explorer(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="torch.Tensor"):
        mask_explorer([[0.0]])
    with pytest.raises(ValueError, match=r"tokens has 2 strings but the weights have T=3 tokens"):
        mask_explorer(torch.zeros(3, 3), tokens=["a", "b"])
    with pytest.raises(ValueError, match=r"num_tokens must be in 1\.\.3"):
        mask_explorer(torch.zeros(3, 3), num_tokens=4)
    with pytest.raises(ValueError, match="method must be one of"):
        mask_explorer(method="softmax")
    with pytest.raises(ValueError, match="infinite"):
        mask_explorer(torch.full((2, 2), float("-inf")))


# --- dropout explorer ----------------------------------------------------------------------------------


def test_dropout_explorer_matches_nn_dropout(capsys):
    explorer = dropout_explorer(torch.ones(6, 6))
    assert isinstance(explorer, DropoutExplorer)
    assert (explorer.p_slider.value, explorer.seed_slider.value, explorer.mode_toggle.value) == (0.5, 123, "train")
    _check_rendered(explorer, (6, 6))
    torch.manual_seed(123)
    expected = torch.nn.Dropout(0.5)(torch.ones(6, 6))  # the book's demo
    assert torch.equal(explorer.weights, expected)
    assert set(explorer.weights.unique().tolist()) <= {0.0, 2.0}
    assert explorer.scale == 2.0
    zeroed = int((expected == 0).sum())
    assert explorer.zeroed_fraction == zeroed / 36
    assert f"zeroed: {zeroed} of 36 nonzero weights" in explorer.readout
    assert "1/(1-p) = 2.00" in explorer.readout

    state = torch.get_rng_state()
    explorer.seed_slider.value = 7
    assert torch.equal(torch.get_rng_state(), state)  # seeded inside fork_rng
    torch.manual_seed(7)
    assert torch.equal(explorer.weights, torch.nn.Dropout(0.5)(torch.ones(6, 6)))

    explorer.p_slider.value = 0.2
    _check_rendered(explorer, (6, 6))
    assert explorer.scale == pytest.approx(1.25)
    torch.manual_seed(7)
    assert torch.equal(explorer.weights, torch.nn.Dropout(0.2)(torch.ones(6, 6)))
    assert "mode: train, p = 0.20, seed = 7" in explorer.readout
    assert "1/(1-p) = 1.25" in explorer.readout

    explorer.p_slider.value = 0.0
    assert torch.equal(explorer.weights, torch.ones(6, 6)) and explorer.zeroed_fraction == 0.0

    assert capsys.readouterr().out == ""


def test_dropout_explorer_eval_is_identity(capsys):
    explorer = dropout_explorer()  # the running example's causal weights
    before = causal_softmax(example_attn_scores())
    torch.testing.assert_close(explorer.weights_before, before)
    assert explorer.zeroed_fraction > 0
    # kept weights are scaled by 1/(1-p), dropped ones are 0
    kept = ~explorer.zeroed & (before != 0)
    torch.testing.assert_close(explorer.weights[kept], before[kept] * 2)
    assert torch.all(explorer.weights[explorer.zeroed] == 0)
    train_sums = explorer.weights.sum(dim=-1)
    assert "row sums: " + " ".join(f"{float(s):.4f}" for s in train_sums) in explorer.readout

    explorer.mode_toggle.value = "eval"
    _check_rendered(explorer, (6, 6))
    assert torch.equal(explorer.weights, before)  # eval: dropout does nothing
    _lower_triangular_rows_sum_to_one(explorer.weights)
    assert explorer.scale == 1.0 and explorer.zeroed_fraction == 0.0
    assert "mode: eval" in explorer.readout and "zeroed: 0 of 21 nonzero weights (0.0%)" in explorer.readout
    assert "row sums: 1.0000 1.0000 1.0000 1.0000 1.0000 1.0000" in explorer.readout
    explorer.p_slider.value = 0.9
    assert torch.equal(explorer.weights, before)

    with pytest.raises(ValueError, match="p must be"):
        dropout_explorer(p=1.0)
    with pytest.raises(ValueError, match="mode must be"):
        dropout_explorer(mode="test")
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        dropout_explorer(torch.ones(2, 3))
    assert capsys.readouterr().out == ""


# --- heads explorer ------------------------------------------------------------------------------------


def test_heads_explorer_shows_the_selected_slice(mha_weights, capsys):
    tokens = [TOKENS, ["A", " b", "c", "\n", "e", "f"]]
    explorer = heads_explorer(mha_weights, tokens)
    assert isinstance(explorer, HeadsExplorer)
    assert (explorer.batch_slider.max, explorer.head_slider.max) == (1, 1)
    _check_rendered(explorer, (6, 6))
    assert torch.equal(explorer.weights, mha_weights[0, 0])
    assert "attn_weights[0, 0] has shape (6, 6)" in explorer.readout
    assert [t.get_text() for t in explorer.figure.axes[0].get_xticklabels()] == TOKENS

    for batch, head in [(0, 1), (1, 1), (1, 0)]:
        explorer.batch_slider.value = batch
        explorer.head_slider.value = head
        _check_rendered(explorer, (6, 6))
        assert torch.equal(explorer.weights, mha_weights[batch, head])
        _lower_triangular_rows_sum_to_one(explorer.weights)
        assert f"batch {batch} of 0..1, head {head} of 0..1" in explorer.readout
        assert "row sums: 1.0000 1.0000 1.0000 1.0000 1.0000 1.0000" in explorer.readout
        assert "largest weight above the diagonal (the future): 0.0000" in explorer.readout
    # labels follow the batch row; GPT-2 style leading spaces are stripped, whitespace tokens quoted
    assert [t.get_text() for t in explorer.figure.axes[0].get_yticklabels()] == ["A", "b", "c", "'\\n'", "e", "f"]
    assert explorer.readout.splitlines()[-1].startswith("strongest key per query: A->A, b->")
    assert capsys.readouterr().out == ""


def test_heads_explorer_shared_tokens_and_single_choices(mha_weights):
    explorer = heads_explorer(mha_weights[:1, :1], TOKENS)  # (1, 1, 6, 6)
    assert explorer.batch_slider.disabled and explorer.head_slider.disabled
    assert explorer.tokens_per_row == [TOKENS]
    explorer = heads_explorer(mha_weights, TOKENS, batch=1, head=1)  # one list shared by both batch rows
    assert explorer.tokens_per_row == [TOKENS, TOKENS]
    assert torch.equal(explorer.weights, mha_weights[1, 1])
    explorer = heads_explorer(mha_weights.double().numpy())  # numpy in, no labels
    assert explorer.tokens_per_row is None
    torch.testing.assert_close(explorer.weights, mha_weights[0, 0].double())
    assert "strongest key per query: 0->0, 1->" in explorer.readout


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((torch.zeros(2, 6, 6),), ValueError, r"\(B, nh, T, T\), got 3-D shape \(2, 6, 6\).*unsqueeze\(1\)"),
        ((torch.zeros(6, 6),), ValueError, r"got 2-D shape \(6, 6\).*\[None, None\]"),
        ((torch.zeros(1, 2, 6, 5),), ValueError, r"equal last two sizes, got \(1, 2, 6, 5\)"),
        (([[1.0]],), TypeError, "must be a torch.Tensor, got list"),
        ((torch.zeros(1, 1, 2, 2, dtype=torch.bool),), TypeError, "real numbers"),
        ((torch.zeros(2, 1, 3, 3), ["a", "b"]), ValueError, r"tokens has 2 strings but the weights have T=3"),
        ((torch.zeros(2, 1, 3, 3), [["a", "b", "c"]]), ValueError, r"1 entries but attn_weights has B=2"),
        ((torch.zeros(2, 1, 3, 3), [["a", "b", "c"], ["a", "b"]]), ValueError, r"tokens\[1\] has 2 strings"),
        ((torch.zeros(1, 1, 3, 3), "abc"), TypeError, "tokens must be a list"),
        ((torch.zeros(1, 1, 3, 3), ["a", 1, "c"]), TypeError, r"tokens\[1\] must be a str"),
        ((torch.zeros(1, 1, 3, 3), [["a", 1, "c"]]), TypeError, r"tokens\[0\]\[1\] must be a str"),
    ],
)
def test_heads_explorer_rejects_bad_input(args, error, message):
    with pytest.raises(error, match=message):
        heads_explorer(*args)


def test_heads_explorer_rejects_bad_start_values(mha_weights):
    with pytest.raises(ValueError, match=r"head must be in 0\.\.1"):
        heads_explorer(mha_weights, head=2)
    with pytest.raises(TypeError, match="batch must be an int"):
        heads_explorer(mha_weights, batch=0.5)


# --- display --------------------------------------------------------------------------------------------


def test_heads_explorer_rejects_masked_scores():
    from llm_lab.explore.widgets import heads_explorer

    scores = torch.zeros(1, 1, 2, 2)
    scores[0, 0, 0, 1] = float("-inf")
    with pytest.raises(ValueError, match="NaN or infinite entries.*not the -inf masked scores"):
        heads_explorer(scores)


def test_heads_explorer_token_mistakes_point_at_the_real_problem():
    from llm_lab.explore.widgets import heads_explorer

    weights = causal_softmax(torch.zeros(2, 3, 4, 4))
    with pytest.raises(TypeError, match=r"found 1 \(int\): decode token ids to strings first"):
        heads_explorer(weights, tokens=[1, 2, 3, 4])
    with pytest.raises(TypeError, match=r"mixes lists with single entries: found 'bbbb' \(str\)"):
        heads_explorer(weights, tokens=[["a"] * 4, "bbbb"])


# --- the text stand-in a saved notebook shows ------------------------------------------------------------


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.mark.parametrize("make", ["mask", "dropout", "heads"])
def test_the_saved_stand_in_is_in_the_notebooks_language_only(make, mha_weights):
    """An English notebook shows only English, a Chinese one only Chinese; repr() is what nbval compares."""
    factory, args = {
        "mask": (mask_explorer, ()),
        "dropout": (dropout_explorer, ()),
        "heads": (heads_explorer, (mha_weights,)),
    }[make]

    def build(lang=None):
        return factory(*args) if lang is None else factory(*args, lang=lang)

    en, zh = build("en"), build("zh")
    assert repr(en) == repr(en.ui) == f"{en.name}: run this cell for the live controls"
    assert not _has_cjk(repr(en))
    assert repr(zh) == f"{zh.name_zh}：运行本单元即可交互"
    assert "run this cell" not in repr(zh) and _has_cjk(repr(zh))
    assert repr(build()) == repr(en)  # a call without lang is English
    with pytest.raises(ValueError, match="lang='fr' is not known"):
        build("fr")


def test_the_language_check_can_fail():
    """The old stand-in carried both languages: the English-only assertion above rejects it."""
    both = "mask explorer: run this cell for the live controls (遮蔽探索器：运行本单元即可交互)"
    assert _has_cjk(both)
