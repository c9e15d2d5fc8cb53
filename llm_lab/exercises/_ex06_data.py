# ruff: noqa: E501  (the bilingual messages read better unbroken)
"""Notebook 06: sliding windows over token ids, and token plus positional embeddings."""

from __future__ import annotations

import torch
from torch import nn

from ._core import Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same
from ._harness import call, last_observed
from ._observe import called
from ._shared import gen


def _windows(ids: torch.Tensor, max_length: int, stride: int, starts=None) -> torch.Tensor:
    """(2, n_windows, max_length): inputs and targets stacked."""
    if starts is None:
        w = ids.unfold(0, max_length + 1, stride)
    else:
        w = torch.stack([ids[s : s + max_length + 1] for s in starts])
    return torch.stack([w[:, :-1], w[:, 1:]])


def _check_window_count(got, want, case, max_length) -> None:
    """``got``: inputs or targets (n_windows, max_length), ``want`` the right ones: the right windows, but one
    too few or too many, is named (each tensor on its own: the two may have different counts)."""
    expected, n_got = want.shape[0], got.shape[0] if got.dim() == 2 else -1
    if got.dim() == 2 and n_got != expected and got.shape[1] == max_length:
        common = min(n_got, expected)
        if same(got[:common], want[:common]):
            hint = "missing_last_window" if n_got < expected else "extra_window"
            raise Fail(hint, case=case, got=n_got, expected=expected)


def _cut_with_unfold(observed: list) -> None:
    """The statement: no Python loop, ``Tensor.unfold``. ``observed``: (case, record) of every call, judged once
    all values are right (a wrong window is named first)."""
    for case, record in observed:
        strided = called(record, "as_strided")
        if strided:
            raise Fail("windows_as_strided", ref=strided, case=case)
        if not called(record, "unfold"):
            raise Fail("windows_without_unfold", case=case)


def body_windows(fn) -> list[str]:
    g = gen(909)
    cases, observed = [], []
    for n_tokens, max_length, stride in ((20, 4, 4), (20, 4, 1), (20, 3, 2), (20, 4, 5), (7, 6, 3), (20, 1, 1)):
        ids = torch.randint(0, 50257, (n_tokens,), generator=g)
        case = f"len(token_ids)={n_tokens}, max_length={max_length}, stride={stride}"
        token_ids = ids.tolist()
        out = call(fn, token_ids, max_length, stride, case=case, observe=True)
        observed.append((case, last_observed()))
        if token_ids != ids.tolist():
            raise Fail("input_modified", name="token_ids", case=case)
        if out is None:
            raise Fail("returned_none", case=case)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Fail("not_pair", got=type(out).__name__, case=case)
        inputs, targets = (as_tensor(t, case) for t in out)
        want = _windows(ids, max_length, stride)
        w = ids.unfold(0, max_length + 1, stride)
        variants = [
            ("targets_not_shifted", lambda w=w: torch.stack([w[:, :-1], w[:, :-1]])),
            ("targets_swapped", lambda w=w: torch.stack([w[:, 1:], w[:, :-1]])),
            ("stride_ignored", lambda ids=ids, m=max_length: _windows(ids, m, 1)),
            ("missing_last_window", lambda ids=ids, m=max_length, s=stride: _windows(
                ids, m, s, range(0, len(ids) - m - 1, s))),
        ]
        if inputs.shape == targets.shape:
            got = torch.stack([inputs, targets])
            n_got = got.shape[1] if got.dim() == 3 else -1
            diagnose(got, variants, want, case=case, got=n_got, expected=want.shape[1])
        for t, wt in ((inputs, want[0]), (targets, want[1])):
            _check_window_count(t, wt, case, max_length)
        for t, wt in ((inputs, want[0]), (targets, want[1])):
            compare(t, wt, case)
            if t.dtype != torch.int64:  # nn.Embedding takes int32 too, but the dataset and the book use int64
                raise Fail("ids_not_int64", got=str(t.dtype), case=case)
        cases.append(f"len={n_tokens} max_length={max_length} stride={stride}")
    _cut_with_unfold(observed)
    return cases


def _positions_probe(fn, tok_emb, pos_emb) -> str | None:
    """After an IndexError: which position mistake, if any, explains it? Asked on a short input whose token ids
    are also valid positions, where 1-based positions and positions looked up by token id stay in range."""
    ids = torch.randint(0, pos_emb.num_embeddings, (2, pos_emb.num_embeddings - 3), generator=gen(1011))
    try:
        out = as_tensor(call(fn, ids.clone(), tok_emb, pos_emb, case="probe"), "probe")
    except Fail:
        return None
    n = ids.shape[1]
    for hint, want in (("positions_one_based", tok_emb(ids) + pos_emb(torch.arange(1, n + 1))),
                       ("positions_from_ids", tok_emb(ids) + pos_emb(ids))):
        if same(out, want):
            return hint
    return None


def _embedding_case(fn, ids, tok_emb, pos_emb, case, *, short: bool, passed_full: bool):
    weights = (tok_emb.weight.detach().clone(), pos_emb.weight.detach().clone())
    token_ids = ids.clone()
    try:
        out = call(fn, token_ids, tok_emb, pos_emb, case=case)
    except LearnerError as err:
        if short and passed_full:
            raise Fail("positions_wrong_length", case=case) from None
        hint = _positions_probe(fn, tok_emb, pos_emb) if isinstance(err.exc, IndexError) else None
        if hint:
            raise Fail(hint, case=case) from None
        raise
    for name, before, after in (("token_ids", ids, token_ids), ("tok_emb", weights[0], tok_emb.weight),
                                ("pos_emb", weights[1], pos_emb.weight)):
        if not same(after, before, atol=0.0, rtol=0.0):
            raise Fail("input_modified", name=name, case=case)
    return out


def body_input_embeddings(fn) -> list[str]:
    g = gen(1010)
    vocab, context_length, d = 50, 8, 4
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1010)
        tok_emb, pos_emb = nn.Embedding(vocab, d), nn.Embedding(context_length, d)
    cases = []
    passed_full = False
    for shape, high in (((2, 8), context_length), ((2, 5), context_length), ((2, 5), vocab), ((1, 1), vocab),
                        ((3, 8), vocab)):
        ids = torch.randint(0, high, shape, generator=g)
        case = f"token_ids.shape={tuple(shape)}, context_length={context_length}"
        short = shape[1] < context_length
        out = _embedding_case(fn, ids, tok_emb, pos_emb, case, short=short, passed_full=passed_full)
        want = tok_emb(ids) + pos_emb(torch.arange(shape[1]))
        variants = [
            ("positions_missing", lambda ids=ids: tok_emb(ids)),
            ("positions_from_ids", lambda ids=ids: tok_emb(ids) + pos_emb(ids)),
            ("positions_one_based", lambda ids=ids, n=shape[1]: tok_emb(ids) + pos_emb(torch.arange(1, n + 1))),
        ]
        compare(out, want, case, variants)
        passed_full = passed_full or not short
        cases.append(str(tuple(shape)))
    return cases


_MESSAGES = {
    "ids_not_int64": {
        "en": "{title}: the values are right but the dtype is {got} (input: {case}); token ids are int64 (torch.long), as the dataset and nn.Embedding's usual input.",
        "zh": "{title}：数值是对的，但数据类型是 {got}（输入：{case}）；词元 ID 应为 int64（torch.long），与数据集和 nn.Embedding 的常规输入一致。",
    },
    "windows_without_unfold": {
        "en": "{title}: right windows, but not cut with `Tensor.unfold` (input: {case}): the exercise asks for no Python loop; one `unfold` call cuts every window at once.",
        "zh": "{title}：窗口是对的，但不是用 `Tensor.unfold` 切出来的（输入：{case}）：这道练习要求不用 Python 循环；一次 `unfold` 调用就能切出所有窗口。",
    },
    "windows_as_strided": {
        "en": "{title}: right windows, but cut with `{ref}` (input: {case}): the exercise asks for `Tensor.unfold`, which checks the sizes and strides that `as_strided` leaves to you.",
        "zh": "{title}：窗口是对的，但用的是 `{ref}`（输入：{case}）：这道练习要求用 `Tensor.unfold`，它会替你检查 `as_strided` 需要你自己保证的尺寸和步长。",
    },
}
# The statement: `unfold`, no loop. The fixes say it that way (the global ones are written for a loop).
_UNFOLD = "windows = ids.unfold(0, max_length + 1, stride)"
_FIXES = {
    "ids_not_int64": {
        "en": "`ids = torch.tensor(token_ids, dtype=torch.long)` before the `unfold`.",
        "zh": "在 `unfold` 之前写 `ids = torch.tensor(token_ids, dtype=torch.long)`。",
    },
    "targets_not_shifted": {
        "en": f"`{_UNFOLD}`, then inputs `windows[:, :-1]` and targets `windows[:, 1:]`, one token later.",
        "zh": f"`{_UNFOLD}`，然后输入取 `windows[:, :-1]`，目标取晚一个词元的 `windows[:, 1:]`。",
    },
    "targets_swapped": {
        "en": "Return `(windows[:, :-1], windows[:, 1:])`: inputs first.",
        "zh": "返回 `(windows[:, :-1], windows[:, 1:])`：输入在前。",
    },
    "stride_ignored": {
        "en": f"`{_UNFOLD}`: the third argument is the step between window starts.",
        "zh": f"`{_UNFOLD}`：第三个参数是相邻窗口起点之间的步长。",
    },
    "missing_last_window": {
        "en": f"`{_UNFOLD}` on all the ids: each window is max_length + 1 tokens, inputs plus the next-token target.",
        "zh": f"对全部词元 ID 调用 `{_UNFOLD}`：每个窗口有 max_length + 1 个词元，即输入加上下一个词元的目标。",
    },
    "extra_window": {
        "en": f"Cut inputs and targets from the same `{_UNFOLD}`: windows of max_length + 1 tokens, so no window runs past the last target.",
        "zh": f"输入和目标都从同一个 `{_UNFOLD}` 中切出：窗口长 max_length + 1 个词元，不会有窗口越过最后一个目标。",
    },
    "windows_without_unfold": {
        "en": f"`ids = torch.tensor(token_ids, dtype=torch.long)`; `{_UNFOLD}`; return `windows[:, :-1], windows[:, 1:]`.",
        "zh": f"`ids = torch.tensor(token_ids, dtype=torch.long)`；`{_UNFOLD}`；返回 `windows[:, :-1], windows[:, 1:]`。",
    },
    "windows_as_strided": {
        "en": f"`{_UNFOLD}` instead of `as_strided`.",
        "zh": f"用 `{_UNFOLD}` 代替 `as_strided`。",
    },
    "input_modified": {
        "en": "`ids = torch.tensor(token_ids, dtype=torch.long)` builds a tensor of its own: cut that, and leave the list `token_ids` as it came.",
        "zh": "`ids = torch.tensor(token_ids, dtype=torch.long)` 会得到一个独立的张量：切分它，不要改动传进来的列表 `token_ids`。",
    },
}
_EMBEDDING_FIXES = {
    "input_modified": {
        "en": "`return tok_emb(token_ids) + pos_emb(positions)`: a new tensor, with `token_ids` and both embedding tables left as they came.",
        "zh": "`return tok_emb(token_ids) + pos_emb(positions)`：得到一个新张量，`token_ids` 和两个嵌入表都保持原样。",
    },
}

# This module's own hint texts (used by no other exercise): every record below gets them (_registry).
MODULE_MESSAGES = {
    "not_pair": {
        "en": "{title}: expected a pair (input_ids, target_ids), got {got} (input: {case}).",
        "zh": "{title}：应当返回一对 (input_ids, target_ids)，实际得到 {got}（输入：{case}）。",
    },
    "targets_not_shifted": {
        "en": "{title}: the targets equal the inputs (input: {case}); the target is the next token.",
        "zh": "{title}：目标（targets）和输入完全相同（输入：{case}）；目标应当是下一个词元。",
    },
    "targets_swapped": {
        "en": "{title}: inputs and targets are swapped (input: {case}); the target window starts one token after the input window.",
        "zh": "{title}：输入和目标弄反了（输入：{case}）；目标窗口应当比输入窗口晚一个词元开始。",
    },
    "stride_ignored": {
        "en": "{title}: the stride is ignored (input: {case}): your windows start at every token.",
        "zh": "{title}：忽略了步幅（stride）（输入：{case}）：你的窗口从每个词元都开始一次。",
    },
    "missing_last_window": {
        "en": "{title}: the last window is missing (input: {case}): {got} windows instead of {expected}. A window needs max_length + 1 tokens.",
        "zh": "{title}：少了最后一个窗口（输入：{case}）：得到 {got} 个，应为 {expected} 个。每个窗口需要 max_length + 1 个词元。",
    },
    "extra_window": {
        "en": "{title}: {got} windows instead of {expected} (input: {case}); a window needs max_length + 1 tokens (inputs plus the next-token target).",
        "zh": "{title}：得到 {got} 个窗口，应为 {expected} 个（输入：{case}）；每个窗口需要 max_length + 1 个词元（输入再加上下一个词元作为目标）。",
    },
    "positions_missing": {
        "en": "{title}: the positional embeddings are missing (input: {case}).",
        "zh": "{title}：缺少位置嵌入（positional embeddings）（输入：{case}）。",
    },
    "positions_from_ids": {
        "en": "{title}: the position embedding was looked up with the token ids (input: {case}); positions are 0, 1, ..., num_tokens - 1.",
        "zh": "{title}：用词元 ID 去查了位置嵌入（输入：{case}）；位置应当是 0, 1, ..., num_tokens - 1。",
    },
    "positions_one_based": {
        "en": "{title}: the positions start at 1 (input: {case}); Python and nn.Embedding count from 0: positions are 0, 1, ..., num_tokens - 1.",
        "zh": "{title}：位置从 1 开始了（输入：{case}）；Python 和 nn.Embedding 都从 0 开始计数：位置应当是 0, 1, ..., num_tokens - 1。",
    },
    "positions_wrong_length": {
        "en": "{title}: fails when num_tokens < context_length (input: {case}); take the positions of the actual input, not of the whole context.",
        "zh": "{title}：当 num_tokens < context_length 时出错（输入：{case}）；位置应取实际输入的长度，而不是整个上下文长度。",
    },
}
MODULE_FIXES = {
    "targets_not_shifted": {"en": "`token_ids[i + 1 : i + max_length + 1]`.", "zh": "`token_ids[i + 1 : i + max_length + 1]`。"},
    "targets_swapped": {"en": "Return `(input_ids, target_ids)` in that order.", "zh": "按 `(input_ids, target_ids)` 的顺序返回。"},
    "stride_ignored": {"en": "Window i starts at token i * stride: `range(0, len(token_ids) - max_length, stride)`.", "zh": "第 i 个窗口从第 i * stride 个词元开始：`range(0, len(token_ids) - max_length, stride)`。"},
    "missing_last_window": {"en": "`range(0, len(token_ids) - max_length, stride)`.", "zh": "`range(0, len(token_ids) - max_length, stride)`。"},
    "extra_window": {"en": "`range(0, len(token_ids) - max_length, stride)`.", "zh": "`range(0, len(token_ids) - max_length, stride)`。"},
    "positions_missing": {"en": "Add `pos_emb(torch.arange(num_tokens))` to the token embeddings.", "zh": "把 `pos_emb(torch.arange(num_tokens))` 加到词元嵌入上。"},
    "positions_from_ids": {"en": "`pos_emb(torch.arange(num_tokens))`.", "zh": "`pos_emb(torch.arange(num_tokens))`。"},
    "positions_one_based": {"en": "`pos_emb(torch.arange(num_tokens))`, not `torch.arange(1, num_tokens + 1)`.", "zh": "`pos_emb(torch.arange(num_tokens))`，而不是 `torch.arange(1, num_tokens + 1)`。"},
    "positions_wrong_length": {"en": "`torch.arange(token_ids.shape[-1])`.", "zh": "`torch.arange(token_ids.shape[-1])`。"},
}


RECORDS = [
    Exercise(
        name="windows", notebook="06", body=body_windows, points=2, takes="function",
        signature="``fn(token_ids list[int], max_length, stride) -> (input_ids, target_ids)``, each int64 "
        "``(n_windows, max_length)``, cut with ``Tensor.unfold``.",
        hints=("targets_not_shifted", "targets_swapped", "stride_ignored", "missing_last_window", "extra_window",
               "ids_not_int64", "not_pair", "windows_without_unfold", "windows_as_strided", "input_modified"),
        references=("dataset.GPTDatasetV1", "dataset.create_dataloader_v1", "exercises._ex06_data._windows"),
        messages=_MESSAGES, fixes=_FIXES,
    ),
    Exercise(
        name="input_embeddings", notebook="06", body=body_input_embeddings, points=2, takes="function",
        signature="``fn(token_ids (B, T), tok_emb, pos_emb) -> (B, T, d)``: token plus positional embeddings.",
        hints=("positions_missing", "positions_from_ids", "positions_one_based", "positions_wrong_length",
               "input_modified"),
        fixes=_EMBEDDING_FIXES,
    ),
]
