"""Notebook 06's exercises (windows inside documents joined by <|endoftext|>, the next-token loss): solutions,
planted mistakes, and the notebook's loop with switches.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

import functools
import operator

import torch

EOT = 50256


def document_windows(token_ids, max_length, stride):  # cut by index arithmetic (the notebook splits into lists)
    ids = torch.tensor(token_ids, dtype=torch.long)
    ends = (ids == EOT).nonzero().flatten() + 1
    bounds = [0, *ends.tolist()] + ([len(ids)] if not len(ends) or ends[-1] < len(ids) else [])
    starts = [s for b, e in zip(bounds[:-1], bounds[1:], strict=True) for s in range(b, e - max_length, stride)]
    index = torch.tensor(starts, dtype=torch.long)[:, None] + torch.arange(max_length + 1)
    windows = ids[index] if starts else torch.empty(0, max_length + 1, dtype=torch.long)
    return windows[:, :-1], windows[:, 1:]


def next_token_loss(logits, targets):  # the notebook's solution: subtract the max, then ln p = z - ln sum exp z
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    return -log_probs.gather(-1, targets.unsqueeze(-1)).mean()


def loss_logsumexp(logits, targets):  # right values, but torch.logsumexp does the shifting the exercise asks for
    picked = logits.gather(-1, targets[..., None]).squeeze(-1)
    return (logits.logsumexp(dim=-1) - picked).mean()


def loss_torch_logsumexp(logits, targets):  # the same through the function torch.logsumexp
    picked = logits.gather(-1, targets[..., None]).squeeze(-1)
    return (torch.logsumexp(logits, dim=-1) - picked).mean()


def loss_lse_minus_score(logits, targets):  # correct too: log-sum-exp by hand (amax shift), minus the target's score
    top = logits.amax(dim=-1, keepdim=True)
    lse = (top + (logits - top).exp().sum(dim=-1, keepdim=True).log()).squeeze(-1)
    return (lse - logits.gather(-1, targets[..., None]).squeeze(-1)).mean()


def loss_factory(shift=True, log_of_p=False, reduce="mean", sign=-1, base=None, over=-1, pick="target", again=False):
    """The notebook's solution with one switch turned: no max subtracted, ln of the softmax, sum or no reduction,
    the sign, log base 2, the softmax's axis, every id instead of the target's, the targets shifted once more."""

    def fn(logits, targets):
        shifted = logits - logits.max(dim=over, keepdim=True).values if shift else logits
        if log_of_p:
            log_probs = (shifted.exp() / shifted.exp().sum(dim=over, keepdim=True)).log()
        else:
            log_probs = shifted - shifted.exp().sum(dim=over, keepdim=True).log()
        if base is not None:
            log_probs = log_probs / torch.log(torch.tensor(float(base)))
        if pick == "all":
            picked = log_probs
        elif again:
            picked = log_probs[:, :-1].gather(-1, targets[:, 1:].unsqueeze(-1)).squeeze(-1)
        else:
            picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        if reduce == "mean":
            return sign * picked.mean()
        return sign * picked.sum() if reduce == "sum" else sign * picked

    return fn


def loss_in_place(logits, targets):
    logits -= logits.max(dim=-1, keepdim=True).values
    return next_token_loss(logits, targets)


def loss_by_library(logits, targets):
    import torch.nn.functional as F

    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def loss_by_tensor_method(logits, targets):
    return -logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).mean()


def loss_by_distribution(logits, targets):
    from torch.distributions import Categorical

    return -Categorical(logits=logits).log_prob(targets).mean()


def _picked_log_probs(log_probs, targets):
    return -log_probs.gather(-1, targets.unsqueeze(-1)).mean()


class _Smuggler:
    """An index whose ``__index__`` (called by torch from inside ``logits[k]``) runs torch's log-softmax."""

    def __init__(self, logits):
        self.logits, self.out = logits, None

    def __index__(self):
        self.out = torch.log_softmax(self.logits, -1)
        return 0


def _log_softmax_in_index_hook(logits, targets):
    smuggler = _Smuggler(logits)
    logits[smuggler]
    return _picked_log_probs(smuggler.out, targets)


class _Relay:
    """Passed to a torch function, its ``__torch_function__`` runs torch's log-softmax instead."""

    def __init__(self, logits):
        self.logits = logits

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch.log_softmax(args[0].logits, -1)


# torch's log-softmax reached where no name or bound method is called from Python: the observer sees the op itself
LOSS_BY_HIDDEN_ROUTES = {
    "index_hook": _log_softmax_in_index_hook,
    "torch_function": lambda logits, targets: _picked_log_probs(torch.add(_Relay(logits), 0), targets),
    "private": lambda logits, targets: _picked_log_probs(torch._log_softmax(logits, -1, False), targets),
    "partial": lambda logits, targets: _picked_log_probs(
        functools.partial(torch.Tensor.log_softmax, dim=-1)(logits), targets
    ),
    "map": lambda logits, targets: _picked_log_probs(next(map(torch.log_softmax, [logits], [-1])), targets),
    "methodcaller": lambda logits, targets: _picked_log_probs(
        operator.methodcaller("log_softmax", -1)(logits), targets
    ),
    "aten": lambda logits, targets: _picked_log_probs(torch.ops.aten._log_softmax(logits, -1, False), targets),
}


def docs_factory(
    split="ends",
    stream_stride=False,
    last=0,
    target_reach=0,
    shift=1,
    swap=False,
    whole=False,
    dtype=torch.long,
    unclosed="kept",
):
    """The notebook's loop with one switch turned: how the documents are split, where the stride counts from,
    how far a window may reach, the target's shift, what becomes of the tokens after the last <|endoftext|>
    (``unclosed``: ``"kept"``, ``"dropped"`` (no `documents.append(current)` after the loop), ``"if_any"`` (kept
    when there are any: correct too), ``"closed"`` (an <|endoftext|> of its own added: a target too many))."""

    def fn(token_ids, max_length, stride):
        docs, current = [], []
        for token in token_ids:
            if token == EOT and split == "starts":
                docs.append(current)
                current = [token]
                continue
            if token != EOT or split != "dropped":
                current.append(token)
            if token == EOT and split != "starts":
                docs.append(current)
                current = []
        if unclosed == "closed" and current:
            current.append(EOT)
        if unclosed != "dropped" and (current or unclosed != "if_any"):
            docs.append(current)
        if whole:
            docs = [list(token_ids)]
        inputs, targets, offset = [], [], 0
        for doc in docs:
            first = (-offset) % stride if stream_stride else 0
            for start in range(first, len(doc) - max_length + last, stride):
                window = (doc + [0] * target_reach)[start : start + max_length + 1]
                if len(window) < max_length + 1:
                    continue
                inputs.append(window[:-1])
                targets.append(window[shift : shift + max_length])
            offset += len(doc)
        inputs = torch.tensor(inputs, dtype=dtype).reshape(-1, max_length)
        targets = torch.tensor(targets, dtype=dtype).reshape(-1, max_length)
        return (targets, inputs) if swap else (inputs, targets)

    return fn


def docs_target_crosses(token_ids, max_length, stride):
    """Inputs inside the document, the target from the stream: the last target is the next document's first."""
    ids = torch.tensor(token_ids, dtype=torch.long)
    ends = (ids == EOT).nonzero().flatten() + 1
    bounds = [0, *ends.tolist(), len(ids)]
    starts = [
        s
        for b, e in zip(bounds[:-1], bounds[1:], strict=True)
        for s in range(b, e - max_length + 1, stride)
        if s + max_length + 1 <= len(ids)
    ]
    index = torch.tensor(starts, dtype=torch.long)[:, None] + torch.arange(max_length + 1)
    windows = ids[index] if starts else torch.empty(0, max_length + 1, dtype=torch.long)
    return windows[:, :-1], windows[:, 1:]


def windows_int32(token_ids, max_length, stride):
    inputs, targets = document_windows(token_ids, max_length, stride)
    return inputs.int(), targets.int()


def docs_one_window_skipped(token_ids, max_length, stride):
    """Off by one in the guard: a document of exactly max_length + 1 tokens (one window) gets none."""
    ids = torch.tensor(token_ids, dtype=torch.long)
    ends = (ids == 50256).nonzero().flatten() + 1
    bounds = [0, *ends.tolist()] + ([len(ids)] if not len(ends) or ends[-1] < len(ids) else [])
    starts = []
    for b, e in zip(bounds[:-1], bounds[1:], strict=True):
        if e - b > max_length + 1:  # should be >=
            starts += range(b, e - max_length, stride)
    index = torch.tensor(starts, dtype=torch.long)[:, None] + torch.arange(max_length + 1)
    windows = ids[index] if starts else torch.empty(0, max_length + 1, dtype=torch.long)
    return windows[:, :-1], windows[:, 1:]


SOLUTIONS = {
    "document_windows": document_windows,
    "next_token_loss": next_token_loss,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("document_windows", docs_factory(whole=True), "window_crosses_document"),
    ("document_windows", docs_target_crosses, "target_crosses_document"),
    ("document_windows", docs_factory(split="dropped"), "separator_dropped"),
    ("document_windows", docs_factory(split="starts"), "separator_starts_document"),
    ("document_windows", docs_factory(stream_stride=True), "stride_across_documents"),
    ("document_windows", docs_factory(last=-1), "missing_last_window"),
    ("document_windows", docs_one_window_skipped, "one_window_document_skipped"),
    ("document_windows", docs_factory(unclosed="dropped"), "unclosed_document_dropped"),
    ("document_windows", docs_factory(unclosed="closed"), "unclosed_document_closed"),
    ("document_windows", docs_factory(shift=0), "targets_not_shifted"),
    ("document_windows", docs_factory(swap=True), "targets_swapped"),
    ("document_windows", docs_factory(dtype=torch.int32), "ids_not_int64"),
    ("next_token_loss", loss_factory(shift=False), "max_not_subtracted"),
    ("next_token_loss", loss_factory(log_of_p=True), "log_of_softmax"),
    ("next_token_loss", loss_factory(reduce="none"), "loss_not_averaged"),
    ("next_token_loss", loss_factory(reduce="sum"), "sum_not_mean"),
    ("next_token_loss", loss_factory(sign=1), "sign_flipped"),
    ("next_token_loss", loss_factory(base=2), "log_base_2"),
    ("next_token_loss", loss_factory(pick="all"), "targets_ignored"),
    ("next_token_loss", loss_factory(over=1), "softmax_over_positions"),
    ("next_token_loss", loss_factory(again=True), "targets_shifted_again"),
    ("next_token_loss", loss_in_place, "input_modified"),
    ("next_token_loss", loss_by_library, "uses_cross_entropy"),
    ("next_token_loss", loss_by_tensor_method, "uses_cross_entropy"),  # x.log_softmax(): a bound method
    ("next_token_loss", loss_by_distribution, "uses_cross_entropy"),  # Categorical(logits).log_prob
    ("next_token_loss", loss_logsumexp, "uses_cross_entropy"),  # x.logsumexp(): the shift done for the learner
    ("next_token_loss", loss_torch_logsumexp, "uses_cross_entropy"),
    *(("next_token_loss", f, "uses_cross_entropy") for f in LOSS_BY_HIDDEN_ROUTES.values()),
]
CORRECT_BUT_DIFFERENT = [
    ("next_token_loss", loss_lse_minus_score),
    ("document_windows", docs_factory(unclosed="if_any")),  # the last document appended only when it has tokens
]

# graded: a one-line message naming the hint (int64 asked; ln of a probability rounded to 0)
ROUND_MISTAKES = [
    ("next_token_loss", loss_factory(log_of_p=True), "log_of_softmax"),
    ("document_windows", windows_int32, "ids_not_int64"),
]
