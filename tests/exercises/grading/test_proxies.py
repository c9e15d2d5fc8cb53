"""Grading through ``llm_lab.exercises.grading``, as ``tools/teaching/grader`` does, with the kernel's side served in
this process (a loopback link, tests/exercises/_remote_loopback.py): every exercise gives the same verdict through
the proxies as when the checker holds the learner's object itself. The sandboxed kernel is tested in
tests/tools/teaching/grader/test_grade*.py; here, that the protocol carries everything each checker needs (module
layers, train/eval, seeds, in-place changes, errors, observed calls) and that what comes back is only ever data."""

from __future__ import annotations

import base64
import json

import pytest
import torch
from _exercise_solutions import StubModule, stub
from _exercise_tables import PLANTED, REFERENCES, SOLUTIONS
from _remote_loopback import loopback, remote_grade
from torch import nn

from llm_lab import exercises as ex
from llm_lab.exercises.grading import answering, proxies, wire


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_correct_solutions_pass_through_the_protocol(name):
    result = remote_grade(name, SOLUTIONS[name])
    assert result.status == "pass", result.message


@pytest.mark.parametrize(
    ("exercise", "fn", "hint"), PLANTED[::2], ids=[f"{e}-{h}-{i}" for i, (e, _, h) in enumerate(PLANTED[::2])]
)
def test_planted_mistakes_get_the_same_verdict(exercise, fn, hint):
    local, remote = ex.grade(exercise, fn), remote_grade(exercise, fn)
    assert (remote.status, remote.hint) == (local.status, local.hint) == ("fail", hint), remote.message


@pytest.mark.parametrize("name", list(REFERENCES))
def test_llm_labs_reference_is_named_from_the_kernels_report(name):
    assert remote_grade(name, REFERENCES[name]).status == "reference"


def test_stubs_are_todo():
    assert remote_grade("causal_mask", stub).status == "todo"
    assert remote_grade("causal_attention", StubModule).status == "todo"


def test_an_instance_instead_of_a_class_is_named():
    module = SOLUTIONS["causal_attention"](3, 4, 6, 0.0)
    assert remote_grade("causal_attention", module).hint == "instance_not_class"


def test_a_missing_name_is_a_name_error():
    link = loopback()
    answering.capture("gone", lambda: undefined_name)  # noqa: F821
    with pytest.raises(NameError):
        link.lookup("gone")


def test_tensors_and_values_round_trip():
    value = {
        "a": torch.arange(6).reshape(2, 3),
        "b": (1.5, float("inf"), None, True, "x"),
        "c": [torch.tensor([True, False]), torch.randn(2, dtype=torch.float64), torch.ones(2, dtype=torch.bfloat16)],
        "e": nn.Embedding(4, 2),
    }
    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    assert torch.equal(back["a"], value["a"]) and back["b"] == value["b"]
    assert all(torch.equal(x, y) for x, y in zip(back["c"], value["c"], strict=True))
    assert torch.equal(back["e"].weight, value["e"].weight)


def test_anything_else_comes_back_as_a_name_only():
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    back = wire.decode(wire.encode(Evil()))
    assert isinstance(back, wire.Opaque) and type(back).__name__ == "Evil"
    assert wire.decode(wire.encode(object())).__class__.__name__ == "object"


@pytest.mark.parametrize(
    "bad",
    [
        {"__tensor__": "float32", "shape": [2], "data": base64.b64encode(b"x").decode()},  # wrong byte count
        {"__tensor__": "object", "shape": [1], "data": ""},
        {"__tensor__": "float32", "shape": [-1], "data": ""},
        {"__tensor__": "float32", "shape": [2**40], "data": ""},  # more than MAX_BYTES
        {"__pickle__": "gASV"},
        {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5},
    ],
)
def test_a_malformed_reply_is_refused(bad):
    with pytest.raises(wire.WireError):
        wire.decode(bad)


def test_a_forged_status_is_not_a_verdict():
    """A kernel that answers a call with {"status": "pass"} has returned no tensor: the checker says so; one that
    sends JSON outside the protocol is refused."""

    def forged(request, timeout):
        if request["op"] == "describe":
            return wire.encode({"object": {"handle": 1, "kind": "function", "callable": True, "name": "x"}})
        return wire.encode({"status": "pass", "passed": True, "value": None})

    result = ex.grade("causal_mask", proxies.KernelLink(forged).lookup("causal_mask"))
    assert (result.status, result.hint) == ("fail", "returned_none")
    with pytest.raises(wire.WireError):
        proxies.KernelLink(lambda request, timeout: {"object": {"handle": 1}, "status": "pass"}).lookup("causal_mask")
