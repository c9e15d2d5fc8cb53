# ruff: noqa: E501  (the planted and fixed lines read better unbroken)
"""tests/test_checker_fixes.py's solutions and (hint, plant, fix) cases for notebook 05's fused qkv split and notebook
06's document windows, kept here so that module stays short: the same format, read there."""

SPLIT_QKV = """
def fixed(qkv, num_heads, num_kv_heads):
    b, num_tokens, width = qkv.shape
    head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)
    queries, keys, values = qkv.split([num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim], dim=-1)
    queries, keys, values = (t.reshape(b, num_tokens, heads, head_dim).transpose(1, 2)
                             for t, heads in ((queries, num_heads), (keys, num_kv_heads), (values, num_kv_heads)))
    return queries, keys, values
"""

DOC_WINDOWS = """
import torch

EOT = 50256


def fixed(token_ids, max_length, stride):
    documents, current = [], []
    for token in token_ids:
        current.append(token)
        if token == EOT:
            documents.append(current)
            current = []
    documents.append(current)
    inputs, targets = [], []
    for doc in documents:
        for start in range(0, len(doc) - max_length, stride):
            inputs.append(doc[start : start + max_length])
            targets.append(doc[start + 1 : start + max_length + 1])

    def as_ids(windows):
        return torch.tensor(windows, dtype=torch.long).reshape(-1, max_length)

    return (as_ids(inputs), as_ids(targets))
"""

QKV_SPLIT = "t.reshape(b, num_tokens, heads, head_dim).transpose(1, 2)"
QKV_HD = "head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)"
QKV_BLOCKS = "qkv.split([num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim], dim=-1)"
QKV_PAIRS = "((queries, num_heads), (keys, num_kv_heads), (values, num_kv_heads))"
SPLIT_QKV_CASES = [
    (
        "qkv_equal_thirds",
        [(QKV_HD, "head_dim = qkv.shape[-1] // (3 * num_heads)"), (QKV_BLOCKS, "qkv.chunk(3, dim=-1)")],
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

DOC_RANGE = "for start in range(0, len(doc) - max_length, stride):"
DOC_SPLIT = """        current.append(token)
        if token == EOT:
            documents.append(current)
            current = []
"""
DOC_WINDOWS_CASES = [
    (
        "window_crosses_document",
        [
            ("    for token in token_ids:\n", "    for token in []:\n"),
            ("    documents.append(current)\n    inputs", "    documents.append(list(token_ids))\n    inputs"),
        ],
        None,
    ),
    (
        "target_crosses_document",
        [
            (DOC_RANGE, "for start in range(0, len(doc) - max_length + 1, stride):"),
            (
                "    for doc in documents:\n",
                "    for n, doc in enumerate(documents):\n"
                "        doc = doc + documents[n + 1][:1] if n + 1 < len(documents) else doc\n",
            ),
            (
                "            inputs.append(",
                "            if len(doc) < start + max_length + 1:\n"
                "                continue\n            inputs.append(",
            ),
        ],
        None,
    ),
    (
        "separator_dropped",
        [
            (
                DOC_SPLIT,
                "        if token == EOT:\n            documents.append(current)\n"
                "            current = []\n        else:\n            current.append(token)\n",
            )
        ],
        None,
    ),
    (
        "separator_starts_document",
        [
            (
                DOC_SPLIT,
                "        if token == EOT:\n            documents.append(current)\n"
                "            current = []\n        current.append(token)\n",
            )
        ],
        None,
    ),
    (
        "stride_across_documents",
        [
            ("    for doc in documents:\n", "    offset = 0\n    for doc in documents:\n"),
            (DOC_RANGE, "for start in range((-offset) % stride, len(doc) - max_length, stride):"),
            (
                "            targets.append(doc[start + 1 : start + max_length + 1])\n",
                "            targets.append(doc[start + 1 : start + max_length + 1])\n        offset += len(doc)\n",
            ),
        ],
        [("for start in range((-offset) % stride, len(doc) - max_length, stride):", DOC_RANGE)],
    ),
    ("missing_last_window", [(DOC_RANGE, "for start in range(0, len(doc) - max_length - 1, stride):")], None),
    (
        "targets_not_shifted",
        [
            (
                "targets.append(doc[start + 1 : start + max_length + 1])",
                "targets.append(doc[start : start + max_length])",
            )
        ],
        None,
    ),
    (
        "targets_swapped",
        [("return (as_ids(inputs), as_ids(targets))", "return (as_ids(targets), as_ids(inputs))")],
        None,
    ),
    ("ids_not_int64", [("dtype=torch.long", "dtype=torch.int32")], None),
    (
        "input_modified",
        [
            (
                "    documents, current = [], []\n",
                "    documents, current = [], []\n    token_ids.append(0)\n    token_ids.pop(0)\n",
            )
        ],
        None,
    ),
]
