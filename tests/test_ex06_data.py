"""Notebook 06's exercises (input/target windows, input embeddings): solutions, planted mistakes.

The generic checks (solutions pass, stubs are "not implemented", planted mistakes named, never raises)
run over these tables in tests/test_exercises.py."""

import pytest
import torch

from llm_lab import exercises as ex


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

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


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


# ---- windows and embeddings: IndexError, fixes that say unfold, unfold enforced, window counts ------------------


def windows_unfold(token_ids, max_length, stride):
    ids = torch.tensor(token_ids, dtype=torch.long)
    windows = ids.unfold(0, max_length + 1, stride)
    return windows[:, :-1], windows[:, 1:]


def windows_loop(token_ids, max_length, stride):
    inputs, targets = [], []
    for i in range(0, len(token_ids) - max_length, stride):
        inputs.append(torch.tensor(token_ids[i : i + max_length]))
        targets.append(torch.tensor(token_ids[i + 1 : i + max_length + 1]))
    return torch.stack(inputs), torch.stack(targets)


def windows_strided(token_ids, max_length, stride):
    ids = torch.tensor(token_ids, dtype=torch.long)
    n = (len(token_ids) - max_length - 1) // stride + 1
    windows = ids.as_strided((n, max_length + 1), (stride, 1))
    return windows[:, :-1], windows[:, 1:]


def windows_counts_differ(token_ids, max_length, stride):
    """Inputs cut with windows of max_length (one too many at the end), targets from ids[1:]: counts differ."""
    ids = torch.tensor(token_ids, dtype=torch.long)
    return ids.unfold(0, max_length, stride), ids[1:].unfold(0, max_length, stride)


def windows_pop(token_ids, max_length, stride):
    token_ids.append(0)
    token_ids.pop()
    token_ids.reverse()
    token_ids.reverse()
    token_ids[0] += 0
    out = windows_unfold(token_ids, max_length, stride)
    token_ids.pop()
    return out


@pytest.mark.parametrize(("fn", "hint"), [
    (windows_loop, "windows_without_unfold"),
    (windows_strided, "windows_as_strided"),
    (windows_counts_differ, "extra_window"),
    (windows_pop, "input_modified"),
], ids=["loop", "as_strided", "counts-differ", "list-changed"])
def test_windows_requirements_and_counts(fn, hint):
    result = ex.grade("windows", fn)
    assert (result.status, result.hint) == ("fail", hint), result.message


def test_unfold_with_views_passes():
    """Non-contiguous views of one unfold (as here) and contiguous copies (the notebook's) both pass."""
    assert ex.grade("windows", windows_unfold).passed
    assert ex.grade("windows", lambda t, m, s: tuple(w.contiguous() for w in windows_unfold(t, m, s))).passed


def test_window_fixes_say_unfold_and_no_loop():
    windows = ex.REGISTRY["windows"]
    for hint, fix in ((h, windows.fixes[h]) for h in windows.hints if h in windows.fixes):
        assert "range(" not in fix["en"] and "token_ids[i" not in fix["en"], hint
    for hint in ("targets_not_shifted", "stride_ignored", "missing_last_window", "extra_window"):
        assert "ids.unfold(0, max_length + 1, stride)" in ex.REGISTRY["windows"].fixes[hint]["en"], hint
        assert "ids.unfold(0, max_length + 1, stride)" in ex.REGISTRY["windows"].fixes[hint]["zh"], hint


def embeddings(token_ids, tok_emb, pos_emb):
    return tok_emb(token_ids) + pos_emb(torch.arange(token_ids.shape[-1]))


@pytest.mark.parametrize(("fn", "hint"), [
    (lambda ids, tok, pos: tok(ids) + pos(torch.arange(ids.shape[2])), "exception"),  # IndexError: tuple index
    (lambda ids, tok, pos: tok(ids) + pos(torch.arange(ids.shape[1]) + ids.shape[1]), "exception"),
    (lambda ids, tok, pos: tok(ids)[ids.shape[0] + 5], "exception"),
    (lambda ids, tok, pos: tok(ids) + pos(torch.arange(1, ids.shape[1] + 1)), "positions_one_based"),
    (lambda ids, tok, pos: tok(ids) + pos(ids), "positions_from_ids"),
], ids=["shape[2]", "shifted-by-T", "index-past-batch", "one-based", "from-ids"])
def test_only_a_position_mistake_is_called_one(fn, hint):
    result = ex.grade("input_embeddings", fn)
    assert result.hint == hint, result.message
    if hint == "exception":
        assert "IndexError" in result.message


def test_embeddings_leave_ids_and_tables_alone():
    def shifts_ids(token_ids, tok_emb, pos_emb):
        token_ids += 0
        token_ids[..., 0] = token_ids[..., 0]
        out = embeddings(token_ids, tok_emb, pos_emb)
        token_ids.zero_()
        return out

    def scales_table(token_ids, tok_emb, pos_emb):
        out = embeddings(token_ids, tok_emb, pos_emb)
        with torch.no_grad():
            pos_emb.weight.mul_(1.5)
        return out

    assert ex.grade("input_embeddings", shifts_ids).hint == "input_modified"
    assert ex.grade("input_embeddings", scales_table).hint == "input_modified"
    assert ex.grade("input_embeddings", embeddings).passed
