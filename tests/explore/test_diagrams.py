"""llm_lab.explore.plotting's pictures of the mechanism: the head split and merge (05), blocked attention's tiles
(07)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from llm_lab.explore.plotting import head_split_diagram, tile_diagram


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


@pytest.mark.parametrize(
    "kwargs, match", [({"d_out": 5, "num_heads": 2}, "divisible"), ({"num_tokens": 0}, "positive")]
)
def test_diagrams_reject_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        head_split_diagram(**kwargs)
    with pytest.raises(ValueError, match="positive"):
        tile_diagram(block_size=0)
