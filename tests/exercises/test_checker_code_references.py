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


# ---- a reference rebuilt as a new code object is still the reference ---------------------------------------------


def _rebuilt(fn, namespace=None):
    """``fn`` as a new function of a new code object (renamed: another ``id``, another name), in ``namespace``."""
    import types

    code = fn.__code__.replace(co_name=fn.__name__ + "_mine")
    return types.FunctionType(code, fn.__globals__ if namespace is None else namespace, fn.__name__, fn.__defaults__)


def test_a_reference_rebuilt_from_its_code_object_is_recognised():
    """The watch matched code by ``id``: ``types.FunctionType(f.__code__.replace(co_name=...), ...)`` ran the
    checker's packed mask helper, or the lesson's induction score with its helpers, unseen."""
    from llm_lab.exercises import _ex02_softmax
    from llm_lab.explore import heads

    def via_rebuilt_helper(queries, keys, doc_ids):
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        hidden = _rebuilt(_ex02_softmax.packed_hidden)(doc_ids)
        return torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)

    def via_rebuilt_explorer(attn_weights, token_ids):
        namespace = dict(vars(heads))
        for name in ("induction_score", "_masked_score", "_induction_targets", "_weights", "_ids", "_earlier"):
            namespace[name] = _rebuilt(getattr(heads, name), namespace)
        return torch.stack([namespace["induction_score"](w[None], token_ids[None]) for w in attn_weights])

    assert ex.grade("packed_weights", via_rebuilt_helper).status == "reference"
    assert ex.grade("induction_score", via_rebuilt_explorer).status == "reference"


def test_code_equal_to_a_reference_but_compiled_from_the_notebook_is_the_learners_own():
    """Content is matched together with the file the code was compiled from: a fixed find-the-bug function can be
    the reference line for line, and is the learner's."""
    from llm_lab.exercises import _ex02_softmax

    namespace = {}
    source = inspect.getsource(_ex02_softmax.packed_hidden)
    exec(
        compile("from __future__ import annotations\n" + source, "<notebook cell>", "exec"),
        vars(_ex02_softmax) | namespace,
        namespace,
    )
    same = namespace["packed_hidden"]

    def own(queries, keys, doc_ids):
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        return torch.softmax(scores.masked_fill(same(doc_ids), float("-inf")), dim=-1)

    assert ex.grade("packed_weights", own).status == "pass"


def test_the_lessons_masked_average_is_a_reference_for_the_induction_score():
    """``explore.heads.induction_score`` delegates its average to ``_masked_score``: called with the learner's own
    targets it computed the answer, unseen."""
    from llm_lab.explore.heads import _masked_score

    def via_average(attn_weights, token_ids):
        t = token_ids.shape[0]
        targets = torch.zeros(t, t, dtype=torch.bool)
        targets[:, 1:] = token_ids[:, None] == token_ids[None, :-1]
        targets &= torch.ones(t, t, dtype=torch.bool).tril(-1)
        return torch.stack(
            [_masked_score(attn_weights[lay : lay + 1], targets[None]) for lay in range(len(attn_weights))]
        )

    assert ex.grade("induction_score", via_average).status == "reference"
