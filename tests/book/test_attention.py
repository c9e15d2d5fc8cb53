import pytest
import torch

from llm_lab import (
    CausalAttention,
    FusedMultiHeadAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention,
    causal_mask,
)


def test_self_attention_accepts_2d_and_3d(inputs):
    torch.manual_seed(789)
    sa = SelfAttention(3, 2)
    single = sa(inputs)
    batched = sa(torch.stack((inputs, inputs)))
    assert single.shape == (6, 2) and batched.shape == (2, 6, 2)
    assert torch.allclose(batched[1], single)


def test_causal_attention_book_shape_and_causality(inputs):
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, context_length=6, dropout=0.0)
    batch = torch.stack((inputs, inputs))
    out, w = ca(batch, return_attn_weights=True)
    assert out.shape == (2, 6, 2) and w.shape == (2, 6, 6)
    assert torch.all(w[:, causal_mask(6)] == 0)
    # changing a later token never changes an earlier output
    changed = batch.clone()
    changed[:, 4:] += 10.0
    assert torch.allclose(ca(changed)[:, :4], out[:, :4])
    assert not torch.allclose(ca(changed)[:, 4:], out[:, 4:])


def test_causal_attention_shorter_input_uses_top_left_of_mask(inputs):
    torch.manual_seed(0)
    ca = CausalAttention(3, 4, context_length=10, dropout=0.0)
    assert ca(inputs[None, :3]).shape == (1, 3, 4)


def test_mask_is_a_buffer_that_moves_and_is_saved():
    ca = CausalAttention(3, 2, context_length=5, dropout=0.0)
    assert "mask" in ca.state_dict() and "mask" not in dict(ca.named_parameters())
    moved = ca.to(torch.float64)
    assert moved.W_query.weight.dtype == torch.float64 and moved.mask.dtype == torch.bool
    mha = MultiHeadAttention(4, 4, 5, 0.0, num_heads=2)
    assert sorted(mha.state_dict()) == sorted(
        ["W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias", "mask"]
    )


@pytest.mark.parametrize(
    "cls", [CausalAttention, MultiHeadAttention, FusedMultiHeadAttention, MultiHeadAttentionWrapper]
)
def test_too_many_tokens_names_both_numbers(cls):
    layer = cls(4, 4, 5, 0.0, 2) if cls is not CausalAttention else cls(4, 4, 5, 0.0)
    with pytest.raises(ValueError, match="num_tokens=7 exceeds context_length=5"):
        layer(torch.zeros(1, 7, 4))


@pytest.mark.parametrize("cls", [CausalAttention, MultiHeadAttention, FusedMultiHeadAttention])
def test_bad_input_shapes(cls):
    layer = cls(4, 4, 5, 0.0, 2) if cls is not CausalAttention else cls(4, 4, 5, 0.0)
    expected = r"expected input of shape \(batch, num_tokens, d_in=4\), got 2-D shape \(5, 4\)"
    with pytest.raises(ValueError, match=expected):
        layer(torch.zeros(5, 4))
    with pytest.raises(ValueError, match=r"input last dimension is 3 but this layer was built with d_in=4"):
        layer(torch.zeros(1, 5, 3))
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        layer([[0.0]])


def test_self_attention_bad_input():
    with pytest.raises(ValueError, match=r"d_in=3.*got \(2, 6, 4\)"):
        SelfAttention(3, 2)(torch.zeros(2, 6, 4))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_dropout_outside_range(p):
    with pytest.raises(ValueError, match=rf"dropout must be in \[0, 1\), got {p}"):
        CausalAttention(3, 2, 6, p)
    with pytest.raises(ValueError, match=rf"dropout must be in \[0, 1\), got {p}"):
        MultiHeadAttention(4, 4, 6, p, num_heads=2)


def test_dropout_type():
    with pytest.raises(TypeError, match="dropout must be a float in"):
        CausalAttention(3, 2, 6, "0.1")


@pytest.mark.parametrize("args", [(0, 2, 6), (3, -1, 6), (3, 2, 0)])
def test_non_positive_sizes(args):
    with pytest.raises(ValueError, match="must be a positive int"):
        CausalAttention(*args, 0.0)


def test_dropout_scales_kept_weights_by_one_over_one_minus_p(inputs):
    p = 0.2
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, p)
    batch = torch.stack((inputs,) * 8)
    ca.eval()
    _, clean = ca(batch, return_attn_weights=True)
    ca.train()
    torch.manual_seed(0)
    _, dropped = ca(batch, return_attn_weights=True)
    kept = dropped != 0
    assert 0 < kept.sum() < (clean != 0).sum()  # something was dropped, something kept
    assert torch.allclose(dropped[kept], clean[kept] / (1 - p))  # 1/(1-p) = 1.25, not 1/p = 5
    assert not torch.allclose(dropped.sum(-1), torch.ones(8, 6))  # rows no longer sum to 1 in training
    ca.eval()
    assert torch.equal(ca(batch, return_attn_weights=True)[1], clean)  # eval(): dropout does nothing


@pytest.mark.parametrize("cls", [CausalAttention, MultiHeadAttention, FusedMultiHeadAttention])
def test_dtype_and_token_id_mistakes_are_named(cls):
    layer = cls(4, 4, 5, 0.0, 2) if cls is not CausalAttention else cls(4, 4, 5, 0.0)
    with pytest.raises(TypeError, match=r"input dtype torch.float64 does not match the layer's torch.float32"):
        layer(torch.zeros(1, 3, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"got dtype torch.int64; token ids must go through an nn.Embedding"):
        layer(torch.zeros(1, 3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"input has no tokens \(shape \(1, 0, 4\)\)"):
        layer(torch.zeros(1, 0, 4))
    out = layer.to(torch.float64)(torch.zeros(1, 3, 4, dtype=torch.float64))  # converting the layer works
    assert out.dtype == torch.float64


def test_self_attention_dtype_mismatch():
    with pytest.raises(TypeError, match="does not match the layer's"):
        SelfAttention(3, 2)(torch.zeros(6, 3, dtype=torch.float64))


def test_flags_must_be_bools():
    with pytest.raises(TypeError, match=r"qkv_bias must be True or False, got 'False' \(str\)"):
        CausalAttention(3, 2, 6, 0.0, qkv_bias="False")
    with pytest.raises(TypeError, match="qkv_bias must be True or False"):
        MultiHeadAttention(4, 4, 6, 0.0, num_heads=2, qkv_bias=None)
    layer = MultiHeadAttention(4, 4, 6, 0.0, num_heads=2)
    with pytest.raises(TypeError, match=r"return_attn_weights must be True or False, got 'no'"):
        layer(torch.zeros(1, 3, 4), return_attn_weights="no")


@pytest.mark.parametrize("p,why", [(-0.1, "cannot be negative or nan"), (float("nan"), "cannot be negative or nan")])
def test_dropout_message_fits_the_value(p, why):
    with pytest.raises(ValueError, match=why):
        CausalAttention(3, 2, 6, p)
