"""Notebook 04: a compact causal attention class (exercise 2: with an additive mask buffer; exercise 4: the
masked_fill class fixed)."""

from __future__ import annotations

import torch

from ..masks import causal_mask
from ._core import Diagnosis, Exercise, Fail, shape_str
from ._harness import last_observed
from ._modules import (
    DROPOUT_HINTS,
    build,
    class_name,
    expect_eval_without_dropout,
    forward_case,
    linear,
    probe_train_dropout,
    qkv,
    reference_context,
)
from ._observe import called, marked
from ._shared import HELPERS, gen, softmax_masked, tril, triu, weights_mistakes


def _context_mistakes(x: torch.Tensor, layers: dict) -> list:
    q, k, v = qkv(x, layers)
    mistakes = [(hint, lambda make=make: make() @ v) for hint, make in weights_mistakes(q, k)]
    # the scale taken from the input's width d_in (x.shape[-1]) instead of the keys' d_k = d_out
    mistakes.insert(
        0,
        (
            "scale_uses_d_in",
            lambda: softmax_masked(q @ k.transpose(-2, -1) / x.shape[-1] ** 0.5, causal_mask(k.shape[-2])) @ v,
        ),
    )
    # an additive mask of 0/1 (the pattern right, -inf forgotten), added before or after the scaling
    d, t = k.shape[-1], k.shape[-2]
    s = q @ k.transpose(-2, -1)
    for ones in (triu(t, 1).float(), tril(t, 0).float()):
        mistakes += [
            ("additive_mask_01", lambda ones=ones: torch.softmax((s + ones) / d**0.5, dim=-1) @ v),
            ("additive_mask_01", lambda ones=ones: torch.softmax(s / d**0.5 + ones, dim=-1) @ v),
        ]
    return mistakes


# forward must add the stored mask, not hide scores by filling or writing a constant into them; writing computed
# values (``out[:, i] = weights @ values``, assembling the output) is no mask and is fine
NOT_ADDITIVE_OPS = ("masked_fill", "masked_fill_", "where")


def _hides_by_writing(record) -> str | None:
    """The call that hid scores without the additive mask: a fill or ``where``, or a write of one constant."""
    op = called(record, *NOT_ADDITIVE_OPS)
    if op:
        return op
    write = marked(record, "constant:")
    return write.split(":", 1)[1] if write else None


LINEARS = ("W_query", "W_key", "W_value")


def _mask_buffer(module, context_length: int) -> tuple[str, torch.Tensor]:
    """The registered buffer holding the causal mask: its last two dimensions are (context_length, context_length)."""
    size = (context_length, context_length)
    found = [(n, b) for n, b in dict(module.named_buffers()).items() if tuple(b.shape[-2:]) == size]
    if not found:
        for name, param in dict(module.named_parameters()).items():
            # by shape, or by name (grading's mirror of a module in another process knows only the names)
            if not name.startswith(LINEARS) and (tuple(param.shape[-2:]) == size or "mask" in name.lower()):
                raise Fail("mask_is_parameter", name=name)
        raise Fail("mask_not_buffer", n=context_length)
    return next(((n, b) for n, b in found if "mask" in n), found[0])


def _check_additive_buffer(name: str, buffer: torch.Tensor, context_length: int) -> None:
    mask = buffer.detach().cpu().reshape(-1, context_length, context_length)[0]
    if mask.dtype == torch.bool:
        raise Fail("mask_not_additive", name=name, got="bool")
    visible = tril(context_length, 0)
    mask = mask.double()
    if bool(((mask == 0) | (mask == 1)).all()):
        raise Fail("additive_mask_01", case=f"buffer `{name}`")
    if not (bool((mask[visible] == 0).all()) and bool((mask[~visible] <= -1e4).all())):
        raise Fail("mask_not_additive", name=name, got=str(buffer.dtype))


def body_causal_attention(cls, additive: bool = False) -> list[str]:
    g = gen(505)
    cases = []
    diagnosis = Diagnosis()  # a mistake is named only when it gives the learner's output on every case
    judged_after = []  # the additive exercise's bans and buffers: judged once every value is right
    configs = (
        ((3, 4, 6, 0.0), ((2, 6, 3), (2, 4, 3), (1, 1, 3))),
        ((5, 3, 10, 0.5), ((3, 7, 5), (1, 10, 5))),
    )
    for n, (args, shapes) in enumerate(configs):
        d_in, d_out, context_length, dropout = args
        build_case = f"{class_name(cls)}{args}"
        module = build(cls, args, build_case, seed=100 + n)
        layers = {name: linear(module, name, d_in, d_out) for name in LINEARS}
        module.eval()
        passed_full = False
        for shape in shapes:
            x = torch.randn(*shape, generator=g)
            case = f"{build_case}, x.shape={shape_str(shape)}"
            if dropout > 0:
                expect_eval_without_dropout(module, x, case)
            forward_case(
                module,
                x,
                case,
                lambda x=x, layers=layers: reference_context(x, layers),
                lambda x=x, layers=layers: _context_mistakes(x, layers),
                passed_full=passed_full,
                context_length=context_length,
                observe=additive,
                diagnosis=diagnosis,
            )
            if additive:
                op = _hides_by_writing(last_observed())
                if op:
                    judged_after.append(Fail("additive_uses_masked_fill", ref=op, case=case))
            passed_full = passed_full or shape[1] == context_length
            cases.append(shape_str(shape))
        if additive:  # after the forward cases: a forward still to be written is "not implemented" first
            judged_after.append((module, context_length))
    diagnosis.verdict()
    for judged in judged_after:
        if isinstance(judged, Fail):
            raise judged
        _check_additive_buffer(*_mask_buffer(*judged), judged[1])
    cases.append(probe_train_dropout(cls, heads=1, with_out_proj=False))
    return cases


def body_additive_attention(cls) -> list[str]:
    return body_causal_attention(cls, additive=True)


_REGISTER = "self.register_buffer(\"mask\", torch.triu(torch.full((context_length, context_length), float('-inf')), diagonal=1))"  # noqa: E501
_ADD = "attn_scores = attn_scores + self.mask[:num_tokens, :num_tokens]"
_ADDITIVE_MESSAGES = {
    "additive_uses_masked_fill": {
        "en": "{title}: right values, but forward calls `{ref}` (input: {case}); the statement rules out `masked_fill` and `torch.where` anywhere in forward, also as a NaN guard (`torch.nan_to_num` and `clamp` are fine): store an additive mask (0 where a query may look, -inf in the future) and add it to the scores.",  # noqa: E501
        "zh": "{title}：数值是对的，但 forward 调用了 `{ref}`（输入：{case}）；题目排除 forward 里任何地方的 `masked_fill` 和 `torch.where`，用作 NaN 保护也不行（`torch.nan_to_num` 和 `clamp` 可以）：保存一个加性遮蔽（可以看的位置为 0，未来为 -inf），并把它加到分数上。",  # noqa: E501
    },
    "mask_not_buffer": {
        "en": "{title}: no registered buffer holds the ({n}, {n}) causal mask (context_length={n}): a plain tensor attribute stays on the CPU after `.to(device)` and is missing from `state_dict`; register it with `self.register_buffer(...)`.",  # noqa: E501
        "zh": "{title}：没有任何已注册的缓冲区保存 ({n}, {n}) 的因果遮蔽（context_length={n}）：普通的张量属性在 `.to(device)` 之后仍留在 CPU 上，也不在 `state_dict` 里；请用 `self.register_buffer(...)` 注册它。",  # noqa: E501
    },
    "mask_is_parameter": {
        "en": "{title}: the mask `{name}` is an nn.Parameter: the optimizer would get it as context_length² trainable numbers, though it is a constant; register it as a buffer with `self.register_buffer(...)`.",  # noqa: E501
        "zh": "{title}：遮蔽 `{name}` 是一个 nn.Parameter：优化器会把它当成 context_length² 个可训练的数，而它其实是常量；请用 `self.register_buffer(...)` 把它注册为缓冲区。",  # noqa: E501
    },
    "mask_not_additive": {
        "en": "{title}: the buffer `{name}` ({got}) is not the additive mask: that one is float, 0 on and below the diagonal and -inf above it, and forward adds it to the scores.",  # noqa: E501
        "zh": "{title}：缓冲区 `{name}`（{got}）不是加性遮蔽：加性遮蔽是浮点张量，对角线及其以下为 0，对角线以上为 -inf，forward 把它加到分数上。",  # noqa: E501
    },
    "additive_mask_01": {
        "en": "{title}: the mask added to the scores holds 0 and 1 (input: {case}): adding 1 barely changes a score, so the future stays visible; an additive mask holds 0 where a query may look and -inf in the future.",  # noqa: E501
        "zh": "{title}：加到分数上的遮蔽只含 0 和 1（输入：{case}）：加 1 几乎不改变分数，未来仍然可见；加性遮蔽在可以看的位置为 0，在未来为 -inf。",  # noqa: E501
    },
}
_ADDITIVE_FIXES = {
    "additive_uses_masked_fill": {
        "en": f"In `forward`: `{_ADD}`, no `masked_fill` or `torch.where` (`torch.nan_to_num` or `clamp` for a guard).",
        "zh": f"在 `forward` 里写 `{_ADD}`，不用 `masked_fill` 或 `torch.where`（需要保护时用 `torch.nan_to_num` 或 `clamp`）。",  # noqa: E501
    },
    "mask_not_buffer": {"en": f"In `__init__`: `{_REGISTER}`.", "zh": f"在 `__init__` 里写 `{_REGISTER}`。"},
    "mask_is_parameter": {"en": f"In `__init__`: `{_REGISTER}`.", "zh": f"在 `__init__` 里写 `{_REGISTER}`。"},
    "mask_not_additive": {
        "en": f"In `__init__`: `{_REGISTER}`; in `forward`: `{_ADD}`.",
        "zh": f"在 `__init__` 里写 `{_REGISTER}`；在 `forward` 里写 `{_ADD}`。",
    },
    "additive_mask_01": {
        "en": f"-inf, not 1, above the diagonal: `{_REGISTER}`.",
        "zh": f"对角线以上用 -inf 而不是 1：`{_REGISTER}`。",
    },
    # the global fixes speak of masked_fill and bool masks; here the mask is added
    "future_open": {
        "en": f"Add the mask to the scores before the softmax: `{_ADD}`.",
        "zh": f"在 softmax 之前把遮蔽加到分数上：`{_ADD}`。",
    },
    "not_renormalized": {
        "en": f"Add the mask before the softmax instead of zeroing weights after it: `{_ADD}`.",
        "zh": f"在 softmax 之前加上遮蔽，而不是在它之后把权重置零：`{_ADD}`。",
    },
    "masked_with_zero": {
        "en": f"Add -inf instead of setting the future to 0: `{_ADD}` with `{_REGISTER}`.",
        "zh": f"加上 -inf，而不是把未来置为 0：`{_ADD}`，其中 `{_REGISTER}`。",
    },
    "mask_inverted": {
        "en": f"-inf strictly above the diagonal, 0 elsewhere: `{_REGISTER}`.",
        "zh": f"只在对角线以上为 -inf，其余为 0：`{_REGISTER}`。",
    },
    "mask_transposed": {
        "en": f"-inf strictly above the diagonal (j > i), not below: `{_REGISTER}`.",
        "zh": f"只在对角线以上（j > i）为 -inf，而不是以下：`{_REGISTER}`。",
    },
    "diagonal_masked": {
        "en": f"`diagonal=1`, so that the diagonal stays 0: `{_REGISTER}`.",
        "zh": f"用 `diagonal=1`，让对角线保持为 0：`{_REGISTER}`。",
    },
}

_HINTS = (
    "diagonal_masked",
    "future_open",
    "softmax_dim",
    "scale_missing",
    "scale_twice",
    "scale_inverted",
    "scale_uses_T",
    "mask_inverted",
    "mask_transposed",
    "masked_with_zero",
    "not_renormalized",
    "mask_wrong_size",
    "missing_attribute",
    "not_module",
    "instance_not_class",
    "additive_mask_01",
    "scale_uses_d_in",
) + DROPOUT_HINTS
_REFERENCES = (
    "attention.CausalAttention",
    "attention.SelfAttention",
    "multihead.MultiHeadAttention",
    "multihead.FusedMultiHeadAttention",
    "multihead.MultiHeadAttentionWrapper",
) + HELPERS

RECORDS = [
    Exercise(
        name="additive_attention",
        notebook="04",
        body=body_additive_attention,
        points=2,
        takes="class",
        signature="``cls(d_in, d_out, context_length, dropout)`` with ``W_query/W_key/W_value`` and an additive "
        "causal mask (0 / -inf) registered as a buffer and added to the scores; ``forward(x (B, T, d_in)) -> "
        "(B, T, d_out)``, dropout on the attention weights.",
        hints=_HINTS + ("additive_uses_masked_fill", "mask_not_buffer", "mask_is_parameter", "mask_not_additive"),
        references=_REFERENCES,
        messages=_ADDITIVE_MESSAGES,
        fixes=_ADDITIVE_FIXES,
    ),
    Exercise(
        name="causal_attention",
        notebook="04",
        body=body_causal_attention,
        points=2,
        takes="class",
        signature="``cls(d_in, d_out, context_length, dropout)`` with ``W_query/W_key/W_value``; "
        "``forward(x (B, T, d_in)) -> (B, T, d_out)``, dropout on the attention weights.",
        hints=_HINTS,
        references=_REFERENCES,
        messages={"additive_mask_01": _ADDITIVE_MESSAGES["additive_mask_01"]},
    ),
]
