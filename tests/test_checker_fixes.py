# ruff: noqa: E501  (the planted and fixed lines read better unbroken)
"""Every second-step fix of notebooks 04-07 is itself a correct move for its exercise.

Each case starts from a correct solution written as source text, plants one mistake by replacing a line, checks
that the checker names it, then APPLIES THE FIX: replaces the planted line with code that uses the fix text's
own code (a backticked fragment of it must appear in the fixed source) and checks that the result passes.
A final test makes sure every hint with a fix in these exercises has such a case.
"""

import re

import pytest
from _fix_cases_05_06 import DOC_WINDOWS, DOC_WINDOWS_CASES, SPLIT_QKV, SPLIT_QKV_CASES

from llm_lab import exercises as ex
from llm_lab.exercises._messages import FIXES

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- the correct solutions the mistakes are planted in ------------------------------------------------------------

CAUSAL = '''
import torch
import torch.nn.functional as F
from torch import nn


def drop(x, p, training):
    """Dropout by hand (the 03 exercise), used where a fix speaks of it."""
    if not training or p == 0:
        return x
    keep = torch.rand_like(x) >= p
    return x * keep / (1 - p)


class Fixed(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.context_length, self.p = context_length, dropout
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        T = context_length
        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(-2, -1)
        mask = self.mask[:num_tokens, :num_tokens]
        attn_scores = attn_scores.masked_fill(mask, float("-inf"))
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec
'''

ADDITIVE = CAUSAL.replace(
    'T = context_length\n        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))',
    'self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), float("-inf")), diagonal=1))',
).replace(
    'mask = self.mask[:num_tokens, :num_tokens]\n        attn_scores = attn_scores.masked_fill(mask, float("-inf"))',
    "attn_scores = attn_scores + self.mask[:num_tokens, :num_tokens]",
)

MULTIHEAD = (
    CAUSAL.replace(
        "def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n        super().__init__()",
        "def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n        super().__init__()\n"
        "        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads\n"
        "        self.out_proj = nn.Linear(d_out, d_out)",
    )
    .replace(
        "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)",
        "queries, keys, values = (layer(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
        "                                 for layer in (self.W_query, self.W_key, self.W_value))",
    )
    .replace(
        "        return context_vec\n",
        "        context_vec = context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        "        return self.out_proj(context_vec)\n",
    )
)

PADDED = """
import torch


def fixed(queries, keys, values, key_padding_mask):
    num_tokens = queries.shape[-2]
    T = num_tokens
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    hidden = causal | key_padding_mask[:, None, None, :]
    attn_scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    attn_weights = torch.softmax(attn_scores.masked_fill(hidden, float("-inf")), dim=-1)
    attn_weights = attn_weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)
    return attn_weights @ values
"""

EMBEDDINGS = """
import torch


def fixed(token_ids, tok_emb, pos_emb):
    num_tokens = token_ids.shape[-1]
    positions = torch.arange(token_ids.shape[-1])
    return tok_emb(token_ids) + pos_emb(positions)
"""

TILED = """
import torch


def fixed(queries, keys, values, block_size):
    num_tokens, head_dim = queries.shape[-2], queries.shape[-1]
    out = torch.empty_like(values)
    for q_start in range(0, num_tokens, block_size):
        q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5
        rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)
        running_max = torch.full(q.shape[:-1], float("-inf"))
        running_sum = torch.zeros(q.shape[:-1])
        acc = torch.zeros(q.shape)
        for k_start in range(0, num_tokens, block_size):
            scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1)
            cols = torch.arange(k_start, k_start + scores.shape[-1])
            scores = scores.masked_fill(cols > rows, float("-inf"))
            v_block = values[:, :, k_start : k_start + block_size]
            new_max = torch.maximum(running_max, scores.amax(dim=-1))
            factor = torch.exp(running_max - new_max)
            p = torch.exp(scores - new_max[..., None])
            running_sum = running_sum * factor + p.sum(-1)
            acc = acc * factor[..., None] + p @ v_block
            running_max = new_max
        out[:, :, q_start : q_start + block_size] = acc / running_sum[..., None]
    return out
"""

CACHED = """
import torch


def fixed(queries, keys, values, window):
    q_len, k_len = queries.shape[-2], keys.shape[-2]
    hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)
    hidden |= torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values
"""

TEMPLATES = {
    "cached_attention": CACHED,
    "additive_attention": ADDITIVE,
    "causal_attention": CAUSAL,
    "multihead": MULTIHEAD,
    "padded_attention": PADDED,
    "split_qkv": SPLIT_QKV,
    "document_windows": DOC_WINDOWS,
    "input_embeddings": EMBEDDINGS,
    "tiled_attention": TILED,
}

# ---- the mistakes and their fixes: (hint, [(correct, wrong) ...], [(wrong, fixed) ...]; no fix pairs: undo) ------

SOFTMAX = "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
DROP = "attn_weights = self.dropout(attn_weights)"
HAND = "attn_weights = drop(attn_weights, self.p, self.training)"
MASK_BUF = 'self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))'
FILL = 'attn_scores = attn_scores.masked_fill(mask, float("-inf"))'
SLICE = "mask = self.mask[:num_tokens, :num_tokens]"
ADD = "attn_scores = attn_scores + self.mask[:num_tokens, :num_tokens]"
ADD_BUF = (
    'self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), float("-inf")), diagonal=1))'
)
QKV = "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)"


def _hand(wrong_keep_or_return):
    """A dropout mistake in the hand-written ``drop``, used by forward instead of nn.Dropout."""
    old, new = wrong_keep_or_return
    return [(DROP, HAND), (old, new)], [(new, old)]


# shared by the three attention classes (the weights, the scale, dropout)
MODULE_CASES = [
    ("softmax_dim", [(SOFTMAX, SOFTMAX.replace("dim=-1", "dim=-2"))], None),
    ("scale_missing", [(SOFTMAX, "attn_weights = torch.softmax(attn_scores, dim=-1)")], None),
    ("scale_twice", [(SOFTMAX, SOFTMAX.replace("** 0.5,", "** 0.5 / keys.shape[-1] ** 0.5,"))], None),
    ("scale_inverted", [(SOFTMAX, SOFTMAX.replace("/ keys", "* keys"))], None),
    ("scale_uses_T", [(SOFTMAX, SOFTMAX.replace("shape[-1]", "shape[-2]"))], None),
    (
        "dropout_in_eval",
        [(DROP, "attn_weights = F.dropout(attn_weights, self.p)")],
        [
            (
                "attn_weights = F.dropout(attn_weights, self.p)",
                "attn_weights = F.dropout(attn_weights, self.p, training=self.training)",
            )
        ],
    ),
    ("dropout_missing", [(DROP, "attn_weights = attn_weights")], None),
    (
        "dropout_on_output",
        [
            (DROP, "attn_weights = attn_weights"),
            ("context_vec = attn_weights @ values", "context_vec = self.dropout(attn_weights @ values)"),
        ],
        None,
    ),
    (
        "dropout_on_input",
        [
            (DROP, "attn_weights = attn_weights"),
            ("b, num_tokens, d_in = x.shape", "b, num_tokens, d_in = x.shape\n        x = self.dropout(x)"),
        ],
        None,
    ),
    ("dropout_default_rate", [("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout()")], None),
    ("dropout_rate_fixed", [("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout(0.1)")], None),
    (
        "dropout_on_scores",
        [
            (DROP, "attn_weights = attn_weights"),
            (SOFTMAX, "attn_weights = torch.softmax(self.dropout(attn_scores) / keys.shape[-1] ** 0.5, dim=-1)"),
        ],
        [
            (
                "attn_weights = torch.softmax(self.dropout(attn_scores) / keys.shape[-1] ** 0.5, dim=-1)",
                "attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))",
            )
        ],
    ),
    ("dropout_rate_inverted", *_hand(("keep = torch.rand_like(x) >= p", "keep = torch.rand_like(x) < p"))),
    ("dropout_rate_wrong", *_hand(("keep = torch.rand_like(x) >= p", "keep = torch.rand_like(x) >= p / 2"))),
    ("dropout_not_scaled", *_hand(("return x * keep / (1 - p)", "return x * keep"))),
    ("dropout_scaled_by_p", *_hand(("return x * keep / (1 - p)", "return x * keep / p"))),
    ("dropout_wrong_scale", *_hand(("return x * keep / (1 - p)", "return x * keep / (1 - p) ** 2"))),
    ("dropout_mask_shared", *_hand(("keep = torch.rand_like(x) >= p", "keep = torch.rand_like(x[:1]) >= p"))),
]

MASKED_FILL_CASES = [
    ("diagonal_masked", [(MASK_BUF, MASK_BUF.replace("diagonal=1", "diagonal=0"))], None),
    (
        "future_open",
        [(FILL, "attn_scores = attn_scores")],
        [
            (
                "attn_scores = attn_scores\n",
                "T = num_tokens\n        attn_scores = attn_scores.masked_fill("
                'torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))\n',
            )
        ],
    ),
    ("mask_inverted", [(MASK_BUF, MASK_BUF.replace("triu", "tril").replace("diagonal=1", "diagonal=0"))], None),
    ("mask_transposed", [(MASK_BUF, MASK_BUF.replace("triu", "tril").replace("diagonal=1", "diagonal=-1"))], None),
    ("masked_with_zero", [(FILL, FILL.replace('float("-inf")', "0.0"))], None),
    (
        "not_renormalized",
        [
            (
                FILL + "\n        " + SOFTMAX,
                SOFTMAX + "\n        masked = attn_weights.masked_fill(mask, 0.0)\n        attn_weights = masked",
            )
        ],
        [("attn_weights = masked\n", "attn_weights = masked / masked.sum(dim=-1, keepdim=True)\n")],
    ),
    ("mask_wrong_size", [(SLICE, "mask = self.mask[: self.context_length, : self.context_length]")], None),
]

ADDITIVE_CASES = [
    ("diagonal_masked", [(ADD_BUF, ADD_BUF.replace("diagonal=1", "diagonal=0"))], None),
    ("future_open", [(ADD, "attn_scores = attn_scores")], None),
    ("mask_inverted", [(ADD_BUF, ADD_BUF.replace("triu", "tril").replace("diagonal=1", "diagonal=0"))], None),
    ("mask_transposed", [(ADD_BUF, ADD_BUF.replace("triu", "tril").replace("diagonal=1", "diagonal=-1"))], None),
    ("masked_with_zero", [(ADD, "attn_scores = attn_scores * (self.mask[:num_tokens, :num_tokens] == 0)")], None),
    (
        "not_renormalized",
        [
            (ADD, "attn_scores = attn_scores  # the mask comes after the softmax"),
            (SOFTMAX, SOFTMAX + "\n        attn_weights = attn_weights * (self.mask[:num_tokens, :num_tokens] == 0)"),
        ],
        None,
    ),
    (
        "mask_wrong_size",
        [(ADD, "attn_scores = attn_scores + self.mask[: self.context_length, : self.context_length]")],
        None,
    ),
    (
        "additive_mask_01",
        [(ADD_BUF, 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))')],
        None,
    ),
    (
        "additive_uses_masked_fill",
        [(ADD, 'attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens] < 0, float("-inf"))')],
        None,
    ),
    (
        "mask_not_buffer",
        [(ADD_BUF, 'self.mask = torch.triu(torch.full((context_length, context_length), float("-inf")), diagonal=1)')],
        None,
    ),
    (
        "mask_is_parameter",
        [
            (
                ADD_BUF,
                "self.mask = nn.Parameter(torch.triu(torch.full((context_length, "
                'context_length), float("-inf")), diagonal=1), requires_grad=False)',
            )
        ],
        None,
    ),
    (
        "mask_not_additive",
        [
            (
                ADD_BUF,
                'self.register_buffer("mask", torch.triu(torch.ones(context_length, '
                "context_length, dtype=torch.bool), diagonal=1))",
            ),
            (ADD, "attn_scores = attn_scores + torch.log((~self.mask[:num_tokens, :num_tokens]).float())"),
        ],
        None,
    ),
]

# notebook 04's single head: d_k is the keys' width d_out, which the input's d_in equals only by chance
SINGLE_HEAD_CASES = [
    ("scale_uses_d_in", [(SOFTMAX, SOFTMAX.replace("keys.shape[-1]", "x.shape[-1]"))], None),
]

MHA_CASES = [
    ("out_proj_missing", [("return self.out_proj(context_vec)", "return context_vec")], None),
    (
        "view_without_transpose",
        [
            (
                ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
                ".view(b, self.num_heads, num_tokens, self.head_dim)",
            )
        ],
        None,
    ),
    ("merge_without_transpose", [("context_vec.transpose(1, 2).contiguous()", "context_vec.contiguous()")], None),
    (
        "heads_interleaved",
        [
            (
                ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
                ".view(b, num_tokens, self.head_dim, self.num_heads).permute(0, 3, 1, 2)",
            ),
            (
                "context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)",
                "context_vec.permute(0, 2, 3, 1).reshape(b, num_tokens, self.d_out)",
            ),
        ],
        None,
    ),
    (
        "dropout_after_out_proj",
        [
            (DROP, "attn_weights = attn_weights"),
            ("return self.out_proj(context_vec)", "return self.dropout(self.out_proj(context_vec))"),
        ],
        None,
    ),
    ("scale_uses_d_out", [(SOFTMAX, SOFTMAX.replace("keys.shape[-1]", "self.d_out"))], None),
    (
        "merge_features_first",
        [
            (
                "context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)",
                "context_vec.contiguous().view(b, self.d_out, num_tokens).transpose(1, 2)",
            )
        ],
        None,
    ),
]

PADDED_SCORES = "attn_scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5"
PADDED_HIDDEN = "hidden = causal | key_padding_mask[:, None, None, :]"
PADDED_ZERO = "attn_weights = attn_weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)"
PADDED_CASES = [
    ("nan_rows", [(PADDED_ZERO, "attn_weights = attn_weights")], None),
    ("padding_ignored", [(PADDED_HIDDEN, "hidden = causal")], None),
    ("padding_heads_axis", [(PADDED_HIDDEN, "hidden = causal | key_padding_mask[:, None, :]")], None),
    ("padding_wrong_axis", [(PADDED_HIDDEN, "hidden = causal | key_padding_mask[:, None, :, None]")], None),
    (
        "padded_queries_zeroed",
        [
            (
                "return attn_weights @ values",
                "return (attn_weights @ values).masked_fill(key_padding_mask[:, None, :, None], 0.0)",
            )
        ],
        None,
    ),
    (
        "future_open",
        [
            (
                "causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)",
                "causal = torch.zeros(T, T, dtype=torch.bool)",
            )
        ],
        None,
    ),
    ("diagonal_masked", [("dtype=torch.bool), diagonal=1)", "dtype=torch.bool), diagonal=0)")], None),
    ("scale_missing", [(PADDED_SCORES, "attn_scores = queries @ keys.transpose(-2, -1)")], None),
    ("scale_twice", [(PADDED_SCORES, "attn_scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]")], None),
    (
        "scale_uses_d_out",
        [(PADDED_SCORES, PADDED_SCORES.replace("keys.shape[-1]", "(queries.shape[1] * keys.shape[-1])"))],
        None,
    ),
    ("scale_uses_T", [(PADDED_SCORES, PADDED_SCORES.replace("shape[-1]", "shape[-2]"))], None),
    (
        "fully_masked_not_zero",
        [('float("-inf")), dim=-1)', "-1e9), dim=-1)"), (PADDED_ZERO, "attn_weights = attn_weights")],
        None,
    ),
    (
        "input_modified",
        [(PADDED_SCORES, "queries /= keys.shape[-1] ** 0.5\n    attn_scores = queries @ keys.transpose(-2, -1)")],
        [("queries /= keys.shape[-1] ** 0.5", "queries = queries / queries.shape[-1] ** 0.5")],
    ),
]

EMB_RETURN = "return tok_emb(token_ids) + pos_emb(positions)"
EMB_FIXED = "return tok_emb(token_ids) + pos_emb(torch.arange(num_tokens))"
EMBEDDINGS_CASES = [
    (
        "positions_missing",
        [(EMB_RETURN, "return tok_emb(token_ids)")],
        [("return tok_emb(token_ids)\n", EMB_FIXED + "\n")],
    ),
    (
        "positions_from_ids",
        [(EMB_RETURN, "return tok_emb(token_ids) + pos_emb(token_ids)")],
        [("return tok_emb(token_ids) + pos_emb(token_ids)", EMB_FIXED)],
    ),
    (
        "positions_one_based",
        [("positions = torch.arange(token_ids.shape[-1])", "positions = torch.arange(1, num_tokens + 1)")],
        [(EMB_RETURN, EMB_FIXED)],
    ),
    (
        "positions_wrong_length",
        [("positions = torch.arange(token_ids.shape[-1])", "positions = torch.arange(pos_emb.num_embeddings)")],
        None,
    ),
    (
        "input_modified",
        [(EMB_RETURN, "out = tok_emb(token_ids) + pos_emb(positions)\n    token_ids.zero_()\n    return out")],
        None,
    ),
]

Q_LINE = "q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5"
SCORES = "scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1)"
TILED_CASES = [
    (
        "uses_sdpa",
        [
            (
                "    out = torch.empty_like(values)\n",
                "    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)\n",
            )
        ],
        [
            (
                "    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)\n",
                "    out = torch.empty_like(values)\n",
            )
        ],
    ),
    ("future_open", [('scores = scores.masked_fill(cols > rows, float("-inf"))', "scores = scores")], None),
    ("scale_missing", [(Q_LINE, "q = queries[:, :, q_start : q_start + block_size]")], None),
    ("rescale_missing", [("acc = acc * factor[..., None] + p @ v_block", "acc = acc + p @ v_block")], None),
    (
        "max_not_subtracted",
        [
            ("p = torch.exp(scores - new_max[..., None])", "p = torch.exp(scores)"),
            ("factor = torch.exp(running_max - new_max)", "factor = torch.ones_like(new_max)"),
        ],
        None,
    ),
    (
        "max_init_zero",
        [('running_max = torch.full(q.shape[:-1], float("-inf"))', "running_max = torch.full(q.shape[:-1], 0.0)")],
        None,
    ),
    (
        "partial_block",
        [
            (
                "for q_start in range(0, num_tokens, block_size):",
                "for q_start in range(0, num_tokens - block_size + 1, block_size):",
            )
        ],
        None,
    ),
    (
        "not_blocked",
        [
            (
                "    out = torch.empty_like(values)\n",
                "    out = torch.empty_like(values)\n    all_scores = queries @ keys.transpose(-2, -1)\n",
            ),
            (
                SCORES,
                "scores = all_scores[:, :, q_start : q_start + block_size, k_start : k_start + "
                "block_size] / head_dim**0.5",
            ),
        ],
        None,
    ),
    (
        "input_modified",
        [(Q_LINE, "q = queries[:, :, q_start : q_start + block_size]\n        q /= head_dim**0.5")],
        None,
    ),
]

HIDDEN = "hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)"
CACHED_SCORES = "    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5\n"
WINDOW_LINE = "    hidden |= torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)"
CACHED_CASES = [
    ("mask_top_left", [(HIDDEN, "hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=1)")], None),
    ("cache_future_open", [(HIDDEN, "hidden = torch.zeros(q_len, k_len, dtype=torch.bool)")], None),
    (
        "cache_own_key_hidden",
        [(HIDDEN, "hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len)")],
        None,
    ),
    ("window_ignored", [(WINDOW_LINE + "\n", "    # the window's edge is forgotten\n")], None),
    ("window_top_left", [(WINDOW_LINE, WINDOW_LINE.replace("k_len - q_len - window", "-window"))], None),
    ("window_one_too_wide", [(WINDOW_LINE, WINDOW_LINE.replace("- window)", "- window - 1)"))], None),
    ("window_one_too_narrow", [(WINDOW_LINE, WINDOW_LINE.replace("- window)", "- window + 1)"))], None),
    ("scale_missing", [(CACHED_SCORES, "    scores = queries @ keys.transpose(-2, -1)\n")], None),
    (
        "input_modified",
        [(CACHED_SCORES, "    queries /= queries.shape[-1] ** 0.5\n    scores = queries @ keys.transpose(-2, -1)\n")],
        [("    queries /= queries.shape[-1] ** 0.5\n", "    queries = queries / queries.shape[-1] ** 0.5\n")],
    ),
    # the import at the top, outside the timed call (it loads torch._dynamo: seconds on a busy machine)
    (
        "uses_is_causal",
        [
            ("import torch\n", "import torch\nfrom torch.nn.attention.bias import causal_lower_right\n"),
            (
                CACHED_SCORES,
                "    if window >= k_len:  # no window edge: torch's mask alone\n"
                "        return torch.nn.functional.scaled_dot_product_attention(queries, keys, "
                "values, attn_mask=causal_lower_right(q_len, k_len))\n" + CACHED_SCORES,
            ),
        ],
        [("attn_mask=causal_lower_right(q_len, k_len)", "attn_mask=~hidden")],
    ),
]

CASES = (
    [("cached_attention", *c) for c in CACHED_CASES]
    + [("additive_attention", *c) for c in ADDITIVE_CASES + MODULE_CASES + SINGLE_HEAD_CASES]
    + [("causal_attention", *c) for c in MASKED_FILL_CASES + MODULE_CASES + SINGLE_HEAD_CASES]
    + [("multihead", *c) for c in MASKED_FILL_CASES + MODULE_CASES + MHA_CASES]
    + [("padded_attention", *c) for c in PADDED_CASES]
    + [("split_qkv", *c) for c in SPLIT_QKV_CASES]
    + [("document_windows", *c) for c in DOC_WINDOWS_CASES]
    + [("input_embeddings", *c) for c in EMBEDDINGS_CASES]
    + [("tiled_attention", *c) for c in TILED_CASES]
)
# The one fix of these exercises that holds no code to apply: a sentence about the order of two dimensions.
NO_CODE = {("multihead", "heads_interleaved")}


def _load(source: str, exercise: str):
    namespace: dict = {}
    exec(compile(source, f"<{exercise}>", "exec"), namespace)
    return namespace["Fixed" if ex.REGISTRY[exercise].takes == "class" else "fixed"]


def _edit(source: str, pairs) -> str:
    for old, new in pairs:
        assert source.count(old) >= 1, f"not in the source: {old!r}"
        source = source.replace(old, new)
    return source


def _code_fragments(fix: str) -> list[str]:
    """The backticked pieces of a fix that are code (a call, an index or an assignment), as regexes: ``...``
    stands for anything, quotes and spaces are normalized."""
    pieces = [p for p in re.findall(r"`([^`]+)`", fix) if any(c in p for c in "([=")]
    return [re.escape(_normal(p)).replace(re.escape("..."), ".*?") for p in pieces]


def _normal(code: str) -> str:
    return " ".join(code.replace("'", '"').split())


def _fix_of(exercise: str, hint: str, lang: str = "en") -> str:
    table = ex.REGISTRY[exercise].fixes.get(hint) or FIXES.get(hint)
    return table[lang] if table else ""


@pytest.mark.parametrize("exercise", list(TEMPLATES))
def test_the_solutions_the_mistakes_are_planted_in_pass(exercise):
    result = ex.grade(exercise, _load(TEMPLATES[exercise], exercise))
    assert result.passed, result.message


@pytest.mark.parametrize(("exercise", "hint", "plant", "fix"), CASES, ids=[f"{e}-{h}" for e, h, *_ in CASES])
def test_the_fix_applied_to_the_mistake_passes(exercise, hint, plant, fix):
    wrong_source = _edit(TEMPLATES[exercise], plant)
    wrong = ex.grade(exercise, _load(wrong_source, exercise))
    assert (wrong.status, wrong.hint) == ("fail", hint), wrong.message
    assert wrong.fix == _fix_of(exercise, hint) and wrong.fix, "a mistake with no fix, or another fix"
    fixed_source = _edit(wrong_source, fix or [(new, old) for old, new in plant])
    assert fixed_source != wrong_source
    if (exercise, hint) not in NO_CODE:
        fragments = _code_fragments(wrong.fix)
        assert fragments, f"the fix has no code: {wrong.fix}"
        assert any(re.search(f, _normal(fixed_source)) for f in fragments), (wrong.fix, fixed_source)
    fixed = ex.grade(exercise, _load(fixed_source, exercise))
    assert fixed.passed, (wrong.fix, fixed.message)


def test_every_fix_of_notebooks_04_to_07_is_applied_above():
    covered = {(e, h) for e, h, *_ in CASES}
    missing = [
        (name, hint)
        for name, record in ex.REGISTRY.items()
        if record.notebook in ("04", "05", "06", "07")
        for hint in record.hints
        if _fix_of(name, hint) and (name, hint) not in covered
    ]
    assert not missing


def test_both_languages_give_the_same_code_in_a_fix():
    for name, record in ex.REGISTRY.items():
        if record.notebook not in ("04", "05", "06", "07"):
            continue
        for hint in record.hints:
            if _fix_of(name, hint):
                en, zh = (sorted(re.findall(r"`([^`]+)`", _fix_of(name, hint, lang))) for lang in ("en", "zh"))
                assert en == zh, (name, hint)
