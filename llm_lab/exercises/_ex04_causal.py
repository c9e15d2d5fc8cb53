"""Notebook 04: a compact causal attention class."""

from __future__ import annotations

import torch

from ._core import Exercise, shape_str
from ._modules import (
    build,
    check_eval_dropout,
    class_name,
    forward_case,
    linear,
    probe_train_dropout,
    qkv,
    reference_context,
)
from ._shared import gen, weights_variants

DROPOUT_HINTS = ("dropout_in_eval", "dropout_missing", "dropout_on_output", "dropout_on_input", "dropout_default_rate",
                 "dropout_rate_fixed", "dropout_rate_inverted", "dropout_rate_wrong", "dropout_not_scaled",
                 "dropout_scaled_by_p", "dropout_wrong_scale", "dropout_mask_shared", "dropout_on_scores")


def _context_variants(x: torch.Tensor, layers: dict) -> list:
    q, k, v = qkv(x, layers)
    return [(hint, lambda make=make: make() @ v) for hint, make in weights_variants(q, k)]


def body_causal_attention(cls) -> list[str]:
    g = gen(505)
    cases = []
    configs = (
        ((3, 4, 6, 0.0), ((2, 6, 3), (2, 4, 3), (1, 1, 3))),
        ((5, 3, 10, 0.5), ((3, 7, 5), (1, 10, 5))),
    )
    for n, (args, shapes) in enumerate(configs):
        d_in, d_out, context_length, dropout = args
        build_case = f"{class_name(cls)}{args}"
        module = build(cls, args, build_case, seed=100 + n)
        layers = {name: linear(module, name, d_in, d_out) for name in ("W_query", "W_key", "W_value")}
        module.eval()
        passed_full = False
        for shape in shapes:
            x = torch.randn(*shape, generator=g)
            case = f"{build_case}, x.shape={shape_str(shape)}"
            if dropout > 0:
                check_eval_dropout(module, x, case)
            forward_case(module, x, case, reference_context(x, layers), _context_variants(x, layers),
                         passed_full=passed_full, context_length=context_length)
            passed_full = passed_full or shape[1] == context_length
            cases.append(shape_str(shape))
    cases.append(probe_train_dropout(cls, heads=1, with_out_proj=False))
    return cases


RECORDS = [
    Exercise(
        name="causal_attention", notebook="04", body=body_causal_attention, points=2, takes="class",
        signature="``cls(d_in, d_out, context_length, dropout)`` with ``W_query/W_key/W_value``; "
        "``forward(x (B, T, d_in)) -> (B, T, d_out)``, dropout on the attention weights.",
        hints=("diagonal_masked", "future_open", "softmax_dim", "scale_missing", "scale_twice", "scale_inverted",
               "scale_uses_T", "mask_inverted", "mask_transposed", "masked_with_zero", "not_renormalized",
               "mask_wrong_size", "missing_attribute", "not_module", "instance_not_class") + DROPOUT_HINTS,
        references=("attention.CausalAttention", "attention.SelfAttention", "multihead.MultiHeadAttention",
                    "multihead.FusedMultiHeadAttention", "multihead.MultiHeadAttentionWrapper"),
    ),
]
