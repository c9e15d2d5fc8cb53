"""Notebook 06's second-step fixes (windows inside documents, input embeddings): each mistake planted in a correct
solution written as source text, and the fix that undoes it.

Read by tests/exercises/test_fixes.py: ``FIX_TEMPLATES`` (exercise -> a correct solution as source text) and
``FIX_CASES`` ((exercise, hint, [(correct, wrong) ...], [(wrong, fixed) ...] or None: undo the plant)).
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

EMBEDDINGS = """
import torch


def fixed(token_ids, tok_emb, pos_emb):
    num_tokens = token_ids.shape[-1]
    positions = torch.arange(token_ids.shape[-1])
    return tok_emb(token_ids) + pos_emb(positions)
"""


DOC_RANGE = "for start in range(0, len(doc) - max_length, stride):"
DOC_SPLIT = """        current.append(token)
        if token == EOT:
            documents.append(current)
            current = []
"""
DOC_WINDOWS_CASES = [
    (
        "one_window_document_skipped",
        [
            (
                "    for doc in documents:\n",
                "    for doc in documents:\n        if not len(doc) > max_length + 1:\n            continue\n",
            )
        ],
        [("if not len(doc) > max_length + 1:", "if not len(doc) >= max_length + 1:")],
    ),
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
    (
        "unclosed_document_dropped",
        [("    documents.append(current)\n    inputs, targets", "    inputs, targets")],
        [("    inputs, targets", "    documents.append(current)\n    inputs, targets")],
    ),
    (
        "unclosed_document_closed",
        [
            (
                "    documents.append(current)\n    inputs",
                "    if current:\n        current.append(EOT)\n    documents.append(current)\n    inputs",
            )
        ],
        None,
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


FIX_TEMPLATES = {"document_windows": DOC_WINDOWS, "input_embeddings": EMBEDDINGS}
FIX_CASES = [("document_windows", *c) for c in DOC_WINDOWS_CASES] + [("input_embeddings", *c) for c in EMBEDDINGS_CASES]
