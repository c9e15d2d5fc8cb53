import math

import pytest
import torch
import torch.nn.functional as F

from llm_lab import SelfAttention, causal_mask, causal_softmax, mask_and_renormalize


def test_causal_mask_hides_strictly_the_future():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert torch.equal(m, torch.tensor([[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]], dtype=torch.bool))


@pytest.mark.parametrize("bad", [0, -3])
def test_causal_mask_rejects_non_positive(bad):
    with pytest.raises(ValueError, match=f"num_tokens must be a positive int, got {bad}"):
        causal_mask(bad)


def test_causal_mask_rejects_float():
    with pytest.raises(TypeError, match="num_tokens must be a positive int, got 2.5"):
        causal_mask(2.5)


def test_book_numbers(inputs):
    torch.manual_seed(789)
    sa = SelfAttention(3, 2)
    with torch.no_grad():
        _, weights = sa(inputs, return_attn_weights=True)
    first = torch.tensor([0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510])
    assert torch.allclose(weights[0], first, atol=5e-5)
    renorm = mask_and_renormalize(weights)
    assert torch.allclose(renorm[1, :2], torch.tensor([0.5517, 0.4483]), atol=5e-5)
    assert torch.allclose(renorm[1, 2:], torch.zeros(4))


def _three_ways(scores):
    d_k = 16
    scaled = scores / math.sqrt(d_k)
    manual = mask_and_renormalize(torch.softmax(scaled, dim=-1))
    neg_inf = causal_softmax(scaled)
    return manual, neg_inf


def test_manual_neg_inf_and_sdpa_agree():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 16) for _ in range(3))
    scores = q @ k.transpose(-2, -1)
    manual, neg_inf = _three_ways(scores)
    assert torch.allclose(manual, neg_inf, atol=1e-6)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(neg_inf @ v, sdpa, atol=1e-5)
    assert torch.allclose(manual @ v, sdpa, atol=1e-5)


def test_rows_sum_to_one_and_future_is_zero():
    torch.manual_seed(1)
    w = causal_softmax(torch.randn(5, 5))
    assert torch.allclose(w.sum(-1), torch.ones(5))
    assert torch.all(w[causal_mask(5)] == 0)


def test_fully_masked_row_gives_zeros_not_nan():
    torch.manual_seed(2)
    scores = torch.randn(2, 4, 4)
    # batch 1: keys 0 and 1 are padding, so query 0 and query 1 see nothing at all
    pad = torch.tensor([[False, False, False, False], [True, True, False, False]])
    w = causal_softmax(scores, key_padding_mask=pad)  # pad (B, T) broadcasts over the query rows
    assert not torch.isnan(w).any()
    assert torch.equal(w[1, 0], torch.zeros(4)) and torch.equal(w[1, 1], torch.zeros(4))
    assert torch.allclose(w[1, 2:].sum(-1), torch.ones(2))
    assert torch.all(w[1, :, :2] == 0)
    # batch 0 is unaffected by the other row's padding
    assert torch.allclose(w[0], causal_softmax(scores[0]))


def test_fully_masked_row_gradient_is_finite():
    scores = torch.randn(3, 3, requires_grad=True)
    w = causal_softmax(scores, key_padding_mask=torch.tensor([True, False, False]))
    (w.sum() + (w * torch.arange(9.0).view(3, 3)).sum()).backward()
    assert torch.isfinite(scores.grad).all()


def test_padding_mask_errors():
    with pytest.raises(TypeError, match="bool tensor"):
        causal_softmax(torch.zeros(3, 3), key_padding_mask=torch.zeros(3))
    with pytest.raises(ValueError, match=r"needs a last dimension of 3 keys \(key_padding_mask shape \(4,\)"):
        causal_softmax(torch.zeros(3, 3), key_padding_mask=torch.zeros(4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"for \(B, nh, T, T\) scores pass mask\[:, None, :\]"):
        causal_softmax(torch.zeros(2, 2, 3, 3), key_padding_mask=torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"leading dimensions must broadcast to \(2,\)"):
        causal_softmax(torch.zeros(2, 3, 3), key_padding_mask=torch.zeros(5, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="needs a last dimension of 3 keys"):
        causal_softmax(torch.zeros(3, 3), key_padding_mask=torch.tensor(True))


def test_padding_mask_per_head_layout():
    torch.manual_seed(3)
    scores = torch.randn(2, 2, 3, 3)  # (B, nh, T, T) with B == nh: a (B, T) mask would be ambiguous
    pad = torch.tensor([[False, False, False], [False, False, True]])
    w = causal_softmax(scores, key_padding_mask=pad[:, None, :])
    assert w.shape == scores.shape
    assert torch.all(w[1, :, :, 2] == 0) and torch.all(w[0, :, 2, 2] > 0)


def test_non_float_and_empty_scores():
    with pytest.raises(TypeError, match="attn_scores must be a floating-point tensor, got dtype torch.int64"):
        causal_softmax(torch.zeros(3, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"attn_scores has no tokens \(shape \(0, 0\)\)"):
        causal_softmax(torch.ones(0, 0))


def test_manual_route_underflow_is_reported_not_nan():
    weights = torch.softmax(torch.tensor([[-1000.0, 0.0], [0.0, 0.0]]), dim=-1)  # row 0: visible weight is 0
    with pytest.raises(ValueError, match=r"rows \[\[0\]\].*no visible weight left.*causal_softmax"):
        mask_and_renormalize(weights)
    # the -inf route gets it right: the only visible key takes all the weight
    assert torch.equal(causal_softmax(torch.tensor([[-1000.0, 0.0], [0.0, 0.0]]))[0], torch.tensor([1.0, 0.0]))


def test_bad_device_name():
    with pytest.raises(ValueError, match="device must be a torch.device or a name like 'cpu'"):
        causal_mask(3, device="nope")


@pytest.mark.parametrize("fn", [mask_and_renormalize, causal_softmax])
def test_non_square_scores_rejected(fn):
    with pytest.raises(ValueError, match=r"\(\.\.\., num_tokens, num_tokens\), got \(3, 4\)"):
        fn(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="must be a torch.Tensor, got list"):
        fn([[1.0]])
