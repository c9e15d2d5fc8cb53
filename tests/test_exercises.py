"""The exercise checkers: reference solutions pass, stubs are 'not implemented', planted mistakes are named."""

import pytest
import torch
import torch.nn.functional as F
from test_ex00_window import PLANTED as NOTEBOOK_00_PLANTED  # notebook 00's planted mistakes live with its tests
from test_induction import SOLUTIONS as NOTEBOOK_08_SOLUTIONS  # notebook 08's solutions live with its tests
from torch import nn

import llm_lab
from llm_lab import exercises as ex
from llm_lab.exercises import _messages

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- correct solutions -------------------------------------------------------------------------------------


def causal_mask(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


def renormalize(attn_weights):
    t = attn_weights.shape[-1]
    masked = attn_weights * torch.tril(torch.ones(t, t))
    return masked / masked.sum(dim=-1, keepdim=True)


def window_weights(attn_scores, window):
    weights = torch.zeros_like(attn_scores)
    for i in range(attn_scores.shape[-1]):
        start = max(0, i - window + 1)
        weights[i, start : i + 1] = torch.softmax(attn_scores[i, start : i + 1], dim=0)
    return weights


def attention_weights(queries, keys):
    scores = queries @ keys.transpose(-2, -1)
    t = scores.shape[-1]
    scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), NEG_INF)
    return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)


def causal_softmax(attn_scores, key_padding_mask):
    t = attn_scores.shape[-1]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask.unsqueeze(-2)
    weights = torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)
    return weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)


def dropout(x, p, training=True):
    if not training or p == 0:
        return x
    keep = torch.rand_like(x) >= p
    return x * keep / (1 - p)


def split_heads(x, num_heads):  # the exercise asks for reshape and permute, not the lesson's view/transpose
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads).permute(0, 2, 1, 3)


def merge_heads(context_vec):
    return context_vec.permute(0, 2, 1, 3).flatten(start_dim=2)


def windows(token_ids, max_length, stride):  # the exercise asks for unfold, no loop
    w = torch.tensor(token_ids, dtype=torch.long).unfold(0, max_length + 1, stride)
    return w[:, :-1], w[:, 1:]


def input_embeddings(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(token_ids.shape[-1]))


def padded_attention(queries, keys, values, key_padding_mask):
    t = queries.shape[-2]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), 1) | key_padding_mask[:, None, None, :]
    scores = (queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5).masked_fill(hidden, NEG_INF)
    weights = torch.softmax(scores, dim=-1).masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)
    return weights @ values


def tiled_attention(queries, keys, values, block_size):
    t, hs = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for qs in range(0, t, block_size):
        q = queries[:, :, qs : qs + block_size] / hs**0.5
        running_max = torch.full(q.shape[:-1], NEG_INF)
        running_sum = torch.zeros(q.shape[:-1])
        acc = torch.zeros(q.shape)
        rows = torch.arange(qs, qs + q.shape[2])[:, None]
        for ks in range(0, qs + q.shape[2], block_size):  # blocks wholly in the future are skipped
            s = q @ keys[:, :, ks : ks + block_size].transpose(-2, -1)
            s = s.masked_fill(torch.arange(ks, ks + s.shape[-1]) > rows, NEG_INF)
            new_max = torch.maximum(running_max, s.amax(-1))
            p = torch.exp(s - new_max[..., None])
            factor = torch.exp(running_max - new_max)
            running_sum = running_sum * factor + p.sum(-1)
            acc = acc * factor[..., None] + p @ values[:, :, ks : ks + block_size]
            running_max = new_max
        out[:, :, qs : qs + block_size] = acc / running_sum[..., None]
    return out


class AdditiveAttention(nn.Module):
    """04 exercise 2: the causal mask stored as an additive float buffer (0 / -inf) and added to the scores."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), NEG_INF), diagonal=1))

    def forward(self, x):
        num_tokens = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2) + self.mask[:num_tokens, :num_tokens]
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return attn_weights @ values


class CausalAttention(nn.Module):
    """A configurable single head; each flag plants one mistake."""

    mistake = None

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout
        self.context_length = context_length
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        m = self.mistake
        b, num_tokens, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        n = self.context_length if m == "mask_wrong_size" else num_tokens
        mask = self.mask.bool()[:n, :n]
        if m == "diagonal_masked":
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool))
        if m != "future_open":
            attn_scores = attn_scores.masked_fill(mask, NEG_INF)
        d_k = keys.shape[-1]
        scale = {"scale_missing": 1.0, "scale_twice": d_k}.get(m, d_k**0.5)
        attn_weights = torch.softmax(attn_scores / scale, dim=1 if m == "softmax_dim" else -1)
        if m == "dropout_in_eval":
            attn_weights = F.dropout(attn_weights, self.p)
        elif m != "dropout_missing":
            attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class FusedQKV(nn.Module):
    """One (d_in, 3 * d_out) projection instead of the book's three: the checker cannot find W_query."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.qkv = nn.Linear(d_in, 3 * d_out)

    def forward(self, x):
        return self.qkv(x)


def with_mistake(base, mistake):
    return type(base.__name__, (base,), {"mistake": mistake})


class MultiHeadAttention(nn.Module):
    mistake = None

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        if self.mistake != "no_out_proj_attribute":
            self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.context_length = context_length
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def _split(self, t, b, n):
        if self.mistake == "view_without_transpose":
            return t.view(b, self.num_heads, n, self.head_dim)
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        m = self.mistake
        b, n, _ = x.shape
        q, k, v = (self._split(layer(x), b, n) for layer in (self.W_query, self.W_key, self.W_value))
        attn_scores = q @ k.transpose(2, 3)
        size = self.context_length if m == "mask_wrong_size" else n
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:size, :size], NEG_INF)
        scale = self.d_out if m == "scale_uses_d_out" else self.head_dim
        attn_weights = self.dropout(torch.softmax(attn_scores / scale**0.5, dim=-1))
        context_vec = attn_weights @ v
        if m == "view_without_transpose":
            context_vec = context_vec.contiguous().view(b, n, self.d_out)
        else:
            context_vec = context_vec.transpose(1, 2).contiguous().view(b, n, self.d_out)
        if m in ("out_proj_missing", "no_out_proj_attribute"):
            return context_vec
        return self.out_proj(context_vec)


SOLUTIONS = {
    "window_weights": window_weights,
    "causal_mask": causal_mask,
    "renormalize": renormalize,
    "attention_weights": attention_weights,
    "causal_softmax": causal_softmax,
    "dropout": dropout,
    "additive_attention": AdditiveAttention,
    "causal_attention": CausalAttention,
    "split_heads": split_heads,
    "merge_heads": merge_heads,
    "multihead": MultiHeadAttention,
    "windows": windows,
    "input_embeddings": input_embeddings,
    "padded_attention": padded_attention,
    "tiled_attention": tiled_attention,
    **NOTEBOOK_08_SOLUTIONS,
}
REFERENCES = {
    "causal_mask": llm_lab.causal_mask,
    "renormalize": llm_lab.mask_and_renormalize,
    "causal_attention": llm_lab.CausalAttention,
    "multihead": llm_lab.MultiHeadAttention,
}
CHECKERS = {name: getattr(ex, f"check_{name}") for name in ex.EXERCISES}


def test_every_exercise_has_a_solution_here():
    assert set(SOLUTIONS) == set(ex.EXERCISES) == set(CHECKERS)


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_correct_solutions_pass(name, capsys):
    exercise, obj = name, SOLUTIONS[name]
    result = ex.evaluate(exercise, obj)
    assert result.status == "pass", result.message
    assert result.hint == "passed"
    assert CHECKERS[exercise](obj) is None
    out = capsys.readouterr().out
    assert out.startswith("✅ ") and out.count("\n") == 1, out


def test_checkers_leave_the_global_random_stream_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    ex.evaluate("dropout", dropout)
    ex.evaluate("causal_attention", CausalAttention)
    assert torch.equal(torch.rand(3), expected)


def test_passing_output_is_deterministic():
    assert ex.evaluate("multihead", MultiHeadAttention) == ex.evaluate("multihead", MultiHeadAttention)


# ---- not implemented ---------------------------------------------------------------------------------------


def stub(*args, **kwargs):
    raise NotImplementedError()


class StubModule(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError()


class HalfStubModule(nn.Module):
    """__init__ done, forward still the stub (nn.Module without forward raises NotImplementedError too)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)


@pytest.mark.parametrize("exercise", ex.EXERCISES)
def test_stub_is_not_implemented(exercise, capsys):
    obj = StubModule if ex.REGISTRY[exercise].takes == "class" else stub
    result = ex.evaluate(exercise, obj)
    assert (result.status, result.hint) == ("todo", "not_implemented")
    CHECKERS[exercise](obj)
    assert capsys.readouterr().out.startswith("🚧 ")


@pytest.mark.parametrize("exercise", ["additive_attention", "causal_attention", "multihead"])
def test_module_without_forward_is_not_implemented(exercise):
    assert ex.evaluate(exercise, HalfStubModule).status == "todo"


# ---- planted mistakes --------------------------------------------------------------------------------------


def _triu(t, d):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), d)


def mask_diag(n):
    return _triu(n, 0)


def mask_keep(n):
    return torch.tril(torch.ones(n, n))  # the book's keep-mask: visible positions, float


def mask_past(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool), -1)


def mask_float(n):
    return torch.triu(torch.ones(n, n), 1)


def mask_open(n):
    return torch.zeros(n, n, dtype=torch.bool)


def renorm_columns(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    return masked / masked.sum(dim=-2, keepdim=True)


def renorm_none(w):
    return w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))


def renorm_dim1(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    return masked / masked.sum(dim=1, keepdim=True)


def renorm_diag(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]), -1)
    return masked / masked.sum(dim=-1, keepdim=True)


def renorm_total(w):
    masked = w * torch.tril(torch.ones(w.shape[-1], w.shape[-1]))
    return masked / masked.sum()


def renorm_shape0(w):
    t = w.shape[0]
    masked = w * torch.tril(torch.ones(t, t))
    return masked / masked.sum(dim=-1, keepdim=True)


def weights_factory(scale="ok", dim=-1, mask="ok", fill=NEG_INF, keys_t=False):
    def fn(queries, keys):
        kt = keys.T if keys_t else keys.transpose(-2, -1)
        s = queries @ kt
        t, d = s.shape[-1], keys.shape[-1]
        s = {"ok": s / d**0.5, "none": s, "twice": s / d, "T": s / t**0.5, "inverted": s * d**0.5}[scale]
        hide = {"ok": _triu(t, 1), "diag": _triu(t, 0)}.get(mask)
        if hide is not None:
            s = s.masked_fill(hide, fill)
        return torch.softmax(s, dim=dim)

    return fn


def weights_masked_after_softmax(queries, keys):
    w = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)
    return w.masked_fill(_triu(w.shape[-1], 1), 0.0)


def softmax_nan(attn_scores, key_padding_mask):
    hidden = _triu(attn_scores.shape[-1], 1) | key_padding_mask.unsqueeze(-2)
    return torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)


def softmax_big_negative(attn_scores, key_padding_mask):
    hidden = _triu(attn_scores.shape[-1], 1) | key_padding_mask.unsqueeze(-2)
    return torch.softmax(attn_scores.masked_fill(hidden, -1e9), dim=-1)


def softmax_no_padding(attn_scores, key_padding_mask):
    return torch.softmax(attn_scores.masked_fill(_triu(attn_scores.shape[-1], 1), NEG_INF), dim=-1)


def softmax_rows(attn_scores, key_padding_mask):
    hidden = _triu(attn_scores.shape[-1], 1) | key_padding_mask.unsqueeze(-1)
    weights = torch.softmax(attn_scores.masked_fill(hidden, NEG_INF), dim=-1)
    return weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)


def dropout_factory(scale="ok", eval_off=True, keep_if_below_p=False):
    def fn(x, p, training=True):
        if eval_off and not training:
            return x
        r = torch.rand_like(x)
        keep = r < p if keep_if_below_p else r >= p
        factor = {"ok": 1 / (1 - p) if p < 1 else 0.0, "p": 1 / p if p > 0 else float("inf"), "none": 1.0}[scale]
        return x * keep * factor

    return fn


def dropout_half_rate(x, p, training=True):
    return x * (torch.rand_like(x) >= p / 2) / (1 - p) if training else x


def split_no_transpose(x, num_heads):
    b, t, d = x.shape
    return x.view(b, num_heads, t, d // num_heads)


def split_only_view(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, num_heads, d // num_heads)


def split_interleaved(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, d // num_heads, num_heads).permute(0, 3, 1, 2)


def merge_no_transpose(context_vec):
    b, nh, t, hd = context_vec.shape
    return context_vec.reshape(b, t, nh * hd)


def merge_no_contiguous(context_vec):
    b, nh, t, hd = context_vec.shape
    return context_vec.transpose(1, 2).view(b, t, nh * hd)


def windows_factory(shift=1, stride_used=True, stop=0, swap=False):
    def fn(token_ids, max_length, stride):
        step = stride if stride_used else 1
        inputs, targets = [], []
        for i in range(0, len(token_ids) - max_length + stop, step):
            inputs.append(torch.tensor(token_ids[i : i + max_length]))
            targets.append(torch.tensor(token_ids[i + shift : i + shift + max_length]))
        return (torch.stack(targets), torch.stack(inputs)) if swap else (torch.stack(inputs), torch.stack(targets))

    return fn


def windows_extra(token_ids, max_length, stride):
    inputs, targets = windows(token_ids, max_length, stride)
    extra = torch.tensor(token_ids[-max_length:]).unsqueeze(0)
    return torch.cat([inputs, extra]), torch.cat([targets, extra])


def embeddings_no_positions(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids)


def embeddings_positions_from_ids(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(token_ids)


def embeddings_full_context(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(pos_emb.num_embeddings))


PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("causal_mask", mask_diag, "diagonal_masked"),
    ("causal_mask", mask_keep, "mask_inverted"),
    ("causal_mask", mask_past, "mask_transposed"),
    ("causal_mask", mask_open, "future_open"),
    ("causal_mask", mask_float, "mask_not_bool"),
    ("renormalize", renorm_columns, "column_sums"),
    ("renormalize", renorm_none, "not_renormalized"),
    ("renormalize", renorm_dim1, "batch_dims"),
    ("renormalize", renorm_shape0, "batch_dims"),
    ("renormalize", renorm_diag, "diagonal_masked"),
    ("renormalize", renorm_total, "sum_over_all"),
    ("renormalize", lambda w: w, "future_open"),
    ("attention_weights", weights_factory(dim=-2), "softmax_dim"),
    ("attention_weights", weights_factory(scale="none"), "scale_missing"),
    ("attention_weights", weights_factory(scale="twice"), "scale_twice"),
    ("attention_weights", weights_factory(scale="inverted"), "scale_inverted"),
    ("attention_weights", weights_factory(scale="T"), "scale_uses_T"),
    ("attention_weights", weights_factory(mask="diag"), "diagonal_masked"),
    ("attention_weights", weights_factory(mask="none"), "future_open"),
    ("attention_weights", weights_factory(fill=0.0), "masked_with_zero"),
    ("attention_weights", weights_masked_after_softmax, "not_renormalized"),
    ("attention_weights", weights_factory(keys_t=True), "batch_dims"),
    ("causal_softmax", softmax_nan, "nan_rows"),
    ("causal_softmax", softmax_big_negative, "fully_masked_not_zero"),
    ("causal_softmax", softmax_no_padding, "padding_ignored"),
    ("causal_softmax", softmax_rows, "padding_wrong_axis"),
    ("dropout", dropout_factory(scale="p"), "dropout_scaled_by_p"),
    ("dropout", dropout_factory(scale="none"), "dropout_not_scaled"),
    ("dropout", dropout_factory(eval_off=False), "dropout_in_eval"),
    ("dropout", dropout_factory(keep_if_below_p=True), "dropout_rate_inverted"),
    ("dropout", dropout_half_rate, "dropout_rate_wrong"),
    ("dropout", lambda x, p, training=True: x, "dropout_not_applied"),
    ("dropout", lambda x, p, training=True: F.dropout(x, p, True), "dropout_in_eval"),
    ("causal_attention", with_mistake(CausalAttention, "diagonal_masked"), "diagonal_masked"),
    ("causal_attention", with_mistake(CausalAttention, "future_open"), "future_open"),
    ("causal_attention", with_mistake(CausalAttention, "softmax_dim"), "softmax_dim"),
    ("causal_attention", with_mistake(CausalAttention, "scale_missing"), "scale_missing"),
    ("causal_attention", with_mistake(CausalAttention, "scale_twice"), "scale_twice"),
    ("causal_attention", with_mistake(CausalAttention, "mask_wrong_size"), "mask_wrong_size"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_in_eval"), "dropout_in_eval"),
    ("causal_attention", with_mistake(CausalAttention, "dropout_missing"), "dropout_missing"),
    ("split_heads", split_no_transpose, "view_without_transpose"),
    ("split_heads", split_only_view, "view_without_transpose"),
    ("split_heads", split_interleaved, "heads_interleaved"),
    ("merge_heads", merge_no_transpose, "merge_without_transpose"),
    ("merge_heads", merge_no_contiguous, "not_contiguous"),
    ("multihead", with_mistake(MultiHeadAttention, "view_without_transpose"), "view_without_transpose"),
    ("multihead", with_mistake(MultiHeadAttention, "out_proj_missing"), "out_proj_missing"),
    ("multihead", with_mistake(MultiHeadAttention, "no_out_proj_attribute"), "out_proj_missing"),
    ("multihead", with_mistake(MultiHeadAttention, "scale_uses_d_out"), "scale_uses_d_out"),
    ("multihead", with_mistake(MultiHeadAttention, "mask_wrong_size"), "mask_wrong_size"),
    ("multihead", FusedQKV, "missing_attribute"),
    ("windows", windows_factory(shift=0), "targets_not_shifted"),
    ("windows", windows_factory(swap=True), "targets_swapped"),
    ("windows", windows_factory(stride_used=False), "stride_ignored"),
    ("windows", windows_factory(stop=-1), "missing_last_window"),
    ("windows", windows_extra, "extra_window"),
    ("input_embeddings", embeddings_no_positions, "positions_missing"),
    ("input_embeddings", embeddings_positions_from_ids, "positions_from_ids"),
    ("input_embeddings", embeddings_full_context, "positions_wrong_length"),
    *NOTEBOOK_00_PLANTED,
]


@pytest.mark.parametrize(("exercise", "fn", "hint"), PLANTED, ids=[f"{e}-{h}-{i}" for i, (e, _, h) in
                                                                    enumerate(PLANTED)])
def test_planted_mistake_is_named(exercise, fn, hint, capsys):
    result = ex.evaluate(exercise, fn)
    assert (result.status, result.hint) == ("fail", hint), result.message
    CHECKERS[exercise](fn)
    out = capsys.readouterr().out
    assert out.startswith("❌ ") and out.count("\n") == 1, out
    assert out.startswith(result.line)


# The diagnoses the course promises, each planted above at least once.
PROMISED = {
    "diagonal_masked", "future_open", "softmax_dim", "scale_missing", "scale_twice", "column_sums",
    "dropout_scaled_by_p", "dropout_in_eval", "view_without_transpose", "out_proj_missing", "mask_wrong_size",
}


def test_every_promised_diagnosis_is_planted():
    assert PROMISED <= {hint for _, _, hint in PLANTED}


# ---- robustness: the checker never raises ------------------------------------------------------------------


def raises_type_error(*args, **kwargs):
    raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")


class RaisingModule(nn.Module):
    def __init__(self, *args):
        super().__init__()
        raise TypeError("boom")


def wrong_shape(*args, **kwargs):
    return torch.zeros(3, 2)


def not_a_tensor(*args, **kwargs):
    return [[0.0, 1.0]]


def returns_none(*args, **kwargs):
    return None


def prints_a_lot(*args, **kwargs):
    print("debug line 1\ndebug line 2")
    return "nope"


@pytest.mark.parametrize("exercise", ex.EXERCISES)
@pytest.mark.parametrize("bad", [raises_type_error, wrong_shape, not_a_tensor, returns_none, prints_a_lot, 42, None,
                                 RaisingModule])
def test_checker_never_raises(exercise, bad, capsys):
    result = ex.evaluate(exercise, bad)
    assert result.status in ("fail", "error")
    assert result.hint != "checker_error", result.message
    assert CHECKERS[exercise](bad) is None
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("❌ "), out


def test_exception_message_names_type_and_text():
    result = ex.evaluate("causal_mask", raises_type_error)
    assert result.hint == "exception"
    assert "TypeError" in result.message and "unsupported operand" in result.message


def test_wrong_shape_is_reported_with_both_shapes():
    result = ex.evaluate("renormalize", wrong_shape)
    assert result.hint == "wrong_shape"
    assert "(5, 5)" in result.message and "(3, 2)" in result.message


# ---- languages ---------------------------------------------------------------------------------------------


def test_every_message_exists_in_both_languages():
    for hint, texts in _messages.MESSAGES.items():
        assert set(texts) == {"en", "zh"}, hint
        assert texts["en"].strip() and texts["zh"].strip() and texts["en"] != texts["zh"], hint
        assert "{title}" in texts["en"] and "{title}" in texts["zh"], hint
        assert "\n" not in texts["en"] and "\n" not in texts["zh"], hint


@pytest.mark.parametrize(("exercise", "fn", "hint"), PLANTED[::3] + [("dropout", dropout, "passed"),
                                                                      ("windows", stub, "not_implemented")])
def test_messages_switch_language(exercise, fn, hint):
    en = ex.evaluate(exercise, fn)
    ex.set_language("zh")
    zh = ex.evaluate(exercise, fn)
    assert en.hint == zh.hint == hint
    assert en.status == zh.status
    assert en.message and zh.message and en.message != zh.message
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh.message)


def test_set_language_rejects_unknown():
    with pytest.raises(ValueError, match="fr"):
        ex.set_language("fr")
    assert ex.get_language() == "en"


def test_evaluate_rejects_unknown_exercise():
    with pytest.raises(ValueError, match="nope"):
        ex.evaluate("nope", stub)
