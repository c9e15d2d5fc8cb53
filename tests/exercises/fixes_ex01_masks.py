"""Notebook 01's second-step fixes (mask-and-renormalize for the rows of the last queries): the lesson's square
answers planted in a correct solution written as source text, and the fix that undoes them.

Read by tests/exercises/test_fixes.py: ``FIX_TEMPLATES`` (exercise -> a correct solution as source text) and
``FIX_CASES`` ((exercise, hint, [(correct, wrong) ...], [(wrong, fixed) ...] or None: undo the plant)).
"""

RENORMALIZE = """
import torch


def fixed(attn_weights):
    q_len, k_len = attn_weights.shape[-2:]
    keep = torch.tril(torch.ones(q_len, k_len), diagonal=k_len - q_len)
    masked = attn_weights * keep
    return masked / masked.sum(dim=-1, keepdim=True)
"""

SIZES = (
    "q_len, k_len = attn_weights.shape[-2:]\n    keep = torch.tril(torch.ones(q_len, k_len), diagonal=k_len - q_len)"
)

FIX_TEMPLATES = {"renormalize": RENORMALIZE}
FIX_CASES = [
    # the lesson's tril with both sizes, unshifted
    (
        "renormalize",
        "mask_top_left",
        [("torch.ones(q_len, k_len), diagonal=k_len - q_len)", "torch.ones(q_len, k_len))")],
        [("torch.ones(q_len, k_len))", "torch.ones(q_len, k_len), diagonal=k_len - q_len)")],
    ),
    # the lesson's cell as it stands: a (Tk, Tk) triangle
    (
        "renormalize",
        "mask_square_only",
        [(SIZES, "t = attn_weights.shape[-1]\n    keep = torch.tril(torch.ones(t, t))")],
        None,
    ),
]
