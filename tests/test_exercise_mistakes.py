"""Checker cases from adversarial rounds: correct-but-different solutions pass, each wrong one is named by its own hint;
dropout in the attention modules read statistically; the transfer exercises (05 padded heads, 07 tiled)."""

import pytest
import torch
import torch.nn.functional as F
from _exercise_solutions import NEG_INF, _triu, dropout
from test_ex01_masks import causal_mask
from test_ex02_softmax import causal_softmax
from test_ex04_causal import CausalAttention
from test_ex05_padding import padded_attention
from test_ex06_data import document_windows
from torch import nn

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- correct-but-different solutions pass, each wrong one is named -----------------------------------


class Flex(nn.Module):
    """Single-head (num_heads=None, notebook 04) or multi-head (05) attention; class attributes choose how.

    place: where dropout acts ("weights", "context", "x", "after" out_proj, "none"); rate: a hard-coded p
    (None: the argument); drop: a factory p -> dropout module; sdpa: F.scaled_dot_product_attention;
    f64: scores and softmax in float64; bias: (query, key, value, out_proj) biases.
    """

    place, rate, drop, sdpa, f64, bias = "weights", None, None, False, False, (False, False, False, True)

    def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
        super().__init__()
        self.nh = num_heads or 1
        self.hd, self.d_out, self.multi = d_out // self.nh, d_out, num_heads is not None
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=b) for b in self.bias[:3])
        if self.multi:
            self.out_proj = nn.Linear(d_out, d_out, bias=self.bias[3])
        self.p = dropout if self.rate is None else self.rate
        self.dropout = self.drop(self.p) if self.drop else nn.Dropout(self.p)

    def forward(self, x):
        b, t, _ = x.shape
        if self.place == "x":
            x = self.dropout(x)
        q, k, v = (
            layer(x).view(b, t, self.nh, self.hd).transpose(1, 2) for layer in (self.W_query, self.W_key, self.W_value)
        )
        if self.sdpa:
            c = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.p if self.training else 0.0)
        else:
            s = q @ k.transpose(-2, -1)
            s = s.double() if self.f64 else s
            s = torch.where(_triu(t, 1), torch.tensor(NEG_INF, dtype=s.dtype), s)  # torch.where, not masked_fill
            w = torch.softmax(s / self.hd**0.5, dim=-1)
            w = self.dropout(w) if self.place == "weights" else w
            c = (w @ v.to(w.dtype)).float()
        c = c.transpose(1, 2).reshape(b, t, self.d_out)
        c = self.dropout(c) if self.place == "context" else c
        if not self.multi:
            return c
        out = self.out_proj(c)
        return self.dropout(out) if self.place == "after" else out


def flex(name="Mine", **attrs):
    return type(name, (Flex,), {k: staticmethod(v) if k == "drop" else v for k, v in attrs.items()})


class NoRescale(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, w):
        return w * (torch.rand_like(w) >= self.p) if self.training else w


class SharedMask(NoRescale):
    """One mask for the whole batch (keepdim over dim 0) or for all heads (dim 1)."""

    dim = 0

    def forward(self, w):
        if not self.training:
            return w
        shape = list(w.shape)
        shape[self.dim] = 1
        return w * (torch.rand(shape) >= self.p) / (1 - self.p)


class SharedHeads(SharedMask):
    dim = 1


def causal_softmax_where(attn_scores, key_padding_mask):
    t = attn_scores.shape[-1]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask[:, None, :]
    scores = torch.where(hidden, torch.full_like(attn_scores, NEG_INF), attn_scores).double()
    weights = torch.softmax(scores, dim=-1)
    return torch.where(hidden.all(-1, keepdim=True), torch.zeros_like(weights), weights).float()


def softmax_zero_padded_queries(attn_scores, key_padding_mask):
    return causal_softmax(attn_scores, key_padding_mask).masked_fill(key_padding_mask[:, :, None], 0.0)


def dropout_bernoulli(x, p, training=True):
    return x * torch.bernoulli(torch.full_like(x, 1 - p)) / (1 - p) if training and p > 0 else x


def dropout_shared_over_batch(x, p, training=True):
    return x * (torch.rand(x.shape[-2:]) >= p) / (1 - p) if training and p > 0 else x


def dropout_nan(x, p, training=True):
    return torch.full_like(x, float("nan")) if training else x


def windows_int32(token_ids, max_length, stride):
    inputs, targets = document_windows(token_ids, max_length, stride)
    return inputs.int(), targets.int()


def embeddings_one_based(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(1, token_ids.shape[-1] + 1))


CORRECT_BUT_DIFFERENT = [
    ("causal_attention", flex(sdpa=True)),
    ("causal_attention", flex(f64=True)),
    ("causal_attention", flex(bias=(True, False, True, True))),  # only some projections with a bias
    ("causal_attention", flex(drop=lambda p: nn.Dropout(p=p))),
    ("multihead", flex(sdpa=True)),
    ("multihead", flex(f64=True)),
    ("multihead", flex(bias=(False, False, False, False))),  # out_proj without bias
    ("multihead", flex(bias=(True, True, True, True))),
    ("multihead", flex(bias=(False, True, False, True))),
    ("causal_softmax", causal_softmax_where),
    ("dropout", dropout_bernoulli),
    ("padded_attention", padded_attention),
]


@pytest.mark.parametrize(
    ("exercise", "obj"), CORRECT_BUT_DIFFERENT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(CORRECT_BUT_DIFFERENT)]
)
def test_correct_but_different_solutions_pass(exercise, obj):
    result = ex.grade(exercise, obj)
    assert result.status == "pass", result.message


ROUND_MISTAKES = [
    # dropout in the attention modules: placement, rate, rescale, independence
    ("causal_attention", flex(place="context"), "dropout_on_output"),
    ("causal_attention", flex(place="x"), "dropout_on_input"),
    ("causal_attention", flex(rate=0.1), "dropout_rate_fixed"),
    ("causal_attention", flex(drop=lambda p: nn.Dropout()), "dropout_default_rate"),
    ("causal_attention", flex(drop=NoRescale), "dropout_not_scaled"),
    ("causal_attention", flex(drop=SharedMask), "dropout_mask_shared"),
    ("causal_attention", flex(place="none"), "dropout_missing"),
    ("multihead", flex(place="context"), "dropout_on_output"),
    ("multihead", flex(place="x"), "dropout_on_input"),
    ("multihead", flex(place="after"), "dropout_after_out_proj"),
    ("multihead", flex(rate=0.5), "dropout_default_rate"),
    ("multihead", flex(rate=0.3), "dropout_rate_fixed"),
    ("multihead", flex(drop=lambda p: nn.Dropout()), "dropout_default_rate"),
    ("multihead", flex(drop=lambda p: nn.Dropout(1 - p)), "dropout_rate_inverted"),
    ("multihead", flex(drop=NoRescale), "dropout_not_scaled"),
    ("multihead", flex(drop=SharedMask), "dropout_mask_shared"),
    ("multihead", flex(drop=SharedHeads), "dropout_mask_shared"),
    # 02: right padding
    ("causal_softmax", softmax_zero_padded_queries, "padded_queries_zeroed"),
    # 03: independence across batch/head dimensions, NaN called NaN
    ("dropout", dropout_shared_over_batch, "dropout_mask_shared"),
    ("dropout", dropout_nan, "nan_output"),
    # misleading hints
    ("input_embeddings", embeddings_one_based, "positions_one_based"),
    ("multihead", flex()(3, 6, 5, 0.0, 2), "instance_not_class"),
    ("causal_attention", CausalAttention(3, 4, 6, 0.0), "instance_not_class"),
    ("causal_mask", causal_mask(4), "not_callable"),
    # 06: int64 asked
    ("document_windows", windows_int32, "ids_not_int64"),
]


@pytest.mark.parametrize(
    ("exercise", "obj", "hint"), ROUND_MISTAKES, ids=[f"{e}-{h}-{i}" for i, (e, _, h) in enumerate(ROUND_MISTAKES)]
)
def test_round_mistake_is_named(exercise, obj, hint):
    result = ex.grade(exercise, obj)
    assert (result.status, result.hint) == ("fail", hint), result.message
    assert "{" not in result.message and result.message.count("\n") == 0


class SeededDropout(NoRescale):
    """A correct dropout drawing from its own stream: the checker's seeds do not decide what it drops."""

    seed = 0

    def forward(self, w):
        if not self.training:
            return w
        g = torch.Generator().manual_seed(self.seed)
        return w * (torch.rand(w.shape, generator=g) >= self.p) / (1 - self.p)


@pytest.mark.parametrize("seed", range(12))
def test_statistical_dropout_checks_pass_any_random_stream(seed):
    """The rate and independence tests hold whatever the draws (false alarm < 1e-6 per test by design)."""
    drop = type("Drop", (SeededDropout,), {"seed": 1000 + seed})
    assert ex.grade("multihead", flex(drop=drop)).passed
    assert ex.grade("causal_attention", flex(drop=drop)).passed

    def my_dropout(x, p, training=True):
        g = torch.Generator().manual_seed(2000 + seed)
        return x * (torch.rand(x.shape, generator=g) >= p) / (1 - p) if training and p > 0 else x

    assert ex.grade("dropout", my_dropout).passed


def test_hard_coded_dropout_rate_is_named_in_the_function_exercise():
    result = ex.grade("dropout", lambda x, p, training=True: dropout(x, 0.5, training))
    assert result.hint == "dropout_rate_wrong" and "p=0.2" in result.message


# ---- transfer exercises: 05 padded multi-head attention, 07 tiled attention ----------------------------------


def padded_factory(pad_axis="keys", zero_rows=True, causal=True, fill=NEG_INF):
    def fn(queries, keys, values, key_padding_mask):
        t = queries.shape[-2]
        pad = {
            "keys": key_padding_mask[:, None, None, :],
            "heads": key_padding_mask[:, None, :],
            "queries": key_padding_mask[:, None, :, None],
            "none": torch.zeros(t, dtype=torch.bool),
        }[pad_axis]
        hidden = (_triu(t, 1) if causal else torch.zeros(t, t, dtype=torch.bool)) | pad
        w = torch.softmax((queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5).masked_fill(hidden, fill), -1)
        return (w.masked_fill(hidden.all(-1, keepdim=True), 0.0) if zero_rows else w) @ values

    return fn


def tiled_factory(rescale=True, subtract_max=True, causal=True, scale=True, last_block=True, sdpa=False):
    def fn(queries, keys, values, block_size):
        if sdpa:
            return F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        t, hs = queries.shape[-2], queries.shape[-1]
        out = torch.zeros_like(values)
        stop = t if last_block else t - block_size + 1
        for qs in range(0, stop, block_size):
            q = queries[:, :, qs : qs + block_size] / (hs**0.5 if scale else 1.0)
            m = torch.full(q.shape[:-1], NEG_INF)
            total, acc = torch.zeros(q.shape[:-1]), torch.zeros(q.shape)
            rows = torch.arange(qs, qs + q.shape[2])[:, None]
            for ks in range(0, t, block_size):
                s = q @ keys[:, :, ks : ks + block_size].transpose(-2, -1)
                if causal:
                    s = s.masked_fill(torch.arange(ks, ks + s.shape[-1]) > rows, NEG_INF)
                new = torch.maximum(m, s.amax(-1))
                new = torch.where(new.isinf(), torch.zeros_like(new), new) if subtract_max else torch.zeros_like(new)
                p = torch.exp(s - new[..., None])
                factor = torch.exp(m - new) if rescale and subtract_max else torch.ones_like(new)
                factor = torch.where(m.isinf() & (total == 0), torch.zeros_like(factor), factor)
                total = total * factor + p.sum(-1)
                acc = acc * factor[..., None] + p @ values[:, :, ks : ks + block_size]
                m = new if subtract_max else torch.maximum(m, s.amax(-1))
            out[:, :, qs : qs + block_size] = acc / total[..., None]
        return out

    return fn


TRANSFER_MISTAKES = [
    ("padded_attention", padded_factory(zero_rows=False), "nan_rows"),
    ("padded_attention", padded_factory(pad_axis="none"), "padding_ignored"),
    ("padded_attention", padded_factory(pad_axis="heads"), "padding_heads_axis"),
    ("padded_attention", padded_factory(pad_axis="queries"), "padding_wrong_axis"),
    ("padded_attention", padded_factory(causal=False), "future_open"),
    ("padded_attention", padded_factory(fill=-1e9, zero_rows=False), "fully_masked_not_zero"),
    ("tiled_attention", tiled_factory(sdpa=True), "uses_sdpa"),
    ("tiled_attention", tiled_factory(rescale=False), "rescale_missing"),
    ("tiled_attention", tiled_factory(subtract_max=False), "max_not_subtracted"),
    ("tiled_attention", tiled_factory(causal=False), "future_open"),
    ("tiled_attention", tiled_factory(scale=False), "scale_missing"),
    ("tiled_attention", tiled_factory(last_block=False), "partial_block"),
]


@pytest.mark.parametrize(
    ("exercise", "fn", "hint"), TRANSFER_MISTAKES, ids=[f"{e}-{h}" for e, _, h in TRANSFER_MISTAKES]
)
def test_transfer_mistake_is_named(exercise, fn, hint):
    result = ex.grade(exercise, fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    ex.set_language("zh")
    assert ex.evaluate(exercise, fn).hint == hint


def test_tiled_attention_variants_of_the_checker_are_right_when_unplanted():
    """The checker's own blocked reference (all mistakes off) equals SDPA: its wrong variants are honest."""
    from llm_lab.exercises._ex07_tiled import tiled

    q, k, v = (torch.randn(2, 3, 10, 4) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(tiled(q, k, v, 4), want, atol=1e-6)
    assert torch.allclose(tiled_factory()(q, k, v, 3), want, atol=1e-6)


def test_verdicts_survive_float_noise_of_another_device():
    """Under tools/release/float_nudge.py (every float32 matmul/softmax/sum result moved by 1e-6 relative, as another
    device or library would) correct solutions still pass and the dropout probe still reads its placement."""
    from tools.release import float_nudge

    with float_nudge.FloatNudge():
        for exercise, obj in CORRECT_BUT_DIFFERENT:
            assert ex.grade(exercise, obj).passed, (exercise, ex.grade(exercise, obj).message)
        assert ex.grade("multihead", flex(place="context")).hint == "dropout_on_output"
        assert ex.grade("multihead", flex(place="after")).hint == "dropout_after_out_proj"
