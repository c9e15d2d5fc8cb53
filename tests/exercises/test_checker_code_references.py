"""The checkers' own code is a reference for every exercise of its module, derived from the
module rather than listed by hand (``_registry.checker_code``), and llm_lab's lesson code that computes an answer
is a reference for that exercise (listed in its record): handing it in or calling it scores 0 with status
``reference``."""

import inspect

import pytest
import torch

from llm_lab import exercises as ex
from llm_lab.exercises import _registry, _shared

pytestmark = pytest.mark.usefixtures("english")


def test_every_function_of_a_checker_module_is_a_reference_for_each_of_its_exercises():
    modules = {}
    for name, record in _registry.REGISTRY.items():
        module = inspect.getmodule(record.body)
        modules.setdefault(module, []).append(name)
    assert len(modules) >= 9
    for module, names in modules.items():
        short = module.__name__.rsplit(".", 1)[1]
        functions = [n for n, f in vars(module).items() if inspect.isfunction(f) and f.__module__ == module.__name__]
        assert functions, module.__name__
        for name in names:
            refs = set(_registry.record(name).references)
            assert {f"exercises.{short}.{f}" for f in functions} <= refs, name
            assert set(_shared.HELPERS) <= refs, name


def test_the_packed_mask_helper_of_the_checker_is_a_reference():
    from llm_lab.exercises import _ex02_softmax

    def via_helper(queries, keys, doc_ids):
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        return torch.softmax(scores.masked_fill(_ex02_softmax.packed_hidden(doc_ids), float("-inf")), dim=-1)

    assert ex.grade("packed_weights", via_helper).status == "reference"


def test_the_span_helper_of_the_checker_is_a_reference():
    from llm_lab.exercises import _ex06_data

    def via_spans(token_ids, max_length, stride):
        ids = torch.tensor(token_ids, dtype=torch.long)
        starts = [s for b, e in _ex06_data._spans(list(token_ids)) for s in range(b, e - max_length, stride)]
        index = torch.tensor(starts, dtype=torch.long)[:, None] + torch.arange(max_length + 1)
        windows = ids[index] if starts else torch.empty(0, max_length + 1, dtype=torch.long)
        return windows[:, :-1], windows[:, 1:]

    assert ex.grade("document_windows", via_spans).status == "reference"


def test_the_lessons_induction_scores_are_a_reference_for_finding_by_ablation():
    from llm_lab.explore import induction

    def via_lesson(runs, layer, head):
        scores = torch.stack([induction.induction_scores(run)[layer, head] for run in runs])
        return int((scores[0] - scores[1:]).argmax())

    def own(runs, layer, head):
        t = runs.shape[-1]
        rows = torch.arange(t // 2, t)
        scores = runs[:, layer, head, rows, rows - t // 2 + 1].mean(-1)
        return int((scores[0] - scores[1:]).argmax())

    assert ex.grade("find_by_ablation", via_lesson).status == "reference"
    assert ex.grade("find_by_ablation", own).status == "pass"  # the same computation, written out, passes
