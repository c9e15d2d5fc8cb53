"""Every checker computes its expected answer after the learner's call returns: code that
walks up the frames for a tensor the checker already computed finds none for its own input, and fails.

``frame_reader`` is that code: it returns the first tensor of the output's shape that a checker frame holds
(a local ``want``, the reference's output, ...) other than the inputs. Before the fix it passed 00 Ex 2, 01 Ex 3,
02 Ex 2 and 3 and the 04/05 class checkers; the test also shows it passing where the answer IS reachable (a
checker body that computes first), so it cannot pass for want of trying."""

import sys

import pytest
import torch
from torch import nn

from llm_lab import exercises as ex

pytestmark = pytest.mark.usefixtures("english")


def _read_answer(shape, inputs):
    """The first floating tensor of ``shape`` in a caller's frame that differs from every input; else the first
    input of that shape (where the answer equals the input, as for a (1, 1) matrix)."""
    frame, same_as_input = sys._getframe(2), None
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(shape) and value.is_floating_point():
                if not any(
                    isinstance(x, torch.Tensor) and x.shape == value.shape and torch.equal(x, value) for x in inputs
                ):
                    return value.clone().float()
                same_as_input = value if same_as_input is None else same_as_input
        frame = frame.f_back
    return torch.zeros(shape) if same_as_input is None else same_as_input.clone()


def frame_reader(*args):
    """A function exercise: the answer has the shape of the first argument's (T, T) weights."""
    first = args[0]
    if isinstance(first, torch.Tensor) and len(args) == 3:  # packed weights: (queries, keys, doc_ids)
        shape = (*first.shape[:-1], first.shape[-2])
    else:
        shape = first.shape
    return _read_answer(shape, args)


class FrameReader(nn.Module):
    """Honest attention in train mode (so the dropout probe passes); in eval mode it reads the answer."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads=None):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=False) for _ in range(3))
        self.num_heads, self.d_out = num_heads, d_out
        if num_heads is not None:
            self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.full((context_length, context_length), float("-inf")), 1))

    def forward(self, x):
        if not self.training:
            return _read_answer((*x.shape[:2], self.d_out), (x,))
        b, t, _ = x.shape
        nh = self.num_heads or 1
        q, k, v = (layer(x).view(b, t, nh, -1).transpose(1, 2) for layer in (self.W_query, self.W_key, self.W_value))
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5 + self.mask[:t, :t]
        context = (self.dropout(torch.softmax(scores, dim=-1)) @ v).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(context) if self.num_heads is not None else context


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        ("window_weights", frame_reader),
        ("renormalize", frame_reader),
        ("packed_weights", frame_reader),
        ("causal_softmax", frame_reader),
        ("additive_attention", FrameReader),
        ("causal_attention", FrameReader),
        ("multihead", FrameReader),
    ],
)
def test_a_frame_reader_finds_no_answer(name, obj):
    for grade in (ex.grade, lambda n, o: ex.grade(n, o, secret=5)):
        result = grade(name, obj)
        assert result.status != "pass", (name, result.message)


def role_reader(runs, layer, head):
    """08 Ex 3: the head that a caller's frame holds as ``roles["needed"]`` (how the checker drew the runs)."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and isinstance(value.get("needed"), int):
                return value["needed"]
        frame = frame.f_back
    return 0


def test_the_ablation_checker_holds_no_drawn_answer_while_the_learner_runs():
    """find_by_ablation's checker drew each model's runs with their roles (the needed head among them) and held
    them in its frame while it called the learner's code: a frame walker read the answer and passed."""
    for grade in (ex.grade, lambda n, o: ex.grade(n, o, secret=5)):
        result = grade("find_by_ablation", role_reader)
        assert result.status != "pass", result.message


def test_the_frame_reader_reads_an_answer_computed_before_the_call():
    """The same reader passes where the expected answer is computed first: the test above can fail."""
    want = torch.softmax(torch.randn(4, 4), dim=-1)
    x = torch.randn(4, 4)

    def checker():
        expected = want * 2  # noqa: F841  (what a checker computing first holds while it calls the learner)
        return frame_reader(x)

    assert torch.equal(checker(), want * 2)
