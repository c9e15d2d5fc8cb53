"""llm_lab.explore.plotting's pictures of the mechanism: the tensors of CausalAttention.forward (04), the head split
and merge (05), blocked attention's tiles (07), the induction circuit (08)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from llm_lab.explore.circuit_diagram import induction_circuit_diagram
from llm_lab.explore.plotting import causal_attention_shapes, head_split_diagram, tile_diagram


def test_tile_diagram_skips_the_tiles_wholly_in_the_future():
    ax = tile_diagram(num_tokens=16, block_size=4)
    assert ax.get_title() == "T=16, block_size=4: 10 of 16 tiles"
    image = np.asarray(ax.get_images()[0].get_array())
    white = (image == 1.0).all(axis=-1)  # a skipped tile's cells
    rows, cols = np.indices(white.shape)
    assert np.array_equal(white, cols // 4 > rows // 4)
    assert sum(t.get_text() == "×" for t in ax.texts) == 6
    plt.close("all")


def test_tile_diagram_with_a_shorter_last_block():
    ax = tile_diagram(num_tokens=10, block_size=4)
    assert ax.get_title() == "T=10, block_size=4: 6 of 9 tiles"
    plt.close("all")


def test_head_split_diagram_colours_each_feature_by_its_head():
    ax = head_split_diagram(num_tokens=3, d_out=6, num_heads=3)
    labels = {t.get_text() for t in ax.texts}
    assert {"h=0", "h=1", "h=2", "out_proj"} <= labels
    plt.close("all")


def test_head_split_diagram_names_the_merge_as_the_lesson_codes_it():
    """Notebook 05's module merges with `.contiguous().view(...)`; the diagram's merge arrow says the same."""
    ax = head_split_diagram()
    labels = {t.get_text() for t in ax.texts}
    assert ".transpose(0, 1)\n.contiguous()\n.view(T, d_out)" in labels
    assert not any("reshape" in label for label in labels)
    plt.close("all")


def test_causal_attention_shapes_names_every_tensor_with_its_shape():
    ax = causal_attention_shapes(batch_size=2, num_tokens=5, d_in=4, d_out=3)
    texts = [t.get_text() for t in ax.texts]
    for name in ("x", "queries", "keys", "values", "attn_weights", "context_vec"):
        assert name in texts, name
    assert texts.count("attn_scores") == 2  # before and after masked_fill
    assert "(B, T, d_in)\n(2, 5, 4)" in texts and "(B, T, d_out)\n(2, 5, 3)" in texts
    assert texts.count("(B, T, T)\n(2, 5, 5)") == 3
    assert texts.count("×") == 5 * 4 // 2  # the future of the masked scores: above the diagonal of 5 x 5
    assert ax.get_title(loc="left").endswith("B = 2, T = num_tokens = 5, d_in = 4, d_out = 3")
    plt.close("all")


@pytest.mark.parametrize(
    "kwargs, match", [({"d_out": 5, "num_heads": 2}, "divisible"), ({"num_tokens": 0}, "positive")]
)
def test_diagrams_reject_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        head_split_diagram(**kwargs)
    with pytest.raises(ValueError, match="positive"):
        tile_diagram(block_size=0)
    with pytest.raises(ValueError, match="d_out must be a positive int, got 0"):
        causal_attention_shapes(d_out=0)


def test_induction_circuit_diagram_draws_both_steps_and_the_copied_token():
    """The row ... A B ... A, the layer-0 step (B reads A), the layer-1 step (the query at the last A), the
    prediction B; in Chinese the same steps with the layers numbered 第 N 层."""
    ax = induction_circuit_diagram()
    texts = [t.get_text() for t in ax.texts]
    assert texts[:6] == ["…", "A", "B", "…", "A", "B"]
    joined = " ".join(texts)
    for words in ("layer 0, previous-token head", "the token before me was A", "layer 1, induction head", "copies B"):
        assert words in joined, words
    assert len(ax.patches) + len(ax.texts) > 6 and ax.get_title() == "two layers copy: … A B … A → B"
    zh = " ".join(t.get_text() for t in induction_circuit_diagram(lang="zh").texts)
    assert "第 0 层" in zh and "第 1 层" in zh and "layer" not in zh
    plt.close("all")
