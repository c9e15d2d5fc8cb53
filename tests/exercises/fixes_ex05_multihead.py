"""Notebook 05's second-step fixes of llm_lab/exercises/_ex05_multihead.py (multi-head attention, the fused qkv
split): each mistake planted in a correct solution written as source text, and the fix that undoes it. The
multi-head class is notebook 04's single head with the heads split and merged, so it takes 04's cases too.

Read by tests/exercises/test_fixes.py: ``FIX_TEMPLATES`` (exercise -> a correct solution as source text) and
``FIX_CASES`` ((exercise, hint, [(correct, wrong) ...], [(wrong, fixed) ...] or None: undo the plant)).
"""

from fixes_ex04_causal import CAUSAL, DROP, MASKED_FILL_CASES, MODULE_CASES, PROJECT_EACH, SOFTMAX, layers_not_followed

MULTIHEAD = (
    CAUSAL.replace(
        "def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n        super().__init__()",
        "def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n        super().__init__()\n"  # noqa: E501
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

SPLIT_QKV = """
def fixed(qkv, num_heads, num_kv_heads):
    b, num_tokens, width = qkv.shape
    head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)
    queries, keys, values = qkv.split([num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim], dim=-1)
    queries, keys, values = (t.reshape(b, num_tokens, heads, head_dim).transpose(1, 2)
                             for t, heads in ((queries, num_heads), (keys, num_kv_heads), (values, num_kv_heads)))
    return queries, keys, values
"""

HEADS = ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)"
MHA_CASES = [
    layers_not_followed(
        f"queries, keys, values = (layer(x){HEADS}\n                                 for layer in (self.W_query, self.W_key, self.W_value))",  # noqa: E501
        f"queries, keys, values = ((x @ w.T){HEADS} for w in self.frozen)",
        f"{PROJECT_EACH}\n        queries, keys, values = (t{HEADS} for t in (queries, keys, values))",
    ),
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
    # d_in = head_dim on two configurations, head_dim ** 2 on the third: named only because it fits all of them
    ("scale_uses_d_in", [(SOFTMAX, SOFTMAX.replace("keys.shape[-1]", "x.shape[-1]"))], None),
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

QKV_SPLIT = "t.reshape(b, num_tokens, heads, head_dim).transpose(1, 2)"
QKV_BLOCKS = "qkv.split([num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim], dim=-1)"
QKV_PAIRS = "((queries, num_heads), (keys, num_kv_heads), (values, num_kv_heads))"
SPLIT_QKV_CASES = [
    (
        "qkv_equal_thirds",
        [(QKV_SPLIT, "t.reshape(b, num_tokens, heads, -1).transpose(1, 2)"), (QKV_BLOCKS, "qkv.chunk(3, dim=-1)")],
        None,
    ),
    (
        "kv_split_into_num_heads",
        [
            (QKV_PAIRS, "((queries, num_heads), (keys, num_heads), (values, num_heads))"),
            ("t.reshape(b, num_tokens, heads, head_dim)", "t.reshape(b, num_tokens, heads, -1)"),
        ],
        None,
    ),
    (
        "qkv_per_group",
        [
            (
                f"    queries, keys, values = {QKV_BLOCKS}\n",
                "    g = num_heads // num_kv_heads\n"
                "    grouped = qkv.reshape(b, num_tokens, num_kv_heads, g + 2, head_dim)\n"
                "    queries = grouped[:, :, :, :g].flatten(2)\n"
                "    keys, values = grouped[:, :, :, g].flatten(2), grouped[:, :, :, g + 1].flatten(2)\n",
            )
        ],
        None,
    ),
    ("view_without_transpose", [(QKV_SPLIT, "t.reshape(b, heads, num_tokens, head_dim)")], None),
    ("heads_interleaved", [(QKV_SPLIT, "t.reshape(b, num_tokens, head_dim, heads).permute(0, 3, 1, 2)")], None),
    (
        "kv_heads_repeated",
        [
            (
                "    return queries, keys, values",
                "    group = num_heads // num_kv_heads\n"
                "    return queries, keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)",
            )
        ],
        None,
    ),
    ("keys_values_swapped", [(f"queries, keys, values = {QKV_BLOCKS}", f"queries, values, keys = {QKV_BLOCKS}")], None),
    (
        "not_triple",
        [
            ("return queries, keys, values", "return torch.cat((queries, keys, values), dim=1)"),
            ("def fixed", "import torch\n\n\ndef fixed"),
        ],
        None,
    ),
    (
        "input_modified",
        [
            (
                "    return queries, keys, values",
                "    out = tuple(t.clone() for t in (queries, keys, values))\n    qkv.zero_()\n    return out",
            )
        ],
        None,
    ),
]

FIX_TEMPLATES = {"multihead": MULTIHEAD, "split_qkv": SPLIT_QKV}
FIX_CASES = [("multihead", *c) for c in MASKED_FILL_CASES + MODULE_CASES + MHA_CASES] + [
    ("split_qkv", *c) for c in SPLIT_QKV_CASES
]
# The one fix of these exercises that holds no code to apply: a sentence about the order of two dimensions.
FIXES_WITHOUT_CODE = [("multihead", "heads_interleaved")]
