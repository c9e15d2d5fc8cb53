"""Notebook 05's second-step fixes of llm_lab/exercises/_ex05_padding.py (padded heads): each mistake planted in a
correct solution written as source text, and the fix that undoes it.

Read by tests/exercises/test_fixes.py: ``FIX_TEMPLATES`` (exercise -> a correct solution as source text) and
``FIX_CASES`` ((exercise, hint, [(correct, wrong) ...], [(wrong, fixed) ...] or None: undo the plant)).
"""

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

FIX_TEMPLATES = {"padded_attention": PADDED}
FIX_CASES = [("padded_attention", *c) for c in PADDED_CASES]
