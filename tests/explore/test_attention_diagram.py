"""llm_lab.explore.plotting.attention_diagram: the attention of one query (notebook 00)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from llm_lab.explore.plotting import attention_diagram  # noqa: E402

LABELS = ["Your", "journey", "starts", "with", "one", "step"]


def one_query(query=3):
    torch.manual_seed(0)
    scores = torch.randn(6)  # the future is hidden by the diagram (causal=True)
    weights = torch.softmax(scores.masked_fill(torch.arange(6) > query, float("-inf")), dim=0)
    return scores, weights, torch.randn(6, 2)


def test_shows_scores_weights_values_and_their_weighted_average():
    scores, weights, values = one_query(3)
    ax = attention_diagram(scores, weights, values, LABELS, query=3)
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("$-\\infty$") == 2  # keys 4 and 5 are hidden
    assert f"{scores[0]:.2f}" in texts and f"{weights[2]:.2f}" in texts
    context = weights @ values
    assert any(t.endswith(f"({context[0]:.2f}, {context[1]:.2f})") for t in texts)  # context_vec = sum_j w_j v_j
    assert "queries[3]" in texts and "context_vec[3]" in texts
    bars = [p.get_width() for p in ax.patches]
    assert bars == pytest.approx((1.2 * weights).tolist())  # one bar per key, as long as its weight
    assert sum(line.get_linestyle() == "--" for line in ax.lines) == 2  # the hidden keys' dashed lines
    arrows = [c for c in ax.texts if getattr(c, "arrow_patch", None) is not None]
    assert len(arrows) == 4  # only the visible values flow into the sum
    plt.close("all")


def test_text_needs_no_font_beyond_matplotlibs(recwarn):
    scores, weights, values = one_query(5)
    ax = attention_diagram(scores, weights, values, LABELS, query=5)
    ax.figure.canvas.draw()  # a missing glyph would warn here
    assert not [w for w in recwarn if "Glyph" in str(w.message)]
    plt.close("all")


def test_rejects_mismatched_inputs():
    scores, weights, values = one_query()
    with pytest.raises(ValueError, match="5 labels"):
        attention_diagram(scores, weights, values, LABELS[:5], query=1)
    with pytest.raises(ValueError, match="query=6"):
        attention_diagram(scores, weights, values, LABELS, query=6)
    plt.close("all")


def test_without_the_causal_mask_every_key_is_visible():
    scores, _, values = one_query(2)
    weights = torch.softmax(scores, dim=0)
    ax = attention_diagram(scores, weights, values, LABELS, query=2, causal=False)
    assert "$-\\infty$" not in [t.get_text() for t in ax.texts]
    assert not any(line.get_linestyle() == "--" for line in ax.lines)
    plt.close("all")
