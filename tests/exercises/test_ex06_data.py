"""Notebook 06's exercises (windows inside documents joined by <|endoftext|>, input embeddings): the notebook's loop,
inputs left alone, shapes when nothing fits, position mistakes (the solutions and planted mistakes:
solutions_ex06_data.py)."""

import pytest
import torch
from solutions_ex06_data import EOT, docs_factory, docs_one_window_skipped, document_windows, embeddings

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- document windows: the notebook's loop passes, the list is left alone, shapes when nothing fits; embeddings --


def test_the_notebooks_loop_passes_and_so_does_the_stream_cut_by_hand():
    assert ex.grade("document_windows", docs_factory()).passed


def test_the_list_of_ids_is_left_alone():
    def pops(token_ids, max_length, stride):
        out = document_windows(list(token_ids), max_length, stride)
        token_ids.pop()
        return out

    assert ex.grade("document_windows", pops).hint == "input_modified"


def test_no_window_at_all_is_an_empty_pair_of_the_right_width():
    inputs, targets = document_windows([1, 2, EOT, 3, EOT], 4, 2)
    assert inputs.shape == targets.shape == (0, 4)

    def none_wide(t, m, s):
        return tuple(w.reshape(0, 0) if w.numel() == 0 else w for w in document_windows(t, m, s))

    result = ex.grade("document_windows", none_wide)
    assert (result.hint, "(0, 4)" in result.message) == ("wrong_shape", True), result.message


def test_a_document_of_max_length_plus_one_tokens_gives_one_window_ending_on_its_separator():
    inputs, targets = document_windows([5, 6, 7, EOT, 8, 9], 3, 1)
    assert inputs.tolist() == [[5, 6, 7]] and targets.tolist() == [[6, 7, EOT]]


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda ids, tok, pos: tok(ids) + pos(torch.arange(ids.shape[2])), "exception"),  # IndexError: tuple index
        (lambda ids, tok, pos: tok(ids) + pos(torch.arange(ids.shape[1]) + ids.shape[1]), "exception"),
        (lambda ids, tok, pos: tok(ids)[ids.shape[0] + 5], "exception"),
        (lambda ids, tok, pos: tok(ids) + pos(torch.arange(1, ids.shape[1] + 1)), "positions_one_based"),
        (lambda ids, tok, pos: tok(ids) + pos(ids), "positions_from_ids"),
    ],
    ids=["shape[2]", "shifted-by-T", "index-past-batch", "one-based", "from-ids"],
)
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


# ---- a document mistake is named only when it reproduces the learner's windows on every case ----


def test_an_off_by_one_guard_is_not_called_a_dropped_endoftext():
    for secret in (None, 2):
        result = ex.grade("document_windows", docs_one_window_skipped, secret=secret)
        assert result.status == "fail", result.message
        assert result.hint == "one_window_document_skipped", result.message


def test_the_unclosed_last_document_dropped_or_closed_by_a_made_up_endoftext_is_named():
    for secret in (None, 2):
        result = ex.grade("document_windows", docs_factory(unclosed="dropped"), secret=secret)
        assert (result.status, result.hint) == ("fail", "unclosed_document_dropped"), result.message
        assert "without <|endoftext|>" in result.message  # the case named is one whose last document is open
        assert ex.grade("document_windows", docs_factory(unclosed="if_any"), secret=secret).passed
        closed = ex.grade("document_windows", docs_factory(unclosed="closed"), secret=secret)
        assert (closed.status, closed.hint) == ("fail", "unclosed_document_closed"), closed.message
