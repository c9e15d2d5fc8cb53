"""Notebook 06's exercises (windows inside documents joined by <|endoftext|>, input embeddings): solutions,
planted mistakes, and the notebook's loop with switches.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises) run over
these tables in tests/exercises/test_exercises.py (the tables: tests/exercises/_exercise_tables.py)."""

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


def input_embeddings(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(token_ids.shape[-1]))


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


def embeddings_no_positions(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids)


def embeddings_positions_from_ids(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(token_ids)


def embeddings_full_context(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(pos_emb.num_embeddings))


def embeddings(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(token_ids.shape[-1]))


def windows_int32(token_ids, max_length, stride):
    inputs, targets = document_windows(token_ids, max_length, stride)
    return inputs.int(), targets.int()


def embeddings_one_based(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(1, token_ids.shape[-1] + 1))


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
    "input_embeddings": input_embeddings,
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
    ("input_embeddings", embeddings_no_positions, "positions_missing"),
    ("input_embeddings", embeddings_positions_from_ids, "positions_from_ids"),
    ("input_embeddings", embeddings_full_context, "positions_wrong_length"),
]
CORRECT_BUT_DIFFERENT = [
    ("document_windows", docs_factory(unclosed="if_any")),  # the last document appended only when it has tokens
]

# graded: a one-line message naming the hint (int64 asked; misleading positions)
ROUND_MISTAKES = [
    ("input_embeddings", embeddings_one_based, "positions_one_based"),
    ("document_windows", windows_int32, "ids_not_int64"),
]
