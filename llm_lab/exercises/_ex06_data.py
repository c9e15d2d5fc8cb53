"""Notebook 06: sliding windows that never cross an <|endoftext|> boundary, and the next-token loss from raw scores."""

from __future__ import annotations

import math

import torch

from ._core import Exercise, Fail, _num, as_tensor, compare, diagnose, same
from ._harness import call, last_observed
from ._observe import called_matching
from ._shared import gen
from ._texts_ex06_data import LOSS_FIXES as _LOSS_FIXES
from ._texts_ex06_data import LOSS_MESSAGES as _LOSS_MESSAGES

EOT = 50256  # GPT-2's <|endoftext|>


def _spans(ids: list, rule: str = "ends") -> list[tuple[int, int]]:
    """(begin, end) of each document in the stream ``ids``. ``rule``: ``"ends"`` (each <|endoftext|> closes the
    document before it and belongs to it), ``"starts"`` (it opens the next one), ``"dropped"`` (it belongs to none)."""
    spans, begin = [], 0
    for i, t in enumerate(ids):
        if t != EOT:
            continue
        if rule == "ends":
            spans.append((begin, i + 1))
            begin = i + 1
        elif rule == "starts":
            if i > begin:
                spans.append((begin, i))
            begin = i
        else:
            spans.append((begin, i))
            begin = i + 1
    if begin < len(ids):
        spans.append((begin, len(ids)))
    return spans


def _cut(ids: list, starts, max_length: int) -> torch.Tensor:
    """(2, n_windows, max_length): the inputs and targets of the windows starting at ``starts``, int64."""
    t = torch.tensor(ids, dtype=torch.long)
    w = [t[s : s + max_length + 1] for s in starts]
    w = torch.stack(w) if w else torch.empty(0, max_length + 1, dtype=torch.long)
    return torch.stack([w[:, :-1], w[:, 1:]])


def document_windows_ref(ids: list, max_length: int, stride: int, how: str = "ok") -> torch.Tensor:
    """The windows of every document, restarting at each one's first token and never reaching past its end;
    ``how``: a known wrong way (the mistakes' names)."""
    m, s = max_length, stride
    rule = {"separator_dropped": "dropped", "separator_starts_document": "starts"}.get(how, "ends")
    spans = _spans(ids, rule)
    if how == "unclosed_document_dropped":  # the documents kept only when an <|endoftext|> closes them
        spans = [(b, e) for b, e in spans if ids[e - 1] == EOT]
    if how == "unclosed_document_closed" and ids and ids[-1] != EOT:  # an <|endoftext|> of its own added
        return document_windows_ref([*ids, EOT], max_length, stride)
    if how == "window_crosses_document":
        starts = range(0, len(ids) - m, s)
    elif how == "stride_across_documents":  # one stride over the whole stream, windows inside one document kept
        starts = [st for st in range(0, len(ids) - m, s) if any(b <= st and st + m + 1 <= e for b, e in spans)]
    elif how == "target_crosses_document":  # the inputs inside the document, the last target after it
        starts = [st for b, e in spans for st in range(b, e - m + 1, s) if st + m + 1 <= len(ids)]
    elif how == "missing_last_window":
        starts = [st for b, e in spans for st in range(b, e - m - 1, s)]
    elif how == "one_window_document_skipped":  # `len(doc) > max_length + 1` where `>=` is meant
        starts = [st for b, e in spans if e - b > m + 1 for st in range(b, e - m, s)]
    else:
        starts = [st for b, e in spans for st in range(b, e - m, s)]
    return _cut(ids, starts, m)


# (content lengths of the documents, is the last one closed by <|endoftext|>?, max_length, stride): first a stream
# whose unclosed last document tells a lost last window from a dropped <|endoftext|> (the two agree where every
# document is closed), a document exactly max_length + 1 tokens long (one window), one whose last window ends on
# its <|endoftext|>, documents too short for any window (some, or all), one unclosed document with a stride longer than
# a window, whose last window would end on an <|endoftext|> added to close it
DOC_CASES = (
    ((3, 10, 7), False, 3, 3),
    ((7, 4, 9), True, 4, 2),
    ((2, 12), True, 4, 4),
    ((5, 5), True, 5, 1),
    ((1, 2), True, 4, 2),
    ((19,), False, 4, 5),
)
DOC_MISTAKES = (
    "window_crosses_document",
    "target_crosses_document",
    "separator_dropped",
    "separator_starts_document",
    "stride_across_documents",
    "missing_last_window",
    "one_window_document_skipped",
    "unclosed_document_dropped",
    "unclosed_document_closed",
)


def _stream(g, lengths, closed) -> list[int]:
    ids = []
    for n, length in enumerate(lengths):
        ids += torch.randint(0, EOT, (length,), generator=g).tolist()
        if closed or n < len(lengths) - 1:
            ids.append(EOT)
    return ids


def _windows_wrong(case, stacked, want, w) -> None:
    """Fail for one case whose windows are wrong, when no document mistake explains every case: targets left
    unshifted or swapped (read on this case alone), else shape, dtype or the first wrong value."""
    inputs, targets = stacked
    mistakes = [
        ("targets_not_shifted", lambda: torch.stack([w[0], w[0]])),
        ("targets_swapped", lambda: torch.stack([w[1], w[0]])),
    ]
    if inputs.shape == targets.shape:
        diagnose(torch.stack([inputs, targets]), mistakes, want, case=case)
    for t, wt in ((inputs, want[0]), (targets, want[1])):
        compare(t, wt, case)


def body_document_windows(fn) -> list[str]:
    g = gen(909)
    cases, runs, wrong = [], [], None
    for lengths, closed, max_length, stride in DOC_CASES:
        ids = _stream(g, lengths, closed)
        case = f"documents of {'+'.join(str(n + (closed or i < len(lengths) - 1)) for i, n in enumerate(lengths))}{'' if closed else ' (the last without <|endoftext|>)'} tokens, max_length={max_length}, stride={stride}"  # noqa: E501
        token_ids = list(ids)
        try:
            out = call(fn, token_ids, max_length, stride, case=case)
            if token_ids != ids:
                raise Fail("input_modified", name="token_ids", case=case)
            if out is None:
                raise Fail("returned_none", case=case)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise Fail("not_pair", got=type(out).__name__, case=case)
            inputs, targets = (as_tensor(t, case) for t in out)
        except Fail:
            if wrong is not None:  # an earlier case was wrong: that is said first
                _windows_wrong(*wrong)
            raise
        want = document_windows_ref(ids, max_length, stride)
        runs.append((ids, max_length, stride, (inputs, targets)))
        if same(inputs, want[0]) and same(targets, want[1]):
            for t in (inputs, targets):
                if t.dtype != torch.int64:  # nn.Embedding takes int32 too, but the dataset and the book use int64
                    raise Fail("ids_not_int64", got=str(t.dtype), case=case)
        elif wrong is None:
            wrong = (case, (inputs, targets), want, want)
        cases.append(f"{len(lengths)} document{'s' * (len(lengths) > 1)}, max_length={max_length} stride={stride}")
    if wrong is not None:
        # a document mistake is named only when it reproduces the learner's windows on every case
        for hint in DOC_MISTAKES:
            if all(_reproduces(hint, *run) for run in runs):
                raise Fail(hint, case=wrong[0])
        _windows_wrong(*wrong)
    return cases


def _reproduces(hint: str, ids: list, max_length: int, stride: int, out) -> bool:
    inputs, targets = out
    made = document_windows_ref(ids, max_length, stride, hint)
    return inputs.shape == targets.shape and same(torch.stack([inputs, targets]), made)


def next_token_loss_ref(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean of -ln softmax(logits)[target] over every position, in float64: ``logits (B, T, V)``,
    ``targets (B, T)``."""
    z = logits.double()
    log_probs = z - z.logsumexp(dim=-1, keepdim=True)
    return -log_probs.gather(-1, targets.unsqueeze(-1)).mean()


def _loss_mistakes(logits: torch.Tensor, targets: torch.Tensor) -> list:
    """(hint, make) for the wrong losses a learner's formula may compute, on this input."""
    z = logits.double()
    log_probs = z - z.logsumexp(dim=-1, keepdim=True)
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    n = picked.numel()
    over_positions = z - z.logsumexp(dim=1, keepdim=True)
    return [
        ("loss_not_averaged", lambda: -picked),
        ("sum_not_mean", lambda: -picked.sum()),
        ("sign_flipped", lambda: picked.mean()),
        ("log_base_2", lambda: -picked.mean() / math.log(2)),
        ("targets_ignored", lambda: -log_probs.mean()),
        ("softmax_over_positions", lambda: -over_positions.gather(-1, targets.unsqueeze(-1)).mean()),
        (
            "targets_shifted_again",
            lambda: (
                -log_probs[:, :-1].gather(-1, targets[:, 1:].unsqueeze(-1)).mean() if n > targets.shape[0] else None
            ),
        ),
    ]


def _loss_cases(g: torch.Generator) -> list:
    """(case, logits (B, T, V) float32, targets (B, T) int64, what the case is for): ordinary scores first, then
    scores near 1000 (exp overflows float32) and a confident wrong prediction (its probability rounds to 0)."""
    cases = []
    for label, shape in (("scores from randn", (2, 4, 10)), ("one position per window", (3, 1, 7))):
        cases.append((f"{label}, logits.shape={shape}", torch.randn(shape, generator=g), shape, "plain"))
    cases.append(("all scores 0, logits.shape=(1, 3, 6)", torch.zeros(1, 3, 6), (1, 3, 6), "plain"))
    big = torch.randn((2, 4, 10), generator=g) + 1000.0
    cases.append(("scores near 1000, logits.shape=(2, 4, 10)", big, (2, 4, 10), "overflow"))
    out = []
    for case, logits, shape, why in cases:
        targets = torch.randint(0, shape[-1], shape[:2], generator=g)
        out.append((case, logits, targets, why))
    logits = torch.randn((2, 3, 10), generator=g)
    targets = torch.randint(0, 10, (2, 3), generator=g)
    logits[0, 1, targets[0, 1]] -= 150.0  # p = e^-150 or so: 0 in float32
    out.append(("one target scored 150 below the rest, logits.shape=(2, 3, 10)", logits, targets, "underflow"))
    return out


# torch ops that compute the loss, its log-softmax or its log-sum-exp, for the learner
LOSS_BUILTINS = ("log_softmax", "cross_entropy", "nll_loss", "logsumexp")


def _loss_builtin(observed: list) -> str | None:
    """A torch op in the observed calls that computes the loss or its log-softmax, however the learner's code
    reached it (a name, a bound method, ``functools.partial``, ``map``, ``torch.ops``, a private alias): the
    observer sees the op itself, not the route."""
    found = [op for r in observed for f in LOSS_BUILTINS if (op := called_matching(r, f))]
    return min(found, key=lambda op: not op.startswith("torch."), default=None)  # torch's name before aten's


def body_next_token_loss(fn) -> list[str]:
    g = gen(1010)
    labels, observed = [], []
    for case, logits, targets, why in _loss_cases(g):
        given_logits, given_targets = logits.clone(), targets.clone()
        out = as_tensor(call(fn, given_logits, given_targets, case=case, observe=True), case)
        observed.append(last_observed())
        for name, before, after in (("logits", logits, given_logits), ("targets", targets, given_targets)):
            if not same(after, before, atol=0.0, rtol=0.0):
                raise Fail("input_modified", name=name, case=case)
        want = next_token_loss_ref(logits, targets)
        if why != "plain" and out.numel() == 1 and not bool(torch.isfinite(out).all()):
            raise Fail("max_not_subtracted" if why == "overflow" else "log_of_softmax", got=_num(out), case=case)
        mistakes = [(hint, make) for hint, make in _loss_mistakes(logits, targets)]
        compare(out, want, case, mistakes)
        labels.append(case.split(", logits")[0])
    builtin = _loss_builtin(observed)  # "yourself": judged once every value is right (a wrong loss first)
    if builtin:
        raise Fail("uses_cross_entropy", ref=builtin)
    return labels


_MESSAGES = {
    "ids_not_int64": {
        "en": "{title}: the values are right but the dtype is {got} (input: {case}); token ids are int64 (torch.long), as the dataset and nn.Embedding's usual input.",  # noqa: E501
        "zh": "{title}：数值是对的，但数据类型是 {got}（输入：{case}）；词元 ID 应为 int64（torch.long），与数据集和 nn.Embedding 的常规输入一致。",  # noqa: E501
    },
    "window_crosses_document": {
        "en": "{title}: some windows run across an <|endoftext|> into the next document (input: {case}): the windows were cut from the whole stream. Cut each document on its own.",  # noqa: E501
        "zh": "{title}：有些窗口越过 <|endoftext|> 伸进了下一篇文档（输入：{case}）：窗口是在整个词元流上切的。应当对每篇文档单独切窗口。",  # noqa: E501
    },
    "target_crosses_document": {
        "en": "{title}: the inputs stay inside their document, but the last window's final target is the next document's first token (input: {case}): a window needs max_length + 1 tokens of its own document, inputs plus the next-token target.",  # noqa: E501
        "zh": "{title}：输入都在自己的文档里，但最后一个窗口的最后一个目标是下一篇文档的第一个词元（输入：{case}）：一个窗口需要本文档的 max_length + 1 个词元，即输入再加上下一个词元作为目标。",  # noqa: E501
    },
    "separator_dropped": {
        "en": "{title}: the <|endoftext|> tokens were dropped (input: {case}); each one ends the document before it and stays in it, as its last target: the model learns where a text ends.",  # noqa: E501
        "zh": "{title}：把 <|endoftext|> 词元丢掉了（输入：{case}）；每个 <|endoftext|> 结束它前面的那篇文档，并留在那篇文档里作为最后一个目标：模型要学会一段文本在哪里结束。",  # noqa: E501
    },
    "separator_starts_document": {
        "en": "{title}: each <|endoftext|> was put at the start of the next document (input: {case}); it ends the document before it: split after it, not before.",  # noqa: E501
        "zh": "{title}：把每个 <|endoftext|> 放到了下一篇文档的开头（输入：{case}）；它结束的是前面那篇文档：应当在它之后切开，而不是在它之前。",  # noqa: E501
    },
    "stride_across_documents": {
        "en": "{title}: the window starts step by stride over the whole stream (input: {case}); each document starts its own windows at its first token: 0, stride, 2 * stride, ... within the document.",  # noqa: E501
        "zh": "{title}：窗口起点是在整个词元流上按步幅推进的（输入：{case}）；每篇文档都从自己的第一个词元开始切窗口：在文档内部依次是 0、stride、2 * stride……",  # noqa: E501
    },
    "missing_last_window": {
        "en": "{title}: a document lost its last window (input: {case}): a window fits while its start + max_length + 1 <= the document's length.",  # noqa: E501
        "zh": "{title}：有一篇文档少了最后一个窗口（输入：{case}）：只要起点 + max_length + 1 <= 文档长度，窗口就放得下。",  # noqa: E501
    },
    "one_window_document_skipped": {
        "en": "{title}: a document of exactly max_length + 1 tokens got no window (input: {case}); it holds one: max_length inputs and, shifted by one, their targets.",  # noqa: E501
        "zh": "{title}：恰好有 max_length + 1 个词元的文档一个窗口也没有得到（输入：{case}）；它正好放得下一个：max_length 个输入，以及错开一位的目标。",  # noqa: E501
    },
    "unclosed_document_dropped": {
        "en": "{title}: the last document, which no <|endoftext|> closes, got no windows (input: {case}): the stream may end inside a document, and that document is cut like the others.",  # noqa: E501
        "zh": "{title}：最后那篇没有 <|endoftext|> 收尾的文档一个窗口也没有得到（输入：{case}）：词元流可以在一篇文档中间结束，这篇文档也要和其他文档一样切窗口。",  # noqa: E501
    },
    "unclosed_document_closed": {
        "en": "{title}: the last document, which no <|endoftext|> closes, was given one (input: {case}): its last window's final target is an <|endoftext|> that is not in the stream. The text has not ended there; cut the document as it is.",  # noqa: E501
        "zh": "{title}：给最后那篇没有 <|endoftext|> 收尾的文档补上了一个（输入：{case}）：它最后一个窗口的最后一个目标是词元流里并不存在的 <|endoftext|>。这段文本在那里并没有结束；应当按文档本来的样子切窗口。",  # noqa: E501
    },
}
# The fixes, for a solution that splits the ids into documents and cuts each one as the lesson did.
_SPLIT = "`current.append(token)`, then, if `token == EOT`, `documents.append(current)` and `current = []`"
_SPLIT_ZH = "`current.append(token)`，然后若 `token == EOT`，就 `documents.append(current)` 并且 `current = []`"
_CUT = "for start in range(0, len(doc) - max_length, stride)"
_FIXES = {
    "ids_not_int64": {
        "en": "`torch.tensor(windows, dtype=torch.long).reshape(-1, max_length)`: int64 ids, in `as_ids` or wherever the tensors are built.",  # noqa: E501
        "zh": "`torch.tensor(windows, dtype=torch.long).reshape(-1, max_length)`：int64 的 ID，写在 `as_ids` 里或任何构造张量的地方。",  # noqa: E501
    },
    "window_crosses_document": {
        "en": f"Split into documents first: for each token {_SPLIT}; then `{_CUT}` in each document.",
        "zh": f"先切分文档：对每个词元 {_SPLIT_ZH}；再对每篇文档 `{_CUT}`。",
    },
    "target_crosses_document": {
        "en": f"`{_CUT}`: the window and its target, `doc[start : start + max_length + 1]`, inside the document.",
        "zh": f"`{_CUT}`：窗口和它的目标 `doc[start : start + max_length + 1]` 都在文档之内。",
    },
    "separator_dropped": {
        "en": f"For each token {_SPLIT}: the <|endoftext|> stays as the document's last token.",
        "zh": f"对每个词元 {_SPLIT_ZH}：<|endoftext|> 留作文档的最后一个词元。",
    },
    "separator_starts_document": {
        "en": f"For each token {_SPLIT}: the split comes after the <|endoftext|>.",
        "zh": f"对每个词元 {_SPLIT_ZH}：在 <|endoftext|> 之后切开。",
    },
    "stride_across_documents": {
        "en": f"`{_CUT}` inside each document, `start` counted from the document's first token.",
        "zh": f"在每篇文档内部 `{_CUT}`，`start` 从文档的第一个词元算起。",
    },
    "missing_last_window": {
        "en": f"`{_CUT}`: the last start is len(doc) - max_length - 1.",
        "zh": f"`{_CUT}`：最后一个起点是 len(doc) - max_length - 1。",
    },
    "one_window_document_skipped": {
        "en": "Keep a document when `len(doc) >= max_length + 1`, not `>`.",
        "zh": "当 `len(doc) >= max_length + 1` 时保留这篇文档，而不是用 `>`。",
    },
    "unclosed_document_dropped": {
        "en": "After the loop over the tokens, `documents.append(current)`: the tokens after the last <|endoftext|> are a document too.",  # noqa: E501
        "zh": "遍历完所有词元之后写 `documents.append(current)`：最后一个 <|endoftext|> 之后的词元也是一篇文档。",
    },
    "unclosed_document_closed": {
        "en": "After the loop, `documents.append(current)` as it is, with no <|endoftext|> added: only the stream's own <|endoftext|> tokens close a document.",  # noqa: E501
        "zh": "循环结束后原样 `documents.append(current)`，不要补 <|endoftext|>：只有词元流里本来就有的 <|endoftext|> 才结束一篇文档。",  # noqa: E501
    },
    "targets_not_shifted": {
        "en": "`inputs.append(doc[start : start + max_length])` and `targets.append(doc[start + 1 : start + max_length + 1])`, one token later.",  # noqa: E501
        "zh": "`inputs.append(doc[start : start + max_length])`，`targets.append(doc[start + 1 : start + max_length + 1])`，晚一个词元。",  # noqa: E501
    },
    "targets_swapped": {
        "en": "`return (as_ids(inputs), as_ids(targets))`: inputs first.",
        "zh": "`return (as_ids(inputs), as_ids(targets))`：输入在前。",
    },
    "input_modified": {
        "en": "`documents, current = [], []` build lists of their own: fill those, and leave the list `token_ids` as it came.",  # noqa: E501
        "zh": "`documents, current = [], []` 是你自己的列表：往它们里面填，不要改动传进来的列表 `token_ids`。",
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
        "en": "{title}: inputs and targets are swapped (input: {case}); the target window starts one token after the input window.",  # noqa: E501
        "zh": "{title}：输入和目标弄反了（输入：{case}）；目标窗口应当比输入窗口晚一个词元开始。",
    },
}
MODULE_FIXES: dict = {}


RECORDS = [
    Exercise(
        name="document_windows",
        notebook="06",
        body=body_document_windows,
        points=2,
        takes="function",
        signature="``fn(token_ids list[int], max_length, stride) -> (input_ids, target_ids)``, each int64 "
        "``(n_windows, max_length)``: the sliding windows of every document of a stream joined by <|endoftext|> "
        "(50256), none crossing from one document into the next.",
        hints=(
            *DOC_MISTAKES,
            "targets_not_shifted",
            "targets_swapped",
            "ids_not_int64",
            "not_pair",
            "input_modified",
        ),
        references=(
            "dataset.GPTDatasetV1",
            "dataset.create_dataloader_v1",
            "exercises._ex06_data.document_windows_ref",
            "exercises._ex06_data._cut",
        ),
        messages=_MESSAGES,
        fixes=_FIXES,
    ),
    Exercise(
        name="next_token_loss",
        notebook="06",
        body=body_next_token_loss,
        points=2,
        takes="function",
        signature="``fn(logits (B, T, V), targets (B, T) int64) -> 0-d tensor``: the mean of -ln softmax(logits)"
        "[target] over all B * T positions, finite for scores near 1000 and for a target whose probability rounds "
        "to 0 in float32.",
        hints=(
            "max_not_subtracted",
            "log_of_softmax",
            "loss_not_averaged",
            "sum_not_mean",
            "sign_flipped",
            "log_base_2",
            "targets_ignored",
            "softmax_over_positions",
            "targets_shifted_again",
            "uses_cross_entropy",
            "input_modified",
        ),
        references=("exercises._ex06_data.next_token_loss_ref",),
        forbidden=(
            ("torch.nn.functional", "cross_entropy", "uses_cross_entropy"),
            ("torch.nn.functional", "nll_loss", "uses_cross_entropy"),
            ("torch.nn.functional", "log_softmax", "uses_cross_entropy"),
            ("torch", "log_softmax", "uses_cross_entropy"),
            ("torch", "Tensor.log_softmax", "uses_cross_entropy"),
            ("torch.distributions", "Categorical.log_prob", "uses_cross_entropy"),
            ("torch.special", "log_softmax", "uses_cross_entropy"),
            ("torch", "logsumexp", "uses_cross_entropy"),
            ("torch", "Tensor.logsumexp", "uses_cross_entropy"),
            ("torch.special", "logsumexp", "uses_cross_entropy"),
            ("torch", "logcumsumexp", "uses_cross_entropy"),
            ("torch", "Tensor.logcumsumexp", "uses_cross_entropy"),
            ("torch", "logaddexp", "uses_cross_entropy"),
            ("torch", "Tensor.logaddexp", "uses_cross_entropy"),
            ("torch._C._nn", "cross_entropy_loss", "uses_cross_entropy"),
            ("torch._C._nn", "nll_loss_nd", "uses_cross_entropy"),
        ),
        messages=_LOSS_MESSAGES,
        fixes=_LOSS_FIXES,
    ),
]
