"""Notebook 06's exercises (windows inside documents joined by <|endoftext|>, the next-token loss): the notebook's
loop, inputs left alone, shapes when nothing fits, the loss's float32 traps (the solutions and planted mistakes:
solutions_ex06_data.py)."""

import pytest
import torch
from solutions_ex06_data import (
    EOT,
    docs_factory,
    docs_one_window_skipped,
    document_windows,
    loss_by_library,
    loss_factory,
    loss_in_place,
    loss_logsumexp,
    loss_lse_minus_score,
    next_token_loss,
)

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- document windows: the notebook's loop passes, the list is left alone, shapes when nothing fits -------------


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


# ---- the next-token loss: the two float32 traps each fail a naive formula that passes the ordinary cases --------


def test_each_trap_fails_exactly_the_formula_it_is_for():
    from llm_lab.exercises._ex06_data import _loss_cases

    naive = loss_factory(shift=False)
    log_p = loss_factory(log_of_p=True)
    for case, logits, targets, why in _loss_cases(torch.Generator().manual_seed(1010)):
        want = next_token_loss(logits, targets)
        assert torch.isfinite(want), case
        assert bool(torch.isfinite(naive(logits, targets))) == (why != "overflow"), case
        assert bool(torch.isfinite(log_p(logits, targets))) == (why != "underflow"), case


def test_the_loss_of_equal_scores_is_the_uniform_guess():
    logits, targets = torch.zeros(2, 3, 50257), torch.zeros(2, 3, dtype=torch.long)
    assert abs(next_token_loss(logits, targets).item() - 10.82) < 0.005


def test_a_loss_that_shifts_in_place_or_calls_the_library_is_named():
    for secret in (None, 2):
        assert ex.grade("next_token_loss", loss_in_place, secret=secret).hint == "input_modified"
        result = ex.grade("next_token_loss", loss_by_library, secret=secret)
        assert (result.status, result.hint) == ("fail", "uses_cross_entropy"), result.message
        assert "cross_entropy" in result.message
        assert ex.grade("next_token_loss", next_token_loss, secret=secret).passed
        assert ex.grade("next_token_loss", loss_lse_minus_score, secret=secret).passed


def test_log_softmax_is_ruled_out_too():
    def with_log_softmax(logits, targets):
        return -torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).mean()

    assert ex.grade("next_token_loss", with_log_softmax).hint == "uses_cross_entropy"


def test_logsumexp_is_ruled_out_the_log_sum_exp_written_by_hand_passes():
    """torch.logsumexp shifts by the maximum itself, the step the float32 traps ask for: it is named, while the
    same formula with the shift written out passes."""
    result = ex.grade("next_token_loss", loss_logsumexp)
    assert (result.status, result.hint) == ("fail", "uses_cross_entropy"), result.message
    assert "logsumexp" in result.message
    assert ex.grade("next_token_loss", loss_lse_minus_score).passed


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
