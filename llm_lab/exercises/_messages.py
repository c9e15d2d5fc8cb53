"""The checkers' messages in English and Chinese, one line each, keyed by hint (the mistake id).

``MESSAGES[hint]`` names the concept; ``FIXES[hint]`` is the exact fix, shown by ``check_*`` only when the
same mistake comes back in the same exercise (two-step hints). Every template is formatted with
``str.format``; ``{title}`` is the learner's function or class name. Parameters are language-neutral
(numbers, shapes, code), so both languages take the same ones. Messages used by one exercise only live in
that exercise's record (``_registry.py``) and are merged in there.
"""

from __future__ import annotations

LANGUAGES = ("en", "zh")

MESSAGES: dict[str, dict[str, str]] = {
    # ---- outcomes and harness ------------------------------------------------------------------------
    "passed": {
        "en": "{title}: correct on all {n} test inputs ({cases}).",
        "zh": "{title}：{n} 组测试输入全部正确（{cases}）。",
    },
    "not_implemented": {
        "en": "{title}: not implemented yet. Replace `raise NotImplementedError()` with your code, then run this cell again.",  # noqa: E501
        "zh": "{title}：还没有实现。把 `raise NotImplementedError()` 换成你的代码，再运行这个单元格。",
    },
    "reference": {
        "en": "{title} is llm_lab's own reference ({ref}), not your code: it gets no credit. Write the exercise yourself.",  # noqa: E501
        "zh": "{title} 是 llm_lab 自带的参考实现（{ref}），不是你写的代码，不计分。请自己完成这道练习。",
    },
    "timeout": {
        "en": "{title}: stopped after {seconds} s without finishing (input: {case}). Look for an endless loop or a much too large computation.",  # noqa: E501
        "zh": "{title}：运行 {seconds} 秒仍未结束，已被停止（输入：{case}）。请检查是否有死循环，或计算量是否过大。",
    },
    "exception": {
        "en": "{title}: your code raised {exc_type}: {exc_msg} (input: {case}).",
        "zh": "{title}：你的代码抛出了 {exc_type}：{exc_msg}（输入：{case}）。",
    },
    "thread_started": {
        "en": "{title}: started a thread or a process ({ref}) while checked: the check watches the call it makes, and what another thread or process computes is outside it. Compute the result in the function itself.",  # noqa: E501
        "zh": "{title}：在检查期间启动了线程或进程（{ref}）：检查只观察它发起的那次调用，别的线程或进程里算出的东西不在观察之内。请在函数本身里计算结果。",  # noqa: E501
    },
    "thread_running": {
        "en": "{title}: a thread your notebook started ({ref}) was running while it was checked: what another thread computes is outside the check, so the check cannot pass. Stop the thread (or do not start one) before the check.",  # noqa: E501
        "zh": "{title}：检查期间，你的 notebook 启动的线程（{ref}）仍在运行：别的线程里算出的东西不在检查的观察之内，所以检查不能通过。请在检查之前停止该线程（或者不要启动线程）。",  # noqa: E501
    },
    "watch_switched_off": {
        "en": "{title}: your code switched off the checker's watch ({ref} called while it was checked): the check sees which code your function runs, and code that hides from it cannot pass. Remove the call to {ref}.",  # noqa: E501
        "zh": "{title}：你的代码在检查期间关掉了检查器的监视（调用了 {ref}）：检查要看到你的函数运行了哪些代码，躲开它的代码不能通过。请去掉对 {ref} 的调用。",  # noqa: E501
    },
    "system_exit": {
        "en": "{title}: your code called sys.exit()/exit() (input: {case}); return a value instead.",
        "zh": "{title}：你的代码调用了 sys.exit()/exit()（输入：{case}）；请改为返回结果。",
    },
    "not_callable": {
        "en": "{title}: expected a function or class to call, got a {got}. Pass the function itself, without calling it: `check_x(my_fn)`, not `check_x(my_fn(...))`.",  # noqa: E501
        "zh": "{title}：应当传入一个可调用的函数或类，实际得到的是 {got}。请传入函数本身而不是调用结果：`check_x(my_fn)`，而不是 `check_x(my_fn(...))`。",  # noqa: E501
    },
    "instance_not_class": {
        "en": "{title}: you passed a module instance ({got}); pass the class itself so the checker can build it with its own arguments: `check_x(MyClass)`, not `check_x(MyClass(...))`.",  # noqa: E501
        "zh": "{title}：你传入的是模块实例（{got}）；请传入类本身，检查器会用自己的参数构造它：`check_x(MyClass)`，而不是 `check_x(MyClass(...))`。",  # noqa: E501
    },
    "meta_tensor": {
        "en": "{title}: your code gave a tensor on the 'meta' device, which has a shape but no values (input: {case}); create tensors on the CPU (no `device='meta'`, no `torch.set_default_device('meta')`).",  # noqa: E501
        "zh": "{title}：你的代码给出了 'meta' 设备上的张量，它只有形状没有数值（输入：{case}）；请在 CPU 上创建张量（不要用 `device='meta'` 或 `torch.set_default_device('meta')`）。",  # noqa: E501
    },
    "checker_error": {
        "en": "{title}: the check could not finish ({exc_type}: {exc_msg}). Usually the object you passed is unusual (e.g. tensors on another device or dtype); if it is ordinary CPU code, this is a bug in llm_lab: please report it.",  # noqa: E501
        "zh": "{title}：检查没能完成（{exc_type}：{exc_msg}）。通常是传入的对象不寻常（例如张量在别的设备上或用了别的 dtype）；如果它只是普通的 CPU 代码，那就是 llm_lab 的问题，请反馈给我们。",  # noqa: E501
    },
    "not_real": {
        "en": "{title}: the output is not a plain real tensor ({got}; input: {case}): attention weights and outputs are real numbers. Drop the complex part (or the sparse or quantized form) and return an ordinary float tensor.",  # noqa: E501
        "zh": "{title}：输出不是普通的实数张量（{got}；输入：{case}）：注意力权重和输出都是实数。请去掉虚部（或稀疏、量化的形式），返回普通的浮点张量。",  # noqa: E501
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
        "en": "{title}: wrong values (input: {case}): at index {index} expected {want}, got {got} ({n_bad} of {n_all} entries differ).",  # noqa: E501
        "zh": "{title}：数值不对（输入：{case}）：在下标 {index} 处应为 {want}，实际是 {got}（{n_all} 个元素中有 {n_bad} 个不同）。",  # noqa: E501
    },
    "nan_output": {
        "en": "{title}: the output contains NaN ({n_nan} of {n_all} entries; input: {case}). Look for 0/0, inf - inf or exp of a huge number.",  # noqa: E501
        "zh": "{title}：输出里有 NaN（{n_all} 个元素中有 {n_nan} 个；输入：{case}）。请检查 0/0、inf - inf 或对很大的数取 exp 的地方。",  # noqa: E501
    },
    "missing_attribute": {
        "en": "{title}: the module has no {name} ({expected}). Use the book's names so the checker can find your layers.",  # noqa: E501
        "zh": "{title}：模块里没有 {name}（应为 {expected}）。请沿用书中的属性名，检查器才能找到你的各个层。",
    },
    "input_modified": {
        "en": "{title}: changes its input `{name}` in place (input: {case}): the caller's tensor is different afterwards. Compute new tensors instead of writing into the arguments.",  # noqa: E501
        "zh": "{title}：原地修改了输入 `{name}`（输入：{case}）：调用之后，调用者手里的张量变了。请计算新的张量，而不是往参数里写。",  # noqa: E501
    },
    # ---- causal masks --------------------------------------------------------------------------------
    "diagonal_masked": {
        "en": "{title}: the diagonal is masked too (input: {case}). A token may attend to itself: only the positions strictly above the diagonal are the future.",  # noqa: E501
        "zh": "{title}：对角线也被遮蔽了（输入：{case}）。每个词元（token）可以关注它自己：只有对角线以上的位置才是未来。",  # noqa: E501
    },
    "future_open": {
        "en": "{title}: the future is left open (input: {case}): positions above the diagonal still get weight.",
        "zh": "{title}：未来的位置没有被遮住（输入：{case}）：对角线以上仍然有权重。",
    },
    "mask_inverted": {
        "en": "{title}: the mask is inverted (input: {case}): True must mark the hidden future (above the diagonal), but yours marks the visible positions.",  # noqa: E501
        "zh": "{title}：遮蔽矩阵反了（输入：{case}）：True 应当标记被隐藏的未来位置（对角线以上），你的却标记了可见的位置。",  # noqa: E501
    },
    "mask_transposed": {
        "en": "{title}: the mask hides the past instead of the future (input: {case}): it is transposed. Row i is the query, column j the key.",  # noqa: E501
        "zh": "{title}：遮住的是过去而不是未来（输入：{case}），遮蔽矩阵被转置了。第 i 行是查询（query），第 j 列是键（key）。",  # noqa: E501
    },
    "not_renormalized": {
        "en": "{title}: the future is zeroed but the rows are not renormalized (input: {case}): they sum to less than 1.",  # noqa: E501
        "zh": "{title}：未来位置已经置零，但没有重新归一化（输入：{case}），每行的和小于 1。",
    },
    "batch_dims": {
        "en": "{title}: works for one (T, T) matrix but not for a batch (input: {case}): leading batch dimensions must be left alone.",  # noqa: E501
        "zh": "{title}：单个 (T, T) 矩阵没问题，但批量输入出错（输入：{case}）：前面的批次维度不应受影响。",
    },
    # ---- scores and softmax --------------------------------------------------------------------------
    "softmax_dim": {
        "en": "{title}: softmax over the wrong dimension (input: {case}): your columns sum to 1, not your rows.",
        "zh": "{title}：softmax 用错了维度（输入：{case}）：现在是每一列的和为 1，而不是每一行。",
    },
    "scale_missing": {
        "en": "{title}: the 1/sqrt(d_k) scaling is missing (input: {case}).",
        "zh": "{title}：缺少 1/sqrt(d_k) 缩放（输入：{case}）。",
    },
    "scale_twice": {
        "en": "{title}: the scores are scaled twice, i.e. divided by d_k instead of sqrt(d_k) (input: {case}).",
        "zh": "{title}：分数被缩放了两次，相当于除以 d_k 而不是 sqrt(d_k)（输入：{case}）。",
    },
    "scale_inverted": {
        "en": "{title}: the scores are multiplied by sqrt(d_k) instead of divided (input: {case}).",
        "zh": "{title}：分数被乘以了 sqrt(d_k)，应当是除以（输入：{case}）。",
    },
    "scale_uses_T": {
        "en": "{title}: the scale uses the number of tokens instead of the key dimension d_k (input: {case}).",
        "zh": "{title}：缩放用的是词元个数，而不是键的维度 d_k（输入：{case}）。",
    },
    "masked_with_zero": {
        "en": "{title}: masked scores were set to 0 instead of -inf (input: {case}). exp(0) = 1, so the future still gets weight.",  # noqa: E501
        "zh": "{title}：被遮蔽的分数设成了 0 而不是 -inf（输入：{case}）。exp(0) = 1，未来位置仍会分到权重。",
    },
    "nan_rows": {
        "en": "{title}: fully masked rows are NaN (input: {case}): softmax over a row of only -inf is 0/0.",
        "zh": "{title}：被完全遮蔽的行变成了 NaN（输入：{case}）：对全是 -inf 的一行做 softmax 相当于 0/0。",
    },
    "fully_masked_not_zero": {
        "en": "{title}: fully masked rows should be all zeros, but yours are not (input: {case}); a large negative number instead of -inf spreads them evenly over the hidden keys.",  # noqa: E501
        "zh": "{title}：被完全遮蔽的行应当全为 0，你的却不是（输入：{case}）；用一个很大的负数代替 -inf，会把权重平均分给被隐藏的键。",  # noqa: E501
    },
    "padding_ignored": {
        "en": "{title}: the key padding mask is ignored (input: {case}): padded keys still get weight.",
        "zh": "{title}：忽略了键填充遮蔽（key padding mask）（输入：{case}），填充位置仍然分到权重。",
    },
    "padding_wrong_axis": {
        "en": "{title}: the padding mask hides queries (rows) instead of keys (columns) (input: {case}).",
        "zh": "{title}：填充遮蔽隐藏的是查询（行）而不是键（列）（输入：{case}）。",
    },
    "padded_queries_zeroed": {
        "en": "{title}: you zeroed the rows of padded queries (input: {case}). Only rows with no visible key are zero; a padded query still sees the real tokens before it (its output is ignored later anyway).",  # noqa: E501
        "zh": "{title}：你把填充位置对应的查询行置零了（输入：{case}）。只有没有任何可见键的行才应为 0；填充位置的查询仍能看到它前面的真实词元（反正它的输出之后会被忽略）。",  # noqa: E501
    },
    # ---- dropout -------------------------------------------------------------------------------------
    "dropout_scaled_by_p": {
        "en": "{title}: kept values are scaled by 1/p instead of 1/(1-p) (p={p}). A value is kept with probability 1-p.",  # noqa: E501
        "zh": "{title}：保留下来的值被乘以了 1/p，应当是 1/(1-p)（p={p}）。每个值以 1-p 的概率被保留。",
    },
    "dropout_not_scaled": {
        "en": "{title}: kept values are not rescaled (p={p}), so the expected value shrinks by (1 - p).",
        "zh": "{title}：保留下来的值没有重新缩放（p={p}），期望值因此缩小为原来的 (1 - p) 倍。",
    },
    "dropout_wrong_scale": {
        "en": "{title}: each kept value must be x/(1-p) (p={p}); yours are x times {ratio} on average.",
        "zh": "{title}：每个保留下来的值应为 x/(1-p)（p={p}）；你的结果平均是 x 的 {ratio} 倍。",
    },
    "dropout_in_eval": {
        "en": "{title}: dropout is still active in evaluation mode (input: {case}). Outside training it must do nothing.",  # noqa: E501
        "zh": "{title}：评估模式下丢弃（dropout）仍在起作用（输入：{case}）。不训练时它什么都不应做。",
    },
    "dropout_rate_inverted": {
        "en": "{title}: about {frac} of the values were zeroed with p={p}: p is the probability of dropping, not of keeping.",  # noqa: E501
        "zh": "{title}：p={p} 时约有 {frac} 的值被置零：p 是丢弃的概率，不是保留的概率。",
    },
    "dropout_rate_wrong": {
        "en": "{title}: about {frac} of the values were zeroed, expected about {expected} (p={p}).",
        "zh": "{title}：约有 {frac} 的值被置零，应当约为 {expected}（p={p}）。",
    },
    "dropout_default_rate": {
        "en": "{title}: about half of the weights are dropped whatever dropout you pass ({fracs}): the rate is stuck at 0.5, the default of `nn.Dropout()`.",  # noqa: E501
        "zh": "{title}：无论传入的 dropout 是多少，都有大约一半的权重被丢弃（{fracs}）：丢弃率固定在 0.5，这正是 `nn.Dropout()` 的默认值。",  # noqa: E501
    },
    "dropout_rate_fixed": {
        "en": "{title}: the dropped fraction does not follow the `dropout` argument ({fracs}): the rate is hard-coded.",
        "zh": "{title}：被丢弃的比值不随 `dropout` 参数变化（{fracs}）：丢弃率被写死了。",
    },
    "layers_not_followed": {
        "en": "{title}: the output does not follow W_query, W_key, W_value (input: {case}): right with the weights the module was built with, wrong once the checker set them to others; forward must read its layers on every call (weights copied in __init__ go stale after one optimizer step).",  # noqa: E501
        "zh": "{title}：输出不随 W_query、W_key、W_value 变化（输入：{case}）：用模块构造时的权重是对的，检查器把权重换成别的之后就错了；forward 每次调用都必须读取它的层（在 __init__ 里复制的权重，优化器走一步之后就过时了）。",  # noqa: E501
    },
    "dropout_missing": {
        "en": "{title}: with dropout={p} in training mode nothing is ever dropped (input: {case}).",
        "zh": "{title}：训练模式下 dropout={p}，却从来没有任何东西被丢弃（输入：{case}）。",
    },
    "dropout_mask_shared": {
        "en": "{title}: the same dropout mask is reused along {dims} (p={p}): every entry must be dropped independently.",  # noqa: E501
        "zh": "{title}：沿着 {dims} 重复使用了同一个丢弃掩码（p={p}）：每个元素都应当被独立地丢弃。",
    },
    "dropout_on_output": {
        "en": "{title}: dropout hits the context vectors (the layer's output), not the attention weights (p={p}).",
        "zh": "{title}：dropout 作用在了上下文向量（层的输出）上，而不是注意力权重上（p={p}）。",
    },
    "dropout_after_out_proj": {
        "en": "{title}: dropout is applied after `out_proj`, not to the attention weights (p={p}).",
        "zh": "{title}：dropout 用在了 `out_proj` 之后，而不是注意力权重上（p={p}）。",
    },
    "dropout_on_scores": {
        "en": "{title}: dropout acts before the softmax (on the scores, queries or keys), not on the attention weights (p={p}): a dropped score becomes 0 (NaN where it was -inf), which the softmax still turns into a weight, so nothing is really dropped.",  # noqa: E501
        "zh": "{title}：dropout 作用在了 softmax 之前（分数、查询或键上），而不是注意力权重上（p={p}）：被丢弃的分数变成 0（原本是 -inf 的地方变成 NaN），softmax 仍会把它变成一个权重，所以其实什么也没有被丢弃。",  # noqa: E501
    },
    "dropout_also_on_output": {
        "en": "{title}: dropout is applied twice, to the attention weights and again to the context vectors (p={p}); only the weights are dropped.",  # noqa: E501
        "zh": "{title}：dropout 用了两次，先作用于注意力权重，又作用于上下文向量（p={p}）；只应丢弃权重。",
    },
    "dropout_renormalized": {
        "en": "{title}: after dropout each row of weights was rescaled to sum to 1 again (p={p}): that replaces dropout's own 1/(1-p) scale by one that changes from row to row. Use the weights as dropout returns them.",  # noqa: E501
        "zh": "{title}：dropout 之后又把每一行权重重新缩放成和为 1（p={p}）：这用一个逐行变化的缩放取代了 dropout 自带的 1/(1-p) 缩放。请直接使用 dropout 返回的权重。",  # noqa: E501
    },
    "dropout_on_input": {
        "en": "{title}: dropout hits the input x (or the values), not the attention weights (p={p}).",
        "zh": "{title}：dropout 作用在了输入 x（或值向量）上，而不是注意力权重上（p={p}）。",
    },
    # ---- attention modules ---------------------------------------------------------------------------
    "mask_wrong_size": {
        "en": "{title}: fails when num_tokens < context_length (input: {case}, context_length={context_length}): the stored mask is context_length wide.",  # noqa: E501
        "zh": "{title}：当 num_tokens < context_length 时出错（输入：{case}，context_length={context_length}）：保存的遮蔽矩阵有 context_length 那么宽。",  # noqa: E501
    },
    "scale_uses_d_out": {
        "en": "{title}: the scores are scaled by 1/sqrt(d_out) instead of 1/sqrt(head_dim) (input: {case}). Each head's keys have head_dim = d_out // num_heads features.",  # noqa: E501
        "zh": "{title}：分数除以的是 sqrt(d_out)，应当是 sqrt(head_dim)（输入：{case}）。每个头的键只有 head_dim = d_out // num_heads 个特征。",  # noqa: E501
    },
    "scale_uses_d_in": {
        "en": "{title}: the scores are scaled by 1/sqrt(d_in), the width of the input x, instead of 1/sqrt(d_k), the width of the keys (of each head, with several heads) (input: {case}). The two are equal only when d_in = d_k.",  # noqa: E501
        "zh": "{title}：分数除以的是 sqrt(d_in)，即输入 x 的宽度，应当是 sqrt(d_k)，即键的宽度（有多个头时是每个头的键）（输入：{case}）。两者只在 d_in = d_k 时相等。",  # noqa: E501
    },
    # ---- data ----------------------------------------------------------------------------------------
}

# The exact fix, shown only when the same mistake comes back (``check_*``) and kept apart in ``grade()``.
FIXES: dict[str, dict[str, str]] = {
    "input_modified": {
        "en": "`queries = queries / queries.shape[-1] ** 0.5` (a new tensor), not `queries /= ...`, `queries.div_(...)` or `queries[...] = ...`.",  # noqa: E501
        "zh": "`queries = queries / queries.shape[-1] ** 0.5`（得到新张量），而不是 `queries /= ...`、`queries.div_(...)` 或 `queries[...] = ...`。",  # noqa: E501
    },
    "diagonal_masked": {"en": "Use `torch.triu(..., diagonal=1)`.", "zh": "请用 `torch.triu(..., diagonal=1)`。"},
    "future_open": {
        "en": "Apply the causal mask `torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)` before the softmax/renormalization.",  # noqa: E501
        "zh": "在 softmax 或重新归一化之前应用因果遮蔽 `torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)`。",
    },
    "mask_inverted": {
        "en": "Use `torch.triu(..., diagonal=1)`, or negate yours with `~`.",
        "zh": "请用 `torch.triu(..., diagonal=1)`，或者用 `~` 对你的结果取反。",
    },
    "mask_transposed": {
        "en": "Hide j > i: `torch.triu(..., diagonal=1)`, not `torch.tril`.",
        "zh": "隐藏 j > i 的位置：用 `torch.triu(..., diagonal=1)`，而不是 `torch.tril`。",
    },
    "not_renormalized": {
        "en": "Divide each row by its sum: `masked / masked.sum(dim=-1, keepdim=True)`.",
        "zh": "把每一行除以它的和：`masked / masked.sum(dim=-1, keepdim=True)`。",
    },
    "batch_dims": {
        "en": "Count dimensions from the end: `dim=-1`, `transpose(-2, -1)`, `shape[-1]`.",
        "zh": "从末尾数维度：`dim=-1`、`transpose(-2, -1)`、`shape[-1]`。",
    },
    "softmax_dim": {
        "en": "Use `torch.softmax(..., dim=-1)` (over the keys).",
        "zh": "请用 `torch.softmax(..., dim=-1)`（在键的维度上）。",
    },
    "scale_missing": {
        "en": "Divide the scores by `keys.shape[-1] ** 0.5` before the softmax.",
        "zh": "在 softmax 之前把分数除以 `keys.shape[-1] ** 0.5`。",
    },
    "scale_twice": {"en": "Keep a single `/ keys.shape[-1] ** 0.5`.", "zh": "只保留一次 `/ keys.shape[-1] ** 0.5`。"},
    "scale_inverted": {"en": "Use `/ keys.shape[-1] ** 0.5`.", "zh": "请用 `/ keys.shape[-1] ** 0.5`。"},
    "scale_uses_T": {
        "en": "d_k is `keys.shape[-1]`, not `keys.shape[0]` or `keys.shape[-2]`.",
        "zh": "d_k 是 `keys.shape[-1]`，不是 `keys.shape[0]` 或 `keys.shape[-2]`。",
    },
    "masked_with_zero": {
        "en": "Use `masked_fill(mask, float('-inf'))` before the softmax.",
        "zh": "在 softmax 之前用 `masked_fill(mask, float('-inf'))`。",
    },
    "nan_rows": {
        "en": "After the softmax: `weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)`.",
        "zh": "在 softmax 之后：`weights.masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)`。",
    },
    "fully_masked_not_zero": {
        "en": "Mask with `float('-inf')`, then `masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)`.",
        "zh": "用 `float('-inf')` 遮蔽，再 `masked_fill(hidden.all(dim=-1, keepdim=True), 0.0)`。",
    },
    "padding_ignored": {
        "en": "`hidden = causal | key_padding_mask.unsqueeze(-2)`.",
        "zh": "`hidden = causal | key_padding_mask.unsqueeze(-2)`。",
    },
    "padding_wrong_axis": {
        "en": "Use `key_padding_mask.unsqueeze(-2)`, shape (..., 1, T), so it applies to every row's columns.",
        "zh": "请用 `key_padding_mask.unsqueeze(-2)`，形状为 (..., 1, T)，这样它作用于每一行的各列。",
    },
    "padded_queries_zeroed": {
        "en": "Zero only the rows where `hidden.all(dim=-1, keepdim=True)`.",
        "zh": "只把 `hidden.all(dim=-1, keepdim=True)` 为 True 的行置零。",
    },
    "dropout_scaled_by_p": {"en": "Divide the kept values by `(1 - p)`.", "zh": "把保留下来的值除以 `(1 - p)`。"},
    "dropout_not_scaled": {"en": "Return `x * keep / (1 - p)`.", "zh": "返回 `x * keep / (1 - p)`。"},
    "dropout_wrong_scale": {
        "en": "Return `x * keep / (1 - p)` with `keep = torch.rand_like(x) >= p`.",
        "zh": "返回 `x * keep / (1 - p)`，其中 `keep = torch.rand_like(x) >= p`。",
    },
    "dropout_in_eval": {
        "en": "Use `nn.Dropout` (it stops after `.eval()`), or pass `training=self.training` to `F.dropout`; by hand: `if not training: return x`.",  # noqa: E501
        "zh": "用 `nn.Dropout`（`.eval()` 之后它自动停止），或给 `F.dropout` 传 `training=self.training`；手写时：`if not training: return x`。",  # noqa: E501
    },
    "dropout_rate_inverted": {
        "en": "Keep a value where `torch.rand_like(x) >= p`.",
        "zh": "在 `torch.rand_like(x) >= p` 的位置保留数值。",
    },
    "dropout_rate_wrong": {
        "en": "`keep = torch.rand_like(x) >= p` keeps each value with probability 1 - p.",
        "zh": "`keep = torch.rand_like(x) >= p` 以 1 - p 的概率保留每个值。",
    },
    "dropout_default_rate": {
        "en": "In `__init__`: `self.dropout = nn.Dropout(dropout)`.",
        "zh": "在 `__init__` 里写 `self.dropout = nn.Dropout(dropout)`。",
    },
    "dropout_rate_fixed": {
        "en": "In `__init__`: `self.dropout = nn.Dropout(dropout)`.",
        "zh": "在 `__init__` 里写 `self.dropout = nn.Dropout(dropout)`。",
    },
    "layers_not_followed": {
        "en": "In `forward`: `queries = self.W_query(x)` (and keys, values) on every call, no weights kept from `__init__`.",  # noqa: E501
        "zh": "在 `forward` 里每次调用都写 `queries = self.W_query(x)`（键、值同理），不保留 `__init__` 里的权重。",
    },
    "dropout_missing": {
        "en": "`attn_weights = self.dropout(attn_weights)` right after the softmax.",
        "zh": "在 softmax 之后紧接着写 `attn_weights = self.dropout(attn_weights)`。",
    },
    "dropout_mask_shared": {
        "en": "Draw the mask with the full shape of x: `torch.rand_like(x) >= p`.",
        "zh": "按 x 的完整形状生成丢弃掩码：`torch.rand_like(x) >= p`。",
    },
    "dropout_on_output": {
        "en": "`attn_weights = self.dropout(attn_weights)` right after the softmax, and no dropout on `context_vec`.",
        "zh": "在 softmax 之后写 `attn_weights = self.dropout(attn_weights)`，`context_vec` 上不要再做 dropout。",
    },
    "dropout_after_out_proj": {
        "en": "`attn_weights = self.dropout(attn_weights)` right after the softmax; `out_proj` comes last, without dropout.",  # noqa: E501
        "zh": "在 softmax 之后写 `attn_weights = self.dropout(attn_weights)`；`out_proj` 放在最后，不加 dropout。",
    },
    "dropout_on_scores": {
        "en": "`attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))`: dropout after the softmax, on the weights.",  # noqa: E501
        "zh": "`attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))`：dropout 放在 softmax 之后，作用于权重。",  # noqa: E501
    },
    "dropout_also_on_output": {
        "en": "Keep `attn_weights = self.dropout(attn_weights)` after the softmax and remove the dropout on `context_vec`.",  # noqa: E501
        "zh": "保留 softmax 之后的 `attn_weights = self.dropout(attn_weights)`，去掉作用在 `context_vec` 上的 dropout。",  # noqa: E501
    },
    "dropout_renormalized": {
        "en": "`attn_weights = self.dropout(attn_weights)` and nothing after it: `nn.Dropout` already scales the kept weights by 1/(1-p).",  # noqa: E501
        "zh": "写 `attn_weights = self.dropout(attn_weights)`，之后不要再处理：`nn.Dropout` 已经把保留的权重乘以 1/(1-p)。",  # noqa: E501
    },
    "dropout_on_input": {
        "en": "`attn_weights = self.dropout(attn_weights)` right after the softmax, and leave x alone.",
        "zh": "在 softmax 之后写 `attn_weights = self.dropout(attn_weights)`，不要改动 x。",
    },
    "mask_wrong_size": {
        "en": "Slice the stored mask: `self.mask[:num_tokens, :num_tokens]`.",
        "zh": "截取保存的遮蔽矩阵：`self.mask[:num_tokens, :num_tokens]`。",
    },
    "scale_uses_d_out": {
        "en": "Divide by `keys.shape[-1] ** 0.5` (= head_dim ** 0.5).",
        "zh": "除以 `keys.shape[-1] ** 0.5`（即 head_dim ** 0.5）。",
    },
    "scale_uses_d_in": {
        "en": "Divide by `keys.shape[-1] ** 0.5` (d_k: the keys' width, head_dim with several heads), not by the width of x (d_in).",  # noqa: E501
        "zh": "除以 `keys.shape[-1] ** 0.5`（d_k 是键的宽度，有多个头时即 head_dim），而不是 x 的宽度（d_in）。",
    },
}

# Extra words around a line: the printed-output header and the "same mistake again" footer.
WORDS: dict[str, dict[str, str]] = {
    "printed": {"en": "your code printed:", "zh": "你的代码输出了："},
    "more_lines": {"en": "... ({n} more lines)", "zh": "……（还有 {n} 行）"},
    "fix_next": {
        "en": "(Same mistake again? The next check shows the fix.)",
        "zh": "（如果再犯同样的错误，下一次检查会给出改法。）",
    },
    "fix": {"en": "Fix:", "zh": "改法："},
    "dims": {"en": "the {name} dimension", "zh": "{name}维度"},
    "tampered": {"en": "0 points: checkers redefined or patched: {names}", "zh": "0 分：检查器被改动：{names}"},
}
