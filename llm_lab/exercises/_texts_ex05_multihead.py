"""The hint texts of ``_ex05_multihead``: the fused qkv split's own (with the code its fixes quote), then the
module's."""

_QKV_MESSAGES = {
    "not_triple": {
        "en": "{title}: expected three tensors (queries, keys, values), got {got} (input: {case}).",
        "zh": "{title}：应当返回三个张量 (queries, keys, values)，实际得到 {got}（输入：{case}）。",
    },
    "qkv_per_group": {
        "en": "{title}: the fused columns were read group by group, each key/value head's query heads, key and value side by side (input: {case}); this projection's columns are [all queries | all keys | all values]: cut them into blocks of num_heads * head_dim, num_kv_heads * head_dim and num_kv_heads * head_dim first, then split each block into heads.",  # noqa: E501
        "zh": "{title}：把融合投影的列当成了按组存放：每个键/值头的那组查询头、它的键和值并排放在一起（输入：{case}）；这个投影的列是 [全部查询 | 全部键 | 全部值]：先切成宽 num_heads * head_dim、num_kv_heads * head_dim、num_kv_heads * head_dim 的三块，再把每一块拆分成多个头。",  # noqa: E501
    },
    "qkv_equal_thirds": {
        "en": "{title}: right with as many key/value heads as query heads, but not with fewer (input: {case}): the fused output was cut as if into three equal blocks, which holds only when num_kv_heads == num_heads. Here the query block is num_heads * head_dim wide and the key and value blocks num_kv_heads * head_dim each.",  # noqa: E501
        "zh": "{title}：键/值头和查询头一样多时是对的，键/值头更少时就不对了（输入：{case}）：融合输出被当成三等份来切，这只在 num_kv_heads == num_heads 时成立。这里查询那一块宽 num_heads * head_dim，键和值那两块各宽 num_kv_heads * head_dim。",  # noqa: E501
    },
    "kv_split_into_num_heads": {
        "en": "{title}: the key and value blocks were cut into num_heads heads (input: {case}); they hold num_kv_heads heads of head_dim features each.",  # noqa: E501
        "zh": "{title}：把键和值那两块切成了 num_heads 个头（输入：{case}）；它们各有 num_kv_heads 个头，每个头 head_dim 个特征。",  # noqa: E501
    },
    "kv_heads_repeated": {
        "en": "{title}: the keys and values come back with num_heads heads, each key/value head repeated for the query heads that share it (input: {case}); the split returns the num_kv_heads heads the projection made, (B, num_kv_heads, T, head_dim) each: repeating them for the query heads is a step of the attention, after the split.",  # noqa: E501
        "zh": "{title}：返回的键和值有 num_heads 个头，每个键/值头都为共用它的查询头重复了一遍（输入：{case}）；拆分只返回投影算出的 num_kv_heads 个头，键和值各为 (B, num_kv_heads, T, head_dim)：为查询头重复它们是注意力计算里的一步，在拆分之后。",  # noqa: E501
    },
    "keys_values_swapped": {
        "en": "{title}: the keys and values are swapped (input: {case}): the fused columns are [queries | keys | values], so the keys are the middle block and the values the last.",  # noqa: E501
        "zh": "{title}：键和值弄反了（输入：{case}）：融合投影的列是 [查询 | 键 | 值]，所以键是中间那一块，值是最后一块。",  # noqa: E501
    },
    "view_without_transpose": {
        "en": "{title}: a block was cut into heads without moving the heads in front of the tokens (input: {case}): a reshape straight to (B, heads, T, head_dim) mixes tokens and heads.",  # noqa: E501
        "zh": "{title}：把一块拆分成多个头时，没有把“头”的维度移到词元前面（输入：{case}）：直接 reshape 成 (B, heads, T, head_dim) 会把词元和头混在一起。",  # noqa: E501
    },
}
_QKV_SPLIT = "t.reshape(b, num_tokens, heads, head_dim).transpose(1, 2)"
_QKV_BLOCKS = "qkv.split([num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim], dim=-1)"
_QKV_FIXES = {
    "qkv_per_group": {
        "en": f"`queries, keys, values = {_QKV_BLOCKS}`, then `{_QKV_SPLIT}` for each block `t` and its number of heads.",  # noqa: E501
        "zh": f"`queries, keys, values = {_QKV_BLOCKS}`，再对每一块 `t` 按它的头数做 `{_QKV_SPLIT}`。",
    },
    "qkv_equal_thirds": {
        "en": f"`head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)`, then `queries, keys, values = {_QKV_BLOCKS}`.",  # noqa: E501
        "zh": f"`head_dim = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)`，然后 `queries, keys, values = {_QKV_BLOCKS}`。",  # noqa: E501
    },
    "kv_split_into_num_heads": {
        "en": f"`{_QKV_SPLIT}` with `heads = num_kv_heads` for the keys and the values, `heads = num_heads` for the queries.",  # noqa: E501
        "zh": f"`{_QKV_SPLIT}`：键和值用 `heads = num_kv_heads`，查询用 `heads = num_heads`。",
    },
    "kv_heads_repeated": {
        "en": f"`{_QKV_SPLIT}` with `heads = num_kv_heads` for the keys and the values, returned as they are: no `repeat_interleave` in the split.",  # noqa: E501
        "zh": f"键和值用 `heads = num_kv_heads` 做 `{_QKV_SPLIT}`，原样返回：拆分里不要 `repeat_interleave`。",
    },
    "keys_values_swapped": {
        "en": f"`queries, keys, values = {_QKV_BLOCKS}`: queries, then keys, then values.",
        "zh": f"`queries, keys, values = {_QKV_BLOCKS}`：先查询，再键，最后是值。",
    },
    "view_without_transpose": {
        "en": f"Tokens first, then move the heads in front: `{_QKV_SPLIT}` for each block `t`.",
        "zh": f"先按词元排列，再把“头”的维度移到前面：对每一块 `t` 做 `{_QKV_SPLIT}`。",
    },
    "heads_interleaved": {
        "en": f"The number of heads before head_dim: `{_QKV_SPLIT}`.",
        "zh": f"头数在 head_dim 之前：`{_QKV_SPLIT}`。",
    },
    "not_triple": {
        "en": "`queries, keys, values = ...`, then `return queries, keys, values`: three tensors, not one stacked tensor.",  # noqa: E501
        "zh": "`queries, keys, values = ...`，然后 `return queries, keys, values`：三个张量，而不是叠成一个张量。",
    },
    "input_modified": {
        "en": f"`{_QKV_BLOCKS}` gives views of `qkv` to read: write into none of them (no `qkv /= ...`, `qkv.zero_()`, `queries[...] = ...`).",  # noqa: E501
        "zh": f"`{_QKV_BLOCKS}` 得到的是 `qkv` 的视图，只供读取：不要往里写（不要 `qkv /= ...`、`qkv.zero_()`、`queries[...] = ...`）。",  # noqa: E501
    },
}

# The hint texts of ``_ex05_multihead`` alone (used by no other exercise): ``_registry`` gives them to every
# record of that module.
MODULE_MESSAGES = {
    "not_contiguous": {
        "en": "{title}: `.view` failed after `.transpose` (input: {case}): transpose only swaps strides, so the memory is no longer in row order.",  # noqa: E501
        "zh": "{title}：在 `.transpose` 之后调用 `.view` 失败了（输入：{case}）：transpose 只交换步长（stride），内存不再按行排列。",  # noqa: E501
    },
    "view_without_transpose": {
        "en": "{title}: the heads were split by `.view` without the transpose (input: {case}), which mixes tokens and heads.",  # noqa: E501
        "zh": "{title}：只用 `.view` 拆分了注意力头，没有转置（输入：{case}），词元和头被混在了一起。",
    },
    "merge_without_transpose": {
        "en": "{title}: the heads were merged by `.view`/`.reshape` without transposing back first (input: {case}), which mixes tokens and heads.",  # noqa: E501
        "zh": "{title}：合并注意力头时直接 `.view`/`.reshape`，没有先转置回来（输入：{case}），词元和头被混在了一起。",
    },
    "transpose_not_merged": {
        "en": "{title}: you transposed back but never merged the heads (input: {case}): the result still has 4 dimensions (B, T, num_heads, head_dim).",  # noqa: E501
        "zh": "{title}：转置回来了，但没有把各个头合并（输入：{case}）：结果仍是 4 维的 (B, T, num_heads, head_dim)。",
    },
    "heads_interleaved": {
        "en": "{title}: the features of the heads are interleaved (input: {case}). Head h owns the consecutive columns h*head_dim ... (h+1)*head_dim - 1.",  # noqa: E501
        "zh": "{title}：各个头的特征交错在了一起（输入：{case}）。第 h 个头应当拥有连续的列 h*head_dim 到 (h+1)*head_dim - 1。",  # noqa: E501
    },
    "merge_features_first": {
        "en": "{title}: the heads were merged by viewing (B, num_heads, T, head_dim) as (B, d_out, T) and then transposing (input: {case}): the view reads the memory in the order heads, tokens, features and cuts it into rows of T numbers, so each row mixes tokens and features. Move the heads back behind the tokens first, then merge.",  # noqa: E501
        "zh": "{title}：合并各头时先把 (B, num_heads, T, head_dim) view 成 (B, d_out, T)，再转置（输入：{case}）：这个 view 按“头、词元、特征”的内存顺序读，再切成每行 T 个数，于是每一行都把词元和特征混在了一起。应当先把“头”的维度移回词元后面，再合并。",  # noqa: E501
    },
    "out_proj_missing": {
        "en": "{title}: the output projection is missing (input: {case}): the merged heads never go through `self.out_proj`.",  # noqa: E501
        "zh": "{title}：缺少输出投影（output projection）（输入：{case}）：合并后的各头输出没有经过 `self.out_proj`。",
    },
}
MODULE_FIXES = {
    "not_contiguous": {
        "en": "Call `.contiguous()` before `.view(...)` (or use `.reshape`).",
        "zh": "先调用 `.contiguous()` 再 `.view(...)`（或者改用 `.reshape`）。",
    },
    "view_without_transpose": {
        "en": "View as (b, num_tokens, num_heads, head_dim), then `.transpose(1, 2)`.",
        "zh": "先 view 成 (b, num_tokens, num_heads, head_dim)，再 `.transpose(1, 2)`。",
    },
    "merge_without_transpose": {
        "en": "`.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`.",
        "zh": "`.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`。",
    },
    "transpose_not_merged": {
        "en": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)`.",
        "zh": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)`。",
    },
    "heads_interleaved": {
        "en": "The view must be (..., num_heads, head_dim), in that order.",
        "zh": "view 的最后两维必须按 (..., num_heads, head_dim) 的顺序。",
    },
    "merge_features_first": {
        "en": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`: tokens first, then each token's features.",  # noqa: E501
        "zh": "`context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)`：先按词元，再排每个词元的特征。",  # noqa: E501
    },
    "out_proj_missing": {
        "en": "`return self.out_proj(context_vec)` after merging the heads.",
        "zh": "合并各头之后写 `return self.out_proj(context_vec)`。",
    },
}
