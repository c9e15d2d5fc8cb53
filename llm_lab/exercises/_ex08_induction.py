# ruff: noqa: E501  (the bilingual messages read better unbroken)
"""Notebook 08 (transfer): the induction score from tokens, and finding the induction head among shuffled heads.

Both checkers hand the learner's function only tensors (attention patterns ``(L, nh, T, T)`` and token ids
``(T,)``) and read back a tensor or a pair of ints, through ``_harness.call``.
"""

from __future__ import annotations

import numbers

import torch

from ._core import Exercise, Fail, compare
from ._shared import call_unchanged, gen


def _earlier(t: int) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)  # key j < query i


def induction_targets(token_ids: torch.Tensor, *, next_token: bool = True, strictly_earlier: bool = True):
    """bool ``(T, T)``: key ``j`` is an induction target of query ``i`` (``token_ids[j - 1] == token_ids[i]``,
    ``j < i``); the wrong variants: the copy itself (``next_token=False``) or ``j <= i``."""
    t = token_ids.shape[0]
    targets = torch.zeros(t, t, dtype=torch.bool)
    if next_token:
        targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]
    else:
        targets = token_ids[:, None] == token_ids[None, :]
    keep = _earlier(t) if strictly_earlier else torch.ones(t, t, dtype=torch.bool).tril()
    return targets & keep


def token_induction_score(attn_weights: torch.Tensor, token_ids: torch.Tensor, *, all_rows: bool = False, **kw):
    """``(L, nh, T, T), (T,) -> (L, nh)``: the weight on induction targets, averaged over the rows that have one."""
    targets = induction_targets(token_ids, **kw)
    per_row = (attn_weights * targets).sum(dim=-1)  # (L, nh, T)
    rows = torch.ones_like(targets[:, 0]) if all_rows else targets.any(dim=-1)
    return per_row[..., rows].mean(dim=-1)


def _causal_noise(shape, g: torch.Generator, spread: float = 1.0) -> torch.Tensor:
    t = shape[-1]
    scores = torch.randn(*shape, generator=g) * spread
    scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1)


def _sharpen(noise: torch.Tensor, target: torch.Tensor, strength: float) -> torch.Tensor:
    """Move ``strength`` of each row's weight onto its target keys (bool ``(T, T)``, rows without one unchanged)."""
    has = target.any(dim=-1, keepdim=True)
    onehot = target.float() / target.sum(dim=-1, keepdim=True).clamp(min=1)
    return torch.where(has, (1 - strength) * noise + strength * onehot, noise)


def body_induction_score(fn) -> list[str]:
    g = gen(808)
    cases = []
    # (layers, heads, T, vocabulary, repeated halves?): a repeated probe, natural-looking text with chance repeats
    for layers, heads, t, vocab, probe in ((2, 4, 12, 50, True), (1, 2, 10, 4, False), (2, 3, 16, 6, False),
                                           (3, 2, 8, 3, False)):
        if probe:
            half = torch.randperm(vocab, generator=g)[: t // 2]
            ids = torch.cat([half, half])
        else:
            ids = torch.randint(0, vocab, (t,), generator=g)
            ids[t // 2] = ids[1]  # at least one row with an induction target
        weights = _causal_noise((layers, heads, t, t), g, spread=2.0)
        weights[0, 0] = _sharpen(weights[0, 0], induction_targets(ids), 0.8)
        weights[-1, -1] = _sharpen(weights[-1, -1], induction_targets(ids, next_token=False), 0.8)
        case = f"attn_weights.shape={(layers, heads, t, t)}, token_ids={ids.tolist()}"
        out = call_unchanged(fn, weights, ids, names=("attn_weights", "token_ids"), case=case)
        want = token_induction_score(weights, ids)
        variants = [
            ("same_token_not_next", lambda w=weights, i=ids: token_induction_score(w, i, next_token=False)),
            ("current_included", lambda w=weights, i=ids: token_induction_score(w, i, strictly_earlier=False)),
            ("rows_without_target", lambda w=weights, i=ids: token_induction_score(w, i, all_rows=True)),
        ]
        compare(out, want, case, variants)
        cases.append(f"{layers}x{heads} heads, T={t}")
    return cases


# ---- which head is the induction head? -------------------------------------------------------------------------

KINDS = ("induction", "previous", "duplicate", "first", "current", "spread")


def _pattern(kind: str, t: int, g: torch.Generator) -> torch.Tensor:
    """One head's weights ``(T, T)`` on a probe whose second half repeats its first half."""
    rows = torch.arange(t)
    target = torch.zeros(t, t, dtype=torch.bool)
    if kind == "induction":
        target[rows[t // 2 :], rows[t // 2 :] - t // 2 + 1] = True
    elif kind == "duplicate":  # the earlier copy of the current token itself
        target[rows[t // 2 :], rows[t // 2 :] - t // 2] = True
    elif kind == "previous":
        target[rows[1:], rows[1:] - 1] = True
    elif kind == "first":
        target[:, 0] = True
    elif kind == "current":
        target[rows, rows] = True
    strength = 0.0 if kind == "spread" else 0.55 + 0.3 * float(torch.rand((), generator=g))
    return _sharpen(_causal_noise((t, t), g), target, strength)


def _shuffled_model(layers: int, heads: int, t: int, g: torch.Generator):
    """Weights ``(L, nh, T, T)`` of heads of every kind in random places; returns them and each head's kind."""
    kinds = list(KINDS[:5]) + [KINDS[int(torch.randint(1, len(KINDS), (), generator=g))] for _ in range(layers * heads - 5)]
    kinds = [kinds[i] for i in torch.randperm(len(kinds), generator=g).tolist()]
    weights = torch.stack([_pattern(k, t, g) for k in kinds]).view(layers, heads, t, t)
    return weights, [kinds[i * heads : (i + 1) * heads] for i in range(layers)]


def _where(kinds, kind: str) -> tuple[int, int]:
    return next((layer, head) for layer, row in enumerate(kinds) for head, k in enumerate(row) if k == kind)


def _integer(x) -> int | None:
    """``x`` as an int if it is one whole number: a Python or numpy int, a one-element integer tensor or array."""
    if isinstance(x, torch.Tensor):
        return int(x) if x.numel() == 1 and not (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool) \
            else None
    if isinstance(x, (bool, float, complex)) or type(x).__name__ in ("bool_", "bool"):
        return None
    if isinstance(x, numbers.Integral):  # int, numpy.int64, numpy.intp, ...
        return int(x)
    if type(x).__module__ == "numpy" and getattr(x, "size", 0) == 1 and getattr(x.dtype, "kind", "") in "iu":
        return int(x.reshape(-1)[0])
    return None


def _as_pair(out, case: str) -> tuple[int, int]:
    if out is None:
        raise Fail("returned_none", case=case)
    if isinstance(out, torch.Tensor) and out.dim() >= 1 and out.numel() == 2:
        out = list(out.reshape(-1))
    elif type(out).__module__ == "numpy" and getattr(out, "ndim", 0) >= 1 and getattr(out, "size", 0) == 2:
        out = list(out.reshape(-1))  # a numpy array of two indices
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Fail("not_layer_head", got=type(out).__name__, case=case)
    pair = [_integer(x) for x in out]
    if None in pair:
        raise Fail("not_layer_head", got=f"({type(out[0]).__name__}, {type(out[1]).__name__})", case=case)
    return pair[0], pair[1]


def _decoded_wrong(got, want, layers: int, heads: int) -> str | None:
    """The mistake that turns the right head ``want`` into ``got`` while decoding the flat argmax, if one does."""
    layer, head = want
    if got in ((layer + 1, head + 1), (layer + 1, head), (layer, head + 1)):
        return "index_one_based"
    if layers != heads and got == divmod(layer * heads + head, layers):
        return "divmod_wrong_base"
    return None


def _pick(fn, layers: int, heads: int, t: int, g: torch.Generator, case: str):
    weights, kinds = _shuffled_model(layers, heads, t, g)
    got = _as_pair(call_unchanged(fn, weights, names=("attn_weights",), case=case), case)
    return got, _where(kinds, "induction"), kinds


def _explain(fn, got, want, kinds, layers: int, heads: int, t: int, case: str):
    """Fail with the hint that names the mistake. Each explanation is asked again on two more shuffled models, so
    a head's kind (or a decoding slip) is named only when the learner's code picks it there too."""
    if got == want[::-1]:
        raise Fail("layer_head_swapped", case=case, got=got, want=want)
    more = [_pick(fn, layers, heads, t, gen(8100 + 10 * n + layers * heads), case) for n in range(2)]
    decoded = _decoded_wrong(got, want, layers, heads)
    decoded_again = decoded is not None and all(_decoded_wrong(a, w, layers, heads) == decoded for a, w, _ in more)
    layer, head = got
    in_range = 0 <= layer < layers and 0 <= head < heads
    kind = kinds[layer][head] if in_range else None
    kind_again = in_range and all(0 <= a[0] < layers and 0 <= a[1] < heads and k[a[0]][a[1]] == kind
                                  for a, _, k in more)
    if decoded_again and not kind_again:
        raise Fail(decoded, case=case, got=got, want=want)
    if not in_range:
        raise Fail("not_a_head", case=case, got=got, layers=layers, heads=heads)
    if kind_again:
        raise Fail({"previous": "picked_previous", "duplicate": "picked_duplicate"}.get(kind, "picked_other"),
                   case=case, got=got, kind=kind)
    raise Fail("wrong_head", case=case, got=got, want=want)


def body_find_induction_head(fn) -> list[str]:
    g = gen(8008)
    cases = []
    for layers, heads, t in ((2, 4, 16), (3, 2, 12), (2, 3, 20), (1, 6, 10), (4, 2, 16)):
        case = f"attn_weights.shape={(layers, heads, t, t)}"
        got, want, kinds = _pick(fn, layers, heads, t, g, case)
        if got != want:
            _explain(fn, got, want, kinds, layers, heads, t, case)
        cases.append(f"{layers}x{heads} heads")
    return cases


_MESSAGES = {
    "same_token_not_next": {
        "en": "{title}: this scores the weight on earlier copies of the current token itself (input: {case}); an induction head looks one further, at the token that came after the copy.",
        "zh": "{title}：这算的是放在当前词元更早副本本身上的权重（输入：{case}）；归纳头要再往后看一个位置，看副本后面的那个词元。",
    },
    "current_included": {
        "en": "{title}: a query's own position counts as a target (input: {case}); keep only keys j < i: the head must find the answer in the past, not in the token it is reading.",
        "zh": "{title}：把查询自己的位置也算成了目标（输入：{case}）；只保留 j < i 的键：头必须在过去找到答案，而不是在正在读的词元里。",
    },
    "rows_without_target": {
        "en": "{title}: the mean also counts rows whose token never occurred before (input: {case}); those rows have no induction target: leave them out of the average.",
        "zh": "{title}：平均值把前文从未出现过当前词元的行也算了进去（输入：{case}）；这些行没有归纳目标，不应参与平均。",
    },
    "not_layer_head": {
        "en": "{title}: expected a pair of ints (layer, head), got {got} (input: {case}).",
        "zh": "{title}：应当返回一对整数 (layer, head)，实际得到 {got}（输入：{case}）。",
    },
    "layer_head_swapped": {
        "en": "{title}: returned {got}, which is (head, layer); the induction head is at (layer, head) = {want} (input: {case}).",
        "zh": "{title}：返回了 {got}，顺序是 (head, layer)；归纳头在 (layer, head) = {want}（输入：{case}）。",
    },
    "not_a_head": {
        "en": "{title}: returned {got}, but the model has {layers} layers of {heads} heads (input: {case}); indices start at 0.",
        "zh": "{title}：返回了 {got}，但模型只有 {layers} 层、每层 {heads} 个头（输入：{case}）；下标从 0 开始。",
    },
    "picked_previous": {
        "en": "{title}: returned {got}, a previous-token head (input: {case}): it looks at i - 1 on every row; the induction head looks at i - T/2 + 1, in the repeated half only.",
        "zh": "{title}：返回了 {got}，它是前一个词元头（输入：{case}）：它在每一行都看 i - 1；归纳头只在重复的后半段看 i - T/2 + 1。",
    },
    "picked_duplicate": {
        "en": "{title}: returned {got}, a head that looks at the earlier copy of the current token (i - T/2), one position short of the induction target (input: {case}).",
        "zh": "{title}：返回了 {got}，这个头看的是当前词元的更早副本（i - T/2），比归纳目标差了一个位置（输入：{case}）。",
    },
    "index_one_based": {
        "en": "{title}: returned {got}, the induction head {want} counted from 1 (input: {case}): layers and heads are counted from 0, as `argmax` and `divmod` give them.",
        "zh": "{title}：返回了 {got}，这是从 1 开始数的归纳头 {want}（输入：{case}）：层和头都从 0 开始数，`argmax` 和 `divmod` 给出的就是这样的下标。",
    },
    "divmod_wrong_base": {
        "en": "{title}: returned {got}: the flat index of the induction head {want} split by the number of layers instead of the number of heads (input: {case}); scores of shape (L, nh) flatten row by row, so `divmod(index, num_heads)`.",
        "zh": "{title}：返回了 {got}：把归纳头 {want} 的展平下标按层数而不是头数拆开了（输入：{case}）；形状为 (L, nh) 的分数是按行展平的，所以要用 `divmod(index, num_heads)`。",
    },
    "wrong_head": {
        "en": "{title}: returned {got}, not the induction head {want} (input: {case}); on other shuffled models it picks heads of other kinds, so no one wrong pattern explains it. Score every head on the repeated half's induction targets (key i - T/2 + 1) and take the largest.",
        "zh": "{title}：返回了 {got}，不是归纳头 {want}（输入：{case}）；在另外几个打乱的模型上它选中的是别的种类的头，所以不是某一种错误的模式。请在重复的后半段上按归纳目标（键 i - T/2 + 1）给每个头打分，取最大的那个。",
    },
    "picked_other": {
        "en": "{title}: returned {got}, a head of kind '{kind}' (input: {case}); score every head on the repeated half's induction targets and take the largest.",
        "zh": "{title}：返回了 {got}，它是 '{kind}' 类型的头（输入：{case}）；请在重复的后半段上给每个头算归纳分数，取最大的那个。",
    },
}
_FIXES = {
    "same_token_not_next": {"en": "The target of query i is key j when `token_ids[j - 1] == token_ids[i]` and `j < i`.", "zh": "查询 i 的目标是满足 `token_ids[j - 1] == token_ids[i]` 且 `j < i` 的键 j。"},
    "current_included": {"en": "AND the targets with `torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)`.", "zh": "把目标与 `torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)` 取与（&）。"},
    "rows_without_target": {"en": "`rows = targets.any(dim=-1)`; `per_row[..., rows].mean(dim=-1)`.", "zh": "`rows = targets.any(dim=-1)`；`per_row[..., rows].mean(dim=-1)`。"},
    "picked_previous": {"en": "Rows `i = T//2 .. T-1`, keys `i - T//2 + 1`: `attn_weights[..., rows, rows - T//2 + 1].mean(-1)`, then the argmax over (layer, head).", "zh": "行 `i = T//2 .. T-1`，键 `i - T//2 + 1`：`attn_weights[..., rows, rows - T//2 + 1].mean(-1)`，再对 (layer, head) 取 argmax。"},
    "picked_duplicate": {"en": "The key is `i - T//2 + 1`, not `i - T//2`.", "zh": "键是 `i - T//2 + 1`，不是 `i - T//2`。"},
    "layer_head_swapped": {"en": "`layer, head = divmod(int(scores.argmax()), num_heads)`.", "zh": "`layer, head = divmod(int(scores.argmax()), num_heads)`。"},
    "index_one_based": {"en": "`layer, head = divmod(int(scores.argmax()), num_heads)`, without `+ 1`.", "zh": "`layer, head = divmod(int(scores.argmax()), num_heads)`，不要 `+ 1`。"},
    "divmod_wrong_base": {"en": "`layer, head = divmod(int(scores.argmax()), attn_weights.shape[1])`: the number of heads, not of layers.", "zh": "`layer, head = divmod(int(scores.argmax()), attn_weights.shape[1])`：用头数，而不是层数。"},
}

# llm_lab's own ways to the answer (the explorers the lesson uses): handing one in, or calling it, is the reference
_SCORE_REFERENCES = ("explore.heads.induction_score", "explore.heads.head_scores", "explore.heads.head_roles",
                     "explore.heads._induction_targets")

RECORDS = [
    Exercise(
        name="induction_score", notebook="08", body=body_induction_score, points=2, takes="function",
        signature="``fn(attn_weights (L, nh, T, T), token_ids (T,)) -> (L, nh)``: the mean weight each head puts on "
        "keys j < i with ``token_ids[j - 1] == token_ids[i]``, over the rows that have such a key.",
        hints=("same_token_not_next", "current_included", "rows_without_target", "input_modified"),
        references=_SCORE_REFERENCES + ("exercises._ex08_induction.token_induction_score",
                                        "exercises._ex08_induction.induction_targets"),
        messages=_MESSAGES, fixes=_FIXES,
    ),
    Exercise(
        name="find_induction_head", notebook="08", body=body_find_induction_head, points=2, takes="function",
        signature="``fn(attn_weights (L, nh, T, T)) -> (layer, head)``: the induction head, from the weights of one "
        "sequence whose second half repeats its first half.",
        hints=("not_layer_head", "layer_head_swapped", "not_a_head", "picked_previous", "picked_duplicate",
               "picked_other", "index_one_based", "divmod_wrong_base", "wrong_head", "input_modified"),
        references=_SCORE_REFERENCES + ("explore.induction.induction_scores", "explore.heads.previous_token_score",
                                        "exercises._ex08_induction._where"),
        messages=_MESSAGES, fixes=_FIXES,
    ),
]
