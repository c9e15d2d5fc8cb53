# ruff: noqa: E501  (the bilingual messages read better unbroken)
"""Notebook 06: sliding windows over token ids, and token plus positional embeddings."""

from __future__ import annotations

import torch
from torch import nn

from ._core import Exercise, Fail, LearnerError, as_tensor, compare, diagnose, same
from ._harness import call
from ._shared import gen


def _windows(ids: torch.Tensor, max_length: int, stride: int, starts=None) -> torch.Tensor:
    """(2, n_windows, max_length): inputs and targets stacked."""
    if starts is None:
        w = ids.unfold(0, max_length + 1, stride)
    else:
        w = torch.stack([ids[s : s + max_length + 1] for s in starts])
    return torch.stack([w[:, :-1], w[:, 1:]])


def _check_window_count(got, want, case, max_length) -> None:
    expected, n_got = want.shape[1], got.shape[1] if got.dim() == 3 else -1
    if got.dim() == 3 and n_got != expected and got.shape[2] == max_length:
        common = min(n_got, expected)
        if same(got[:, :common], want[:, :common]):
            hint = "missing_last_window" if n_got < expected else "extra_window"
            raise Fail(hint, case=case, got=n_got, expected=expected)


def body_windows(fn) -> list[str]:
    g = gen(909)
    cases = []
    for n_tokens, max_length, stride in ((20, 4, 4), (20, 4, 1), (20, 3, 2), (20, 4, 5), (7, 6, 3), (20, 1, 1)):
        ids = torch.randint(0, 50257, (n_tokens,), generator=g)
        case = f"len(token_ids)={n_tokens}, max_length={max_length}, stride={stride}"
        out = call(fn, ids.tolist(), max_length, stride, case=case)
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
            _check_window_count(got, want, case, max_length)
        for t, wt in ((inputs, want[0]), (targets, want[1])):
            compare(t, wt, case)
            if t.dtype != torch.int64:  # nn.Embedding takes int32 too, but the dataset and the book use int64
                raise Fail("ids_not_int64", got=str(t.dtype), case=case)
        cases.append(f"len={n_tokens} max_length={max_length} stride={stride}")
    return cases


def _embedding_case(fn, ids, tok_emb, pos_emb, case, *, short: bool, passed_full: bool):
    try:
        return call(fn, ids.clone(), tok_emb, pos_emb, case=case)
    except LearnerError as err:
        if short and passed_full:
            raise Fail("positions_wrong_length", case=case) from None
        if isinstance(err.exc, IndexError):
            # positions past the table: 1..T when T = context_length, or token ids used as positions
            in_range = int(ids.max()) < pos_emb.num_embeddings
            raise Fail("positions_one_based" if in_range else "positions_from_ids", case=case) from None
        raise


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
}
_FIXES = {
    "ids_not_int64": {
        "en": "`torch.tensor(token_ids[i : i + max_length], dtype=torch.long)`.",
        "zh": "`torch.tensor(token_ids[i : i + max_length], dtype=torch.long)`。",
    },
}

RECORDS = [
    Exercise(
        name="windows", notebook="06", body=body_windows, points=2, takes="function",
        signature="``fn(token_ids list[int], max_length, stride) -> (input_ids, target_ids)``, each int64 "
        "``(n_windows, max_length)``.",
        hints=("targets_not_shifted", "targets_swapped", "stride_ignored", "missing_last_window", "extra_window",
               "ids_not_int64", "not_pair"),
        references=("dataset.GPTDatasetV1", "dataset.create_dataloader_v1"),
        messages=_MESSAGES, fixes=_FIXES,
    ),
    Exercise(
        name="input_embeddings", notebook="06", body=body_input_embeddings, points=2, takes="function",
        signature="``fn(token_ids (B, T), tok_emb, pos_emb) -> (B, T, d)``: token plus positional embeddings.",
        hints=("positions_missing", "positions_from_ids", "positions_one_based", "positions_wrong_length"),
    ),
]
