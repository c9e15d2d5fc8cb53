"""Notebook 07's second-step fixes (tiled attention, attention over a cache with a window): each mistake planted in a
correct solution written as source text, and the fix that undoes it.

Read by tests/exercises/test_fixes.py: ``FIX_TEMPLATES`` (exercise -> a correct solution as source text) and
``FIX_CASES`` ((exercise, hint, [(correct, wrong) ...], [(wrong, fixed) ...] or None: undo the plant)).
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
        "left_torch",
        [
            (
                "    out = torch.empty_like(values)\n",
                "    out = torch.empty_like(values)\n    keys = torch.tensor(keys.tolist())\n",
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
        "window_not_renormalized",
        [
            (WINDOW_LINE, WINDOW_LINE.replace("    hidden |= ", "    too_old = ")),
            (
                "torch.softmax(scores, dim=-1) @ values",
                "torch.softmax(scores, dim=-1).masked_fill(too_old, 0.0) @ values",
            ),
        ],
        None,
    ),
    ("window_from_newest_key", [(WINDOW_LINE, "    hidden |= torch.arange(k_len) < k_len - window")], None),
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


FIX_TEMPLATES = {"tiled_attention": TILED, "cached_attention": CACHED}
FIX_CASES = [("tiled_attention", *c) for c in TILED_CASES] + [("cached_attention", *c) for c in CACHED_CASES]
FIXES_WITHOUT_CODE = [("tiled_attention", "left_torch")]  # the fix removes a call: nothing to quote
