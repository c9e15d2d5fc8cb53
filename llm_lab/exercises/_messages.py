# ruff: noqa: E501  (Chinese characters count double toward the line length; the strings read better unbroken)
"""The checkers' messages in English and Chinese, one line each, keyed by hint.

Every template is formatted with ``str.format``; ``{title}`` is the learner's function or class name.
Parameters are language-neutral (numbers, shapes, code), so both languages take the same ones.
"""

from __future__ import annotations

LANGUAGES = ("en", "zh")

MESSAGES: dict[str, dict[str, str]] = {
    # ---- generic -------------------------------------------------------------------------------------
    "passed": {
        "en": "{title}: correct on all {n} test inputs ({cases}).",
        "zh": "{title}：{n} 组测试输入全部正确（{cases}）。",
    },
    "not_implemented": {
        "en": "{title}: not implemented yet. Replace `raise NotImplementedError()` with your code, then run this cell "
        "again.",
        "zh": "{title}：还没有实现。把 `raise NotImplementedError()` 换成你的代码，再运行这个单元格。",
    },
    "exception": {
        "en": "{title}: your code raised {exc_type}: {exc_msg} (input: {case}).",
        "zh": "{title}：你的代码抛出了 {exc_type}：{exc_msg}（输入：{case}）。",
    },
    "not_tensor": {
        "en": "{title}: expected a torch.Tensor, got {got} (input: {case}).",
        "zh": "{title}：应当返回 torch.Tensor，实际得到 {got}（输入：{case}）。",
    },
    "returned_none": {
        "en": "{title}: returned None (input: {case}). Did you forget the `return`?",
        "zh": "{title}：返回了 None（输入：{case}）。是不是漏写了 `return`？",
    },
    "not_module": {
        "en": "{title}: expected a class derived from nn.Module, but calling it returned {got} (input: {case}).",
        "zh": "{title}：应当传入一个继承自 nn.Module 的类，但调用它得到的是 {got}（输入：{case}）。",
    },
    "wrong_shape": {
        "en": "{title}: expected shape {expected}, got {got} (input: {case}).",
        "zh": "{title}：形状应为 {expected}，实际是 {got}（输入：{case}）。",
    },
    "wrong_dtype": {
        "en": "{title}: expected dtype {expected}, got {got} (input: {case}).",
        "zh": "{title}：数据类型（dtype）应为 {expected}，实际是 {got}（输入：{case}）。",
    },
    "wrong_values": {
        "en": "{title}: wrong values (input: {case}): at index {index} expected {want}, got {got} "
        "({n_bad} of {n_all} entries differ).",
        "zh": "{title}：数值不对（输入：{case}）：在下标 {index} 处应为 {want}，实际是 {got}"
        "（{n_all} 个元素中有 {n_bad} 个不同）。",
    },
    "checker_error": {
        "en": "{title}: the checker itself failed ({exc_type}: {exc_msg}). This is a bug in llm_lab, not in your "
        "code; please report it.",
        "zh": "{title}：检查器自身出错（{exc_type}：{exc_msg}）。这是 llm_lab 的问题，不是你的代码的问题，请反馈给我们。",
    },
    "missing_attribute": {
        "en": "{title}: the module has no {name} ({expected}). Use the book's names so the checker can copy your "
        "weights into the reference.",
        "zh": "{title}：模块里没有 {name}（应为 {expected}）。请沿用书中的属性名，检查器才能把你的权重复制到参考实现里。",
    },
    "not_contiguous": {
        "en": "{title}: `.view` failed after `.transpose` (input: {case}). transpose only swaps strides, so call "
        "`.contiguous()` before `.view(...)` (or use `.reshape`).",
        "zh": "{title}：在 `.transpose` 之后调用 `.view` 失败了（输入：{case}）。transpose 只交换步长（stride），"
        "所以要先调用 `.contiguous()` 再 `.view(...)`（或者改用 `.reshape`）。",
    },
    "not_pair": {
        "en": "{title}: expected a pair (input_ids, target_ids), got {got} (input: {case}).",
        "zh": "{title}：应当返回一对 (input_ids, target_ids)，实际得到 {got}（输入：{case}）。",
    },
    # ---- causal masks --------------------------------------------------------------------------------
    "diagonal_masked": {
        "en": "{title}: the diagonal is masked too (input: {case}). A token may attend to itself: hide only the "
        "positions strictly above the diagonal, e.g. `torch.triu(..., diagonal=1)`.",
        "zh": "{title}：对角线也被遮蔽了（输入：{case}）。每个词元（token）可以关注它自己，只应遮住对角线以上的位置，"
        "例如 `torch.triu(..., diagonal=1)`。",
    },
    "future_open": {
        "en": "{title}: the future is left open (input: {case}): positions above the diagonal still get weight. "
        "Apply the causal mask before the softmax/renormalization.",
        "zh": "{title}：未来的位置没有被遮住（输入：{case}）：对角线以上仍然有权重。请在 softmax 或重新归一化之前应用因果遮蔽。",
    },
    "mask_inverted": {
        "en": "{title}: the mask is inverted (input: {case}): True must mark the hidden future (above the "
        "diagonal), but yours marks the visible positions. Use `torch.triu(..., diagonal=1)`, or negate yours.",
        "zh": "{title}：遮蔽矩阵反了（输入：{case}）：True 应当标记被隐藏的未来位置（对角线以上），你的却标记了可见的位置。"
        "请用 `torch.triu(..., diagonal=1)`，或者对你的结果取反。",
    },
    "mask_transposed": {
        "en": "{title}: the mask hides the past instead of the future (input: {case}): it is transposed. Row i is "
        "the query, column j the key; hide j > i (above the diagonal).",
        "zh": "{title}：遮住的是过去而不是未来（输入：{case}），遮蔽矩阵被转置了。第 i 行是查询（query），第 j 列是键（key），"
        "应当隐藏 j > i（对角线以上）的位置。",
    },
    "mask_not_bool": {
        "en": "{title}: the pattern is right but the dtype is {got}; return a bool tensor "
        "(e.g. `torch.ones(..., dtype=torch.bool)`) so it works with `masked_fill`.",
        "zh": "{title}：位置是对的，但数据类型是 {got}；请返回布尔张量（例如 `torch.ones(..., dtype=torch.bool)`），"
        "这样才能用于 `masked_fill`。",
    },
    "column_sums": {
        "en": "{title}: you renormalized by column sums (input: {case}). Each row (one query) must sum to 1: "
        "divide by `masked.sum(dim=-1, keepdim=True)`.",
        "zh": "{title}：你用列和做了重新归一化（输入：{case}）。每一行（一个查询）的和应为 1，请除以 "
        "`masked.sum(dim=-1, keepdim=True)`。",
    },
    "not_renormalized": {
        "en": "{title}: the future is zeroed but the rows are not renormalized (input: {case}): they sum to less "
        "than 1. Divide each row by its sum.",
        "zh": "{title}：未来位置已经置零，但没有重新归一化（输入：{case}），每行的和小于 1。请把每一行除以它自己的和。",
    },
    "sum_over_all": {
        "en": "{title}: you divided by the sum of the whole matrix (input: {case}); divide each row by its own sum "
        "(`dim=-1, keepdim=True`).",
        "zh": "{title}：你除以的是整个矩阵的和（输入：{case}）；应当把每一行除以该行自己的和（`dim=-1, keepdim=True`）。",
    },
    "batch_dims": {
        "en": "{title}: works for one (T, T) matrix but not for a batch (input: {case}). Count dimensions from the "
        "end (`dim=-1`, `transpose(-2, -1)`) so leading batch dimensions are left alone.",
        "zh": "{title}：单个 (T, T) 矩阵没问题，但批量输入出错（输入：{case}）。请从末尾数维度（`dim=-1`、"
        "`transpose(-2, -1)`），这样前面的批次维度不受影响。",
    },
    # ---- scores and softmax --------------------------------------------------------------------------
    "softmax_dim": {
        "en": "{title}: softmax over the wrong dimension (input: {case}): your columns sum to 1, not your rows. "
        "Use `torch.softmax(..., dim=-1)` (over the keys).",
        "zh": "{title}：softmax 用错了维度（输入：{case}）：现在是每一列的和为 1，而不是每一行。请用 "
        "`torch.softmax(..., dim=-1)`（在键的维度上）。",
    },
    "scale_missing": {
        "en": "{title}: the 1/sqrt(d_k) scaling is missing (input: {case}). Divide the scores by "
        "`keys.shape[-1] ** 0.5` before the softmax.",
        "zh": "{title}：缺少 1/sqrt(d_k) 缩放（输入：{case}）。请在 softmax 之前把分数除以 `keys.shape[-1] ** 0.5`。",
    },
    "scale_twice": {
        "en": "{title}: the scores are scaled twice, i.e. divided by d_k instead of sqrt(d_k) (input: {case}). "
        "Keep a single `/ keys.shape[-1] ** 0.5`.",
        "zh": "{title}：分数被缩放了两次，相当于除以 d_k 而不是 sqrt(d_k)（输入：{case}）。只保留一次 "
        "`/ keys.shape[-1] ** 0.5`。",
    },
    "scale_inverted": {
        "en": "{title}: the scores are multiplied by sqrt(d_k) instead of divided (input: {case}).",
        "zh": "{title}：分数被乘以了 sqrt(d_k)，应当是除以（输入：{case}）。",
    },
    "scale_uses_T": {
        "en": "{title}: the scale uses the number of tokens instead of the key dimension d_k (input: {case}). "
        "d_k is `keys.shape[-1]`, not `keys.shape[0]` or `keys.shape[-2]`.",
        "zh": "{title}：缩放用的是词元个数，而不是键的维度 d_k（输入：{case}）。d_k 是 `keys.shape[-1]`，"
        "不是 `keys.shape[0]` 或 `keys.shape[-2]`。",
    },
    "masked_with_zero": {
        "en": "{title}: masked scores were set to 0 instead of -inf (input: {case}). exp(0) = 1, so the future "
        "still gets weight; use `masked_fill(mask, float('-inf'))` before the softmax.",
        "zh": "{title}：被遮蔽的分数设成了 0 而不是 -inf（输入：{case}）。exp(0) = 1，未来位置仍会分到权重；请在 softmax "
        "之前用 `masked_fill(mask, float('-inf'))`。",
    },
    "nan_rows": {
        "en": "{title}: fully masked rows are NaN (input: {case}). softmax over a row of only -inf is 0/0; set "
        "those rows to 0 after the softmax (e.g. `masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)`).",
        "zh": "{title}：被完全遮蔽的行变成了 NaN（输入：{case}）。对全是 -inf 的一行做 softmax 相当于 0/0；请在 softmax "
        "之后把这些行置零（例如 `masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)`）。",
    },
    "fully_masked_not_zero": {
        "en": "{title}: fully masked rows should be all zeros, but yours are not (input: {case}); a large negative "
        "number instead of -inf spreads them evenly over the hidden keys.",
        "zh": "{title}：被完全遮蔽的行应当全为 0，你的却不是（输入：{case}）；用一个很大的负数代替 -inf，"
        "会把权重平均分给被隐藏的键。",
    },
    "padding_ignored": {
        "en": "{title}: the key padding mask is ignored (input: {case}): padded keys still get weight. Combine it "
        "with the causal mask: `hidden = causal | key_padding_mask.unsqueeze(-2)`.",
        "zh": "{title}：忽略了键填充遮蔽（key padding mask）（输入：{case}），填充位置仍然分到权重。请把它和因果遮蔽合并："
        "`hidden = causal | key_padding_mask.unsqueeze(-2)`。",
    },
    "padding_wrong_axis": {
        "en": "{title}: the padding mask hides queries (rows) instead of keys (columns) (input: {case}). Use "
        "`key_padding_mask.unsqueeze(-2)`, shape (..., 1, T), so it applies to every row's columns.",
        "zh": "{title}：填充遮蔽隐藏的是查询（行）而不是键（列）（输入：{case}）。请用 `key_padding_mask.unsqueeze(-2)`，"
        "形状为 (..., 1, T)，这样它作用于每一行的各列。",
    },
    # ---- dropout -------------------------------------------------------------------------------------
    "dropout_scaled_by_p": {
        "en": "{title}: kept values are scaled by 1/p instead of 1/(1-p) (p={p}). Dropout keeps a value with "
        "probability 1-p, so divide by (1 - p) to keep the expected value unchanged.",
        "zh": "{title}：保留下来的值被乘以了 1/p，应当是 1/(1-p)（p={p}）。每个值以 1-p 的概率被保留，"
        "所以要除以 (1 - p) 才能保持期望值不变。",
    },
    "dropout_not_scaled": {
        "en": "{title}: kept values are not rescaled (p={p}); divide them by (1 - p) so the expected value stays "
        "the same.",
        "zh": "{title}：保留下来的值没有重新缩放（p={p}）；请除以 (1 - p)，使期望值保持不变。",
    },
    "dropout_wrong_scale": {
        "en": "{title}: each value must be either 0 or x/(1-p) (p={p}); yours are x times {ratio} on average.",
        "zh": "{title}：每个值要么是 0，要么是 x/(1-p)（p={p}）；你的结果平均是 x 的 {ratio} 倍。",
    },
    "dropout_in_eval": {
        "en": "{title}: dropout is still active in evaluation mode (input: {case}). Outside training it must do "
        "nothing: return the input unchanged (nn.Dropout does this after `.eval()`; `F.dropout` needs "
        "`training=self.training`).",
        "zh": "{title}：评估模式下丢弃（dropout）仍在起作用（输入：{case}）。不训练时它什么都不应做，应原样返回输入"
        "（nn.Dropout 在 `.eval()` 之后会自动这样；`F.dropout` 需要传入 `training=self.training`）。",
    },
    "dropout_rate_inverted": {
        "en": "{title}: about {frac} of the values were zeroed with p={p}: p is the probability of dropping, not of "
        "keeping. Keep a value where `torch.rand_like(x) >= p`.",
        "zh": "{title}：p={p} 时约有 {frac} 的值被置零：p 是丢弃的概率，不是保留的概率。应当在 "
        "`torch.rand_like(x) >= p` 的位置保留数值。",
    },
    "dropout_rate_wrong": {
        "en": "{title}: about {frac} of the values were zeroed, expected about {expected} (p={p}).",
        "zh": "{title}：约有 {frac} 的值被置零，应当约为 {expected}（p={p}）。",
    },
    "dropout_not_applied": {
        "en": "{title}: in training mode with p={p} nothing was dropped: the output equals the input.",
        "zh": "{title}：训练模式下 p={p}，却没有任何值被丢弃，输出与输入完全相同。",
    },
    "dropout_missing": {
        "en": "{title}: with dropout={p} in training mode the output never changes (input: {case}): apply "
        "`self.dropout` to the attention weights.",
        "zh": "{title}：训练模式下 dropout={p}，输出却从不变化（输入：{case}）：请把 `self.dropout` 作用在注意力权重上。",
    },
    # ---- attention modules ---------------------------------------------------------------------------
    "mask_wrong_size": {
        "en": "{title}: fails when num_tokens < context_length (input: {case}, context_length={context_length}). "
        "Slice the stored mask to the actual input length: `self.mask[:num_tokens, :num_tokens]`.",
        "zh": "{title}：当 num_tokens < context_length 时出错（输入：{case}，context_length={context_length}）。"
        "请按实际输入长度截取保存的遮蔽矩阵：`self.mask[:num_tokens, :num_tokens]`。",
    },
    "view_without_transpose": {
        "en": "{title}: the heads were split by `.view` without the transpose (input: {case}), which mixes tokens "
        "and heads. View as (b, num_tokens, num_heads, head_dim), then `.transpose(1, 2)`.",
        "zh": "{title}：只用 `.view` 拆分了注意力头，没有转置（输入：{case}），词元和头被混在了一起。请先 view 成 "
        "(b, num_tokens, num_heads, head_dim)，再 `.transpose(1, 2)`。",
    },
    "merge_without_transpose": {
        "en": "{title}: the heads were merged by `.view`/`.reshape` without transposing back (input: {case}), which "
        "mixes tokens and heads. Use `.transpose(1, 2).contiguous().view(b, num_tokens, d_out)`.",
        "zh": "{title}：合并注意力头时直接 `.view`/`.reshape`，没有先转置回来（输入：{case}），词元和头被混在了一起。"
        "请用 `.transpose(1, 2).contiguous().view(b, num_tokens, d_out)`。",
    },
    "heads_interleaved": {
        "en": "{title}: the features of the heads are interleaved (input: {case}). Head h owns the consecutive "
        "columns h*head_dim ... (h+1)*head_dim - 1: the view must be (..., num_heads, head_dim), in that order.",
        "zh": "{title}：各个头的特征交错在了一起（输入：{case}）。第 h 个头应当拥有连续的列 h*head_dim 到 "
        "(h+1)*head_dim - 1，所以 view 的最后两维必须按 (..., num_heads, head_dim) 的顺序。",
    },
    "out_proj_missing": {
        "en": "{title}: the output projection is missing (input: {case}): apply `self.out_proj` "
        "(nn.Linear(d_out, d_out)) to the merged heads.",
        "zh": "{title}：缺少输出投影（output projection）（输入：{case}）：请对合并后的各头输出应用 `self.out_proj`"
        "（nn.Linear(d_out, d_out)）。",
    },
    "scale_uses_d_out": {
        "en": "{title}: the scores are scaled by 1/sqrt(d_out) instead of 1/sqrt(head_dim) (input: {case}). Each "
        "head's keys have head_dim = d_out // num_heads features.",
        "zh": "{title}：分数除以的是 sqrt(d_out)，应当是 sqrt(head_dim)（输入：{case}）。每个头的键只有 "
        "head_dim = d_out // num_heads 个特征。",
    },
    # ---- data ----------------------------------------------------------------------------------------
    "targets_not_shifted": {
        "en": "{title}: the targets equal the inputs (input: {case}); the target is the next token: "
        "`token_ids[i + 1 : i + max_length + 1]`.",
        "zh": "{title}：目标（targets）和输入完全相同（输入：{case}）；目标应当是下一个词元："
        "`token_ids[i + 1 : i + max_length + 1]`。",
    },
    "targets_swapped": {
        "en": "{title}: inputs and targets are swapped (input: {case}); the target window starts one token after "
        "the input window.",
        "zh": "{title}：输入和目标弄反了（输入：{case}）；目标窗口应当比输入窗口晚一个词元开始。",
    },
    "stride_ignored": {
        "en": "{title}: the stride is ignored (input: {case}): your windows start at every token; window i must "
        "start at token i * stride (`range(0, ..., stride)`).",
        "zh": "{title}：忽略了步幅（stride）（输入：{case}）：你的窗口从每个词元都开始一次；第 i 个窗口应从第 i * stride "
        "个词元开始（`range(0, ..., stride)`）。",
    },
    "missing_last_window": {
        "en": "{title}: the last window is missing (input: {case}): {got} windows instead of {expected}. A window "
        "needs max_length + 1 tokens, so starts run up to `len(token_ids) - max_length - 1` inclusive, i.e. "
        "`range(0, len(token_ids) - max_length, stride)`.",
        "zh": "{title}：少了最后一个窗口（输入：{case}）：得到 {got} 个，应为 {expected} 个。每个窗口需要 max_length + 1 "
        "个词元，起点最大可以是 `len(token_ids) - max_length - 1`，即 `range(0, len(token_ids) - max_length, stride)`。",
    },
    "extra_window": {
        "en": "{title}: {got} windows instead of {expected} (input: {case}); a window needs max_length + 1 tokens "
        "(inputs plus the next-token target), so use `range(0, len(token_ids) - max_length, stride)`.",
        "zh": "{title}：得到 {got} 个窗口，应为 {expected} 个（输入：{case}）；每个窗口需要 max_length + 1 个词元"
        "（输入再加上下一个词元作为目标），请用 `range(0, len(token_ids) - max_length, stride)`。",
    },
    "positions_missing": {
        "en": "{title}: the positional embeddings are missing (input: {case}); add "
        "`pos_emb(torch.arange(num_tokens))` to the token embeddings.",
        "zh": "{title}：缺少位置嵌入（positional embeddings）（输入：{case}）；请把 `pos_emb(torch.arange(num_tokens))` "
        "加到词元嵌入上。",
    },
    "positions_from_ids": {
        "en": "{title}: the position embedding was looked up with the token ids (input: {case}); positions are "
        "0, 1, ..., num_tokens - 1: `pos_emb(torch.arange(num_tokens))`.",
        "zh": "{title}：用词元 ID 去查了位置嵌入（输入：{case}）；位置应当是 0, 1, ..., num_tokens - 1："
        "`pos_emb(torch.arange(num_tokens))`。",
    },
    "positions_wrong_length": {
        "en": "{title}: fails when num_tokens < context_length (input: {case}); take the positions of the actual "
        "input, `torch.arange(token_ids.shape[-1])`, not of the whole context.",
        "zh": "{title}：当 num_tokens < context_length 时出错（输入：{case}）；位置应取实际输入的长度 "
        "`torch.arange(token_ids.shape[-1])`，而不是整个上下文长度。",
    },
}
