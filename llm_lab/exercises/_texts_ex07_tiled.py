"""The hint texts of ``_ex07_tiled``: the blocked attention's, then those of a chunk of new queries on a KV cache
(with the window mask their fixes quote)."""

_MESSAGES = {
    "uses_sdpa": {
        "en": "{title}: calls {ref}, which does the whole job; compute the blocks and the online softmax yourself.",
        "zh": "{title}：调用了 {ref}，它替你完成了全部工作；请自己按块计算并实现在线 softmax。",
    },
    "rescale_missing": {
        "en": "{title}: when a block raises the running maximum, what was accumulated so far is not put on the new scale (input: {case}).",  # noqa: E501
        "zh": "{title}：当新的一块抬高了累计最大值时，之前累积的结果没有换算到新的尺度上（输入：{case}）。",
    },
    "max_not_subtracted": {
        "en": "{title}: with large scores the output is inf/NaN (input: {case}): exp overflows unless the running maximum is subtracted first.",  # noqa: E501
        "zh": "{title}：分数很大时输出变成了 inf/NaN（输入：{case}）：不先减去累计最大值，exp 就会溢出。",
    },
    "partial_block": {
        "en": "{title}: right for whole blocks, wrong for the last, shorter one (input: {case}): T need not be a multiple of block_size.",  # noqa: E501
        "zh": "{title}：完整的块都对，最后那个较短的块却错了（输入：{case}）：T 不一定是 block_size 的整数倍。",
    },
    "max_init_zero": {
        "en": "{title}: the output is NaN where every visible score is far below 0 (input: {case}): a running maximum that starts at 0 instead of -inf makes exp(score - 0) underflow to 0, and 0/0 follows.",  # noqa: E501
        "zh": "{title}：当所有可见分数都远小于 0 时输出变成了 NaN（输入：{case}）：累计最大值从 0 而不是 -inf 开始，exp(score - 0) 会下溢成 0，于是出现 0/0。",  # noqa: E501
    },
    "left_torch": {
        "en": "{title}: the code leaves torch (`.numpy()`, `np.asarray`, `.tolist()`; input: {case}), where the checker cannot see whether the scores stay in blocks: compute every block with torch tensors.",  # noqa: E501
        "zh": "{title}：代码离开了 torch（`.numpy()`、`np.asarray`、`.tolist()`；输入：{case}），检查器在那里看不到分数是否一直分块计算：请用 torch 张量计算每一块。",  # noqa: E501
    },
    "not_blocked": {
        "en": "{title}: builds a tensor of {largest} numbers (input: {case}), as large as block_size whole rows of scores ({limit}) or more: blocked attention never holds the (T, T) scores or whole rows of them. One step needs one block of scores, B·nh·block_size² = {step} numbers; fold it into the running maximum, sum and weighted sum instead of a softmax over the row.",  # noqa: E501
        "zh": "{title}：构造了一个含 {largest} 个数的张量（输入：{case}），相当于 block_size 整行的分数（{limit} 个数）或更多：分块注意力从不持有 (T, T) 的分数，也不持有整行分数。每一步只需要一块分数，B·nh·block_size² = {step} 个数；请把它并入累计最大值、累计和与累计加权和，而不是对整行做 softmax。",  # noqa: E501
    },
}
_FIXES = {
    "uses_sdpa": {
        "en": "Loop over query blocks and key blocks with `range(0, num_tokens, block_size)`.",
        "zh": "用 `range(0, num_tokens, block_size)` 遍历查询块和键块。",
    },
    "rescale_missing": {
        "en": "`factor = torch.exp(running_max - new_max)`; `running_sum = running_sum * factor + p.sum(-1)`; `acc = acc * factor[..., None] + p @ v_block`.",  # noqa: E501
        "zh": "`factor = torch.exp(running_max - new_max)`；`running_sum = running_sum * factor + p.sum(-1)`；`acc = acc * factor[..., None] + p @ v_block`。",  # noqa: E501
    },
    "max_not_subtracted": {
        "en": "`p = torch.exp(scores - new_max[..., None])`.",
        "zh": "`p = torch.exp(scores - new_max[..., None])`。",
    },
    "max_init_zero": {
        "en": "`running_max = torch.full(q.shape[:-1], float('-inf'))`.",
        "zh": "`running_max = torch.full(q.shape[:-1], float('-inf'))`。",
    },
    "left_torch": {
        "en": "Keep queries, keys, values and every score block as torch tensors inside the function: no NumPy or Python lists in between.",  # noqa: E501
        "zh": "在函数内部让查询、键、值和每一块分数都保持为 torch 张量：中间不要转成 NumPy 数组或 Python 列表。",
    },
    "not_blocked": {
        "en": "Per query block, `for k_start in range(0, num_tokens, block_size):` with `scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1)`, one (B, nh, rows, block_size) block at a time folded into `running_max`, `running_sum` and `acc`; no `torch.cat` of score blocks, no softmax over a whole row.",  # noqa: E501
        "zh": "对每个查询块写 `for k_start in range(0, num_tokens, block_size):`，其中 `scores = q @ keys[:, :, k_start : k_start + block_size].transpose(-2, -1)`，每次只把一块 (B, nh, rows, block_size) 的分数并入 `running_max`、`running_sum` 和 `acc`；不要用 `torch.cat` 拼接分数块，也不要对整行做 softmax。",  # noqa: E501
    },
    "future_open": {
        "en": "Inside each block hide the keys after their query: `scores = scores.masked_fill(cols > rows, float('-inf'))` with `rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)` and `cols = torch.arange(k_start, k_start + scores.shape[-1])`.",  # noqa: E501
        "zh": "在每一块里遮蔽位于查询之后的键：`scores = scores.masked_fill(cols > rows, float('-inf'))`，其中 `rows = torch.arange(q_start, q_start + q.shape[2]).unsqueeze(-1)`，`cols = torch.arange(k_start, k_start + scores.shape[-1])`。",  # noqa: E501
    },
    "scale_missing": {
        "en": "Scale each query block: `q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5` with `head_dim = queries.shape[-1]`.",  # noqa: E501
        "zh": "缩放每个查询块：`q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5`，其中 `head_dim = queries.shape[-1]`。",  # noqa: E501
    },
    "input_modified": {
        "en": "`q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5` builds a new tensor; `q /= ...` on a slice writes into the caller's `queries`.",  # noqa: E501
        "zh": "`q = queries[:, :, q_start : q_start + block_size] / head_dim**0.5` 会得到一个新张量；对切片做 `q /= ...` 会写进调用者的 `queries`。",  # noqa: E501
    },
    "partial_block": {
        "en": "Slice `queries[:, :, q_start : q_start + block_size]` (slicing stops at T by itself) with `for q_start in range(0, num_tokens, block_size):`.",  # noqa: E501
        "zh": "用 `for q_start in range(0, num_tokens, block_size):` 并切片 `queries[:, :, q_start : q_start + block_size]`（切片自动止于 T）。",  # noqa: E501
    },
}


_CACHED_MESSAGES = {
    "mask_top_left": {
        "en": "{title}: the causal mask is aligned to the top left, as `is_causal=True` does (input: {case}): query i sees keys 0 … i, but the new queries are the last q_len positions, so query i sees keys 0 … k_len - q_len + i.",  # noqa: E501
        "zh": "{title}：因果遮蔽对齐到了左上角，和 `is_causal=True` 一样（输入：{case}）：查询 i 看到键 0 … i；可新查询是最后 q_len 个位置，查询 i 应该看到键 0 … k_len - q_len + i。",  # noqa: E501
    },
    "cache_future_open": {
        "en": "{title}: a new query sees the new keys after its own position (input: {case}): with several new tokens, each must still be causal among them.",  # noqa: E501
        "zh": "{title}：新查询看到了它自己位置之后的新键（输入：{case}）：一次来了几个新词元时，它们彼此之间仍然要满足因果性。",  # noqa: E501
    },
    "cache_own_key_hidden": {
        "en": "{title}: each new query hides its own key (input: {case}): the mask is one key too far back; query i sits at k_len - q_len + i and sees that key too.",  # noqa: E501
        "zh": "{title}：每个新查询都遮住了它自己的键（输入：{case}）：遮蔽往前错了一个键；查询 i 位于 k_len - q_len + i，这个键它也看得到。",  # noqa: E501
    },
    "window_ignored": {
        "en": "{title}: the sliding window is missing (input: {case}): a query sees every earlier key, while it should see only its own key and the window - 1 before it.",  # noqa: E501
        "zh": "{title}：缺少滑动窗口（输入：{case}）：查询看到了之前所有的键，可它只应看到自己的键和它前面的 window - 1 个键。",  # noqa: E501
    },
    "window_top_left": {
        "en": "{title}: the causal edge is aligned to the newest query but the window's edge to the top left (input: {case}): query i sits at position k_len - q_len + i, so its window is keys k_len - q_len + i - window + 1 … k_len - q_len + i; shift both edges by k_len - q_len.",  # noqa: E501
        "zh": "{title}：因果那条边对齐到了最新查询，窗口那条边却对齐到了左上角（输入：{case}）：查询 i 位于位置 k_len - q_len + i，它的窗口是键 k_len - q_len + i - window + 1 … k_len - q_len + i；两条边都要移动 k_len - q_len。",  # noqa: E501
    },
    "window_one_too_wide": {
        "en": "{title}: each query sees window + 1 keys (input: {case}): the window counts the query's own key, so it reaches back window - 1 keys, not window.",  # noqa: E501
        "zh": "{title}：每个查询看到了 window + 1 个键（输入：{case}）：窗口包括查询自己的键，所以只往前数 window - 1 个键，而不是 window 个。",  # noqa: E501
    },
    "window_one_too_narrow": {
        "en": "{title}: each query sees window - 1 keys (input: {case}): the window is window keys, the query's own included.",  # noqa: E501
        "zh": "{title}：每个查询只看到了 window - 1 个键（输入：{case}）：窗口有 window 个键，包括查询自己的。",
    },
}
_CACHED_MESSAGES["window_not_renormalized"] = {
    "en": "{title}: the rows of weights do not sum to 1 (input: {case}): the softmax ran over every earlier key, then the weights outside the window were zeroed. Hide those keys before the softmax, so that it spreads each row over the window alone.",  # noqa: E501
    "zh": "{title}：各行权重之和不是 1（输入：{case}）：softmax 作用在之前所有的键上，之后才把窗口外的权重置零。应当在 softmax 之前就遮住这些键，让 softmax 只在窗口内分配每一行的权重。",  # noqa: E501
}
_CACHED_MESSAGES["window_from_newest_key"] = {
    "en": "{title}: every new query sees the last window keys of the cache, as if it sat at the newest position (input: {case}): query i sits at p = k_len - q_len + i, so its window is keys p - window + 1 … p, a different one for each query of the chunk.",  # noqa: E501
    "zh": "{title}：每个新查询看到的都是缓存里最后 window 个键，好像它们都位于最新的位置（输入：{case}）：查询 i 位于 p = k_len - q_len + i，它的窗口是键 p - window + 1 … p，块里每个查询的窗口都不一样。",  # noqa: E501
}
_CACHED_MESSAGES["uses_is_causal"] = {
    "en": "{title}: right values, but the causal mask comes from torch (`is_causal=True` or `causal_lower_right`, in `{ref}`): this exercise builds the mask aligned to the newest query itself and passes it as `attn_mask` (or applies it to the scores).",  # noqa: E501
    "zh": "{title}：数值是对的，但因果遮蔽来自 torch（`{ref}` 里的 `is_causal=True` 或 `causal_lower_right`）：这道练习要求自己构造对齐到最新查询的遮蔽，作为 `attn_mask` 传入（或者直接作用在分数上）。",  # noqa: E501
}
_WINDOW = "hidden |= torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len - window)"
_CACHED_FIXES = {
    "window_ignored": {
        "en": f"`{_WINDOW}`: the keys window or more positions behind the query hidden too.",
        "zh": f"`{_WINDOW}`：把位于查询之前 window 个或更远位置的键也遮住。",
    },
    "window_top_left": {
        "en": f"`{_WINDOW}`: `tril(diagonal=k_len - q_len - window)`, not `tril(diagonal=-window)`.",
        "zh": f"`{_WINDOW}`：用 `tril(diagonal=k_len - q_len - window)`，而不是 `tril(diagonal=-window)`。",
    },
    "window_not_renormalized": {
        "en": f"`{_WINDOW}` before the softmax, then `scores = scores.masked_fill(hidden, float('-inf'))`: no weight is zeroed after the softmax.",  # noqa: E501
        "zh": f"在 softmax 之前 `{_WINDOW}`，再 `scores = scores.masked_fill(hidden, float('-inf'))`：softmax 之后不再把任何权重置零。",  # noqa: E501
    },
    "window_from_newest_key": {
        "en": f"`{_WINDOW}`: the diagonal moves with each query's row, not `keys[:, :, -window:]` for the whole chunk.",
        "zh": f"`{_WINDOW}`：对角线随每个查询所在的行移动，而不是对整个块取 `keys[:, :, -window:]`。",
    },
    "window_one_too_wide": {
        "en": f"`{_WINDOW}`: the diagonal k_len - q_len - window hides the key window positions back.",
        "zh": f"`{_WINDOW}`：对角线 k_len - q_len - window 会遮住往前第 window 个位置的键。",
    },
    "window_one_too_narrow": {
        "en": f"`{_WINDOW}`: the diagonal k_len - q_len - window keeps the key window - 1 positions back.",
        "zh": f"`{_WINDOW}`：对角线 k_len - q_len - window 会保留往前第 window - 1 个位置的键。",
    },
    "uses_is_causal": {
        "en": "`hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)`; `F.scaled_dot_product_attention(queries, keys, values, attn_mask=~hidden)`.",  # noqa: E501
        "zh": "`hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)`；`F.scaled_dot_product_attention(queries, keys, values, attn_mask=~hidden)`。",  # noqa: E501
    },
    "mask_top_left": {
        "en": "`hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)`, then `scores.masked_fill(hidden, float('-inf'))`; or SDPA with `attn_mask=~hidden`, not `is_causal=True`.",  # noqa: E501
        "zh": "`hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)`，再 `scores.masked_fill(hidden, float('-inf'))`；或者给 SDPA 传 `attn_mask=~hidden`，而不是 `is_causal=True`。",  # noqa: E501
    },
    "cache_future_open": {
        "en": "`hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)`.",
        "zh": "`hidden = torch.ones(q_len, k_len, dtype=torch.bool).triu(diagonal=k_len - q_len + 1)`。",
    },
    "cache_own_key_hidden": {
        "en": "`triu(diagonal=k_len - q_len + 1)`, not `k_len - q_len`.",
        "zh": "用 `triu(diagonal=k_len - q_len + 1)`，而不是 `k_len - q_len`。",
    },
    "scale_missing": {
        "en": "`scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5`.",
        "zh": "`scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5`。",
    },
}
