"""Notebook 06's second-step fixes (windows inside documents, the next-token loss): each mistake planted in a correct
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

LOSS = """
import torch


def fixed(logits, targets):
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -picked.mean()
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

LOSS_SHIFT = "shifted = logits - logits.max(dim=-1, keepdim=True).values"
LOSS_LOGP = "log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()"
LOSS_PICK = "picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)"
LOSS_RETURN = "return -picked.mean()"
LOSS_CASES = [
    ("max_not_subtracted", [(LOSS_SHIFT, "shifted = logits")], None),
    (
        "log_of_softmax",
        [(LOSS_LOGP, "log_probs = (shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)).log()")],
        None,
    ),
    ("loss_not_averaged", [(LOSS_RETURN, "return -picked")], None),
    ("sum_not_mean", [(LOSS_RETURN, "return -picked.sum()")], None),
    ("sign_flipped", [(LOSS_RETURN, "return picked.mean()")], None),
    ("targets_ignored", [(LOSS_RETURN, "return -log_probs.mean()")], None),
    (
        "softmax_over_positions",
        [
            (LOSS_SHIFT, "shifted = logits - logits.max(dim=1, keepdim=True).values"),
            (LOSS_LOGP, "log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()"),
        ],
        None,
    ),
    (
        "targets_shifted_again",
        [(LOSS_PICK, "picked = log_probs[:, :-1].gather(-1, targets[:, 1:].unsqueeze(-1)).squeeze(-1)")],
        None,
    ),
    ("input_modified", [(LOSS_SHIFT, "logits -= logits.max(dim=-1, keepdim=True).values\n    shifted = logits")], None),
]


FIX_TEMPLATES = {"document_windows": DOC_WINDOWS, "next_token_loss": LOSS}
FIX_CASES = [("document_windows", *c) for c in DOC_WINDOWS_CASES] + [("next_token_loss", *c) for c in LOSS_CASES]
