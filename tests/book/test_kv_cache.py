"""llm_lab.kv_cache: decoding token by token from cached keys and values equals full causal attention."""

import pytest
import torch
import torch.nn.functional as F

from llm_lab import MultiHeadAttention, causal_mask
from llm_lab.kv_cache import KVCache, cache_bytes_per_token, cached_attention, causal_mask_bottom_right, decode_step


@pytest.fixture
def mha():
    torch.manual_seed(0)
    return MultiHeadAttention(d_in=8, d_out=12, context_length=10, dropout=0.0, num_heads=3).eval()


def test_bottom_right_mask_values():
    assert torch.equal(causal_mask_bottom_right(5, 5), causal_mask(5))
    assert not causal_mask_bottom_right(1, 7).any()  # the newest query sees every key
    assert causal_mask_bottom_right(2, 4).tolist() == [[False, False, False, True], [False, False, False, False]]
    with pytest.raises(ValueError, match="q_len=3 new queries need at least as many keys"):
        causal_mask_bottom_right(3, 2)


@pytest.mark.parametrize("chunks", [[1] * 7, [3, 1, 1, 2], [7]])
def test_decoding_in_chunks_equals_the_full_sequence(mha, chunks):
    torch.manual_seed(1)
    x = torch.randn(2, sum(chunks), 8)
    cache, outs, start = KVCache(), [], 0
    with torch.no_grad():
        for n in chunks:
            outs.append(decode_step(mha, x[:, start : start + n], cache))
            start += n
        full = mha(x)
    torch.testing.assert_close(torch.cat(outs, dim=1), full, atol=1e-6, rtol=1e-5)
    assert len(cache) == 7 and cache.keys.shape == (2, 3, 7, 4)
    assert cache.nbytes() == 2 * 2 * 3 * 7 * 4 * 4


def test_is_causal_aligns_top_left_so_one_query_sees_only_key_0():
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 2, 1, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    trap = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(trap, v[:, :, :1])  # all the weight on key 0
    right = cached_attention(q, k, v)
    torch.testing.assert_close(right, F.scaled_dot_product_attention(q, k, v))  # one query: nothing to hide


def test_cache_bytes_for_gpt2_small():
    assert cache_bytes_per_token(12, 12, 64) == 73_728  # 2 x 12 layers x 12 heads x 64 x 4 bytes
    assert cache_bytes_per_token(12, 12, 64, torch.float16) == 36_864
    with pytest.raises(TypeError, match="torch.dtype"):
        cache_bytes_per_token(12, 12, 64, "float16")


def test_bad_input_is_named(mha):
    cache = KVCache()
    with torch.no_grad():
        decode_step(mha, torch.randn(1, 9, 8), cache)
        with pytest.raises(ValueError, match="9 cached \\+ 2 new tokens exceed context_length=10"):
            decode_step(mha, torch.randn(1, 2, 8), cache)
        with pytest.raises(ValueError, match="do not fit the cache"):
            cache.append(torch.randn(2, 3, 1, 4), torch.randn(2, 3, 1, 4))
    with pytest.raises(TypeError, match="llm_lab.MultiHeadAttention"):
        decode_step(torch.nn.Linear(8, 8), torch.randn(1, 1, 8), KVCache())
