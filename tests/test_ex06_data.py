"""Notebook 06's exercises (input/target windows, input embeddings): solutions, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""


import torch


def windows(token_ids, max_length, stride):  # the exercise asks for unfold, no loop
    w = torch.tensor(token_ids, dtype=torch.long).unfold(0, max_length + 1, stride)
    return w[:, :-1], w[:, 1:]


def input_embeddings(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(token_ids.shape[-1]))


def windows_factory(shift=1, stride_used=True, stop=0, swap=False):
    def fn(token_ids, max_length, stride):
        step = stride if stride_used else 1
        inputs, targets = [], []
        for i in range(0, len(token_ids) - max_length + stop, step):
            inputs.append(torch.tensor(token_ids[i : i + max_length]))
            targets.append(torch.tensor(token_ids[i + shift : i + shift + max_length]))
        return (torch.stack(targets), torch.stack(inputs)) if swap else (torch.stack(inputs), torch.stack(targets))

    return fn


def windows_extra(token_ids, max_length, stride):
    inputs, targets = windows(token_ids, max_length, stride)
    extra = torch.tensor(token_ids[-max_length:]).unsqueeze(0)
    return torch.cat([inputs, extra]), torch.cat([targets, extra])


def embeddings_no_positions(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids)


def embeddings_positions_from_ids(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(token_ids)


def embeddings_full_context(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(pos_emb.num_embeddings))


SOLUTIONS = {
    "windows": windows,
    "input_embeddings": input_embeddings,
}
PLANTED = [
    # (exercise, wrong implementation, hint the checker must name)
    ("windows", windows_factory(shift=0), "targets_not_shifted"),
    ("windows", windows_factory(swap=True), "targets_swapped"),
    ("windows", windows_factory(stride_used=False), "stride_ignored"),
    ("windows", windows_factory(stop=-1), "missing_last_window"),
    ("windows", windows_extra, "extra_window"),
    ("input_embeddings", embeddings_no_positions, "positions_missing"),
    ("input_embeddings", embeddings_positions_from_ids, "positions_from_ids"),
    ("input_embeddings", embeddings_full_context, "positions_wrong_length"),
]
