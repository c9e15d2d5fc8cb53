"""Notebook 04's second-step fixes (the causal attention class, its additive-mask variant): each mistake planted in a
correct solution written as source text, and the fix that undoes it. The cases shared by every attention class
(the weights, the scale, dropout; the masked_fill mask) are reused by notebook 05's multi-head class.

Read by tests/exercises/test_fixes.py: ``FIX_TEMPLATES`` (exercise -> a correct solution as source text) and
``FIX_CASES`` ((exercise, hint, [(correct, wrong) ...], [(wrong, fixed) ...] or None: undo the plant)).
"""

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
    'T = context_length\n        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))',  # noqa: E501
    'self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), float("-inf")), diagonal=1))',
).replace(
    'mask = self.mask[:num_tokens, :num_tokens]\n        attn_scores = attn_scores.masked_fill(mask, float("-inf"))',
    "attn_scores = attn_scores + self.mask[:num_tokens, :num_tokens]",
)

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
    (
        "dropout_also_on_output",
        [("context_vec = attn_weights @ values", "context_vec = self.dropout(attn_weights @ values)")],
        None,
    ),
    (
        "dropout_renormalized",
        [
            (
                DROP,
                DROP + "\n        attn_weights = attn_weights / attn_weights.sum(dim=-1, keepdim=True).clamp(min=1e-9)",
            )
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

# weights copied in __init__ and read in forward: right until the weights change (an optimizer step)
FROZEN = (
    "self.dropout = nn.Dropout(dropout)\n"
    "        self.frozen = [layer.weight.detach().clone() for layer in (self.W_query, self.W_key, self.W_value)]"
)
PROJECT = "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)"
PROJECT_EACH = "queries = self.W_query(x)\n        keys = self.W_key(x)\n        values = self.W_value(x)"


def layers_not_followed(project: str, frozen: str, fixed: str):
    """The case where forward projects with weights copied at construction (``frozen``) instead of its layers."""
    return (
        "layers_not_followed",
        [("self.dropout = nn.Dropout(dropout)", FROZEN), (project, frozen)],
        [(frozen, fixed)],
    )


# notebook 04's single head: d_k is the keys' width d_out, which the input's d_in equals only by chance
SINGLE_HEAD_CASES = [
    ("scale_uses_d_in", [(SOFTMAX, SOFTMAX.replace("keys.shape[-1]", "x.shape[-1]"))], None),
    layers_not_followed(PROJECT, "queries, keys, values = (x @ w.T for w in self.frozen)", PROJECT_EACH),
]


FIX_TEMPLATES = {"additive_attention": ADDITIVE, "causal_attention": CAUSAL}
FIX_CASES = [("additive_attention", *c) for c in ADDITIVE_CASES + MODULE_CASES + SINGLE_HEAD_CASES] + [
    ("causal_attention", *c) for c in MASKED_FILL_CASES + MODULE_CASES + SINGLE_HEAD_CASES
]
