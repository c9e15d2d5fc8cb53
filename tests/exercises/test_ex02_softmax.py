"""Notebook 02's exercises of llm_lab/exercises/_ex02_softmax.py (causal weights of packed documents, causal
softmax with padding): what the statement says about documents, and names given only to mistakes the code made
(the solutions and planted mistakes: solutions_ex02_softmax.py)."""

import pytest
import torch

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


def _scores(q, k, scale=None):
    return q @ k.transpose(-2, -1) / (k.shape[-1] ** 0.5 if scale is None else scale)


def documents_as_runs(queries, keys, doc_ids):
    """A document taken as a run of equal adjacent ids (a new one at every change of id)."""
    t = doc_ids.shape[-1]
    change = torch.zeros_like(doc_ids)
    change[..., 1:] = (doc_ids[..., 1:] != doc_ids[..., :-1]).long()
    run = change.cumsum(-1)
    hide = torch.ones(t, t, dtype=torch.bool).triu(1) | (run.unsqueeze(-1) != run.unsqueeze(-2))
    return torch.softmax(_scores(queries, keys).masked_fill(hide, float("-inf")), dim=-1)


def scale_hard_coded(queries, keys, doc_ids):
    """The scale written as `/ 2`: sqrt(d_k) of one of the lesson's examples."""
    t = doc_ids.shape[-1]
    hide = torch.ones(t, t, dtype=torch.bool).triu(1) | (doc_ids.unsqueeze(-1) != doc_ids.unsqueeze(-2))
    return torch.softmax(_scores(queries, keys, scale=2).masked_fill(hide, float("-inf")), dim=-1)


def test_equal_ids_apart_are_one_document():
    """ "Equal ids belong to one document": no case had equal ids that were not adjacent, so code that starts a
    document at every change of id passed. A case such as ids [0, 0, 1, 1, 0, 0] tells the two apart."""
    for secret in (None, 4):
        result = ex.grade("packed_weights", documents_as_runs, secret=secret)
        assert result.status == "fail", result.message


def test_a_hard_coded_scale_is_not_named_after_one_case():
    """On the one case where d_k = 16 and T = 4, `/ 2` equals a scale by sqrt(T): it was called "the scale uses
    the number of tokens". A mistake is named only when its computation gives the learner's output on every case
    (the right ones included), so this gets the plain wrong-values message."""
    for lang in ("en", "zh"):
        result = ex.grade("packed_weights", scale_hard_coded, lang=lang)
        assert (result.status, result.hint) == ("fail", "wrong_values"), result.message
