"""The statements of 04-07 and 09 checked across notebooks: the same verdicts when grading runs the learner's code in
another process, docs/checks.md covering every exercise, and correct solutions written differently passing.
(Each exercise's own requirements are tested in tests/exercises/test_exNN_*.py.)"""

import re

import pytest
import torch
import torch.nn.functional as F
from _exercise_solutions import flex
from _exercise_tables import SOLUTIONS
from solutions_ex04_causal import _scores_dropout_class, additive_class
from solutions_ex05_multihead import qkv_lesson_07, qkv_per_group, split_qkv
from solutions_ex05_padding import padded_with
from solutions_ex06_data import docs_factory, docs_target_crosses, document_windows, loss_factory, next_token_loss
from solutions_ex07_tiled import blocked, full_scores, whole_rows
from solutions_ex09_positions import alibi_broadcast, alibi_factory

from llm_lab import exercises as ex

NEG_INF = float("-inf")


pytestmark = pytest.mark.usefixtures("english")  # the checkers speak English here (tests/conftest.py)


# ---- the same verdicts when grading runs the learner's code in another process (grading) -------------------------


def _through_a_kernel(exercise, obj):
    """``obj`` as grading sees it: a proxy whose calls go, as JSON, to ``grading.answering`` (here in this
    process: the same encoding, the same ``_call``, no sandbox)."""
    import json

    from llm_lab.exercises.grading import answering, proxies, wire
    from tools.teaching.grader import judging

    def send(request, timeout):
        request = json.loads(json.dumps(request))
        if request["op"] == "describe":
            return json.loads(json.dumps(wire.encode({"object": answering.describe(obj)})))
        return json.loads(json.dumps(wire.encode(answering.answer_call(request))))

    link = proxies.KernelLink(send)
    link.exercise, link.watching = exercise, judging.watching(exercise)  # what the grader sends with each call
    return link.lookup("obj")


REMOTE_CASES = [
    ("tiled_attention", blocked),
    ("tiled_attention", whole_rows),
    ("tiled_attention", full_scores),
    ("tiled_attention", lambda q, k, v, b: blocked(q, k, v, b, inplace=True)),
    ("tiled_attention", lambda q, k, v, b: blocked(q, k, v, b, init=0.0)),
    ("tiled_attention", lambda q, k, v, b: torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ("additive_attention", additive_class()),
    ("additive_attention", additive_class(how="attribute")),
    ("additive_attention", additive_class(how="parameter")),
    ("additive_attention", additive_class(forward="masked_fill")),
    ("additive_attention", additive_class(mask=lambda n: torch.triu(torch.ones(n, n), 1))),
    ("padded_attention", padded_with(inplace=True)),
    ("padded_attention", padded_with(zero_padded_queries=True)),
    ("padded_attention", padded_with(num_tokens=lambda q: q.shape[1])),
    ("split_qkv", split_qkv),
    ("split_qkv", qkv_per_group),
    ("split_qkv", qkv_lesson_07),
    ("document_windows", document_windows),
    ("document_windows", docs_factory()),
    ("document_windows", docs_target_crosses),
    ("document_windows", docs_factory(split="starts")),
    ("next_token_loss", next_token_loss),
    ("next_token_loss", loss_factory(log_of_p=True)),
    ("alibi_bias", alibi_broadcast),
    ("alibi_bias", alibi_factory(offsets="j-i")),
    ("alibi_bias", alibi_factory(future="large")),
    ("alibi_bias", alibi_factory(heads=False)),
]


@pytest.mark.parametrize(("exercise", "obj"), REMOTE_CASES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(REMOTE_CASES)])
def test_the_measured_requirements_hold_when_the_code_runs_in_a_kernel(exercise, obj):
    here, there = ex.grade(exercise, obj), ex.grade(exercise, _through_a_kernel(exercise, obj))
    assert (there.status, there.hint) == (here.status, here.hint), there.message


def test_dropout_on_scores_is_named_through_a_kernel():
    cls = _scores_dropout_class()
    assert ex.grade("causal_attention", _through_a_kernel("causal_attention", cls)).hint == "dropout_on_scores"


# ---- docs/checks.md: per exercise, what is checked automatically and what by hand --------------------------------


def test_the_checks_page_covers_every_notebook_with_exercises_in_both_languages():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    pages = {
        lang: (docs / name).read_text(encoding="utf-8")
        for lang, name in (("en", "checks.md"), ("zh", "checks.zh-CN.md"))
    }
    sources = (Path(__file__).resolve().parents[2] / "notebooks" / "src").glob("[0-9][0-9]_*.exercises.nbsrc")
    notebooks = sorted(src.name[:2] for src in sources)  # every notebook with exercises, from the files
    assert set(notebooks) <= {r.notebook for r in ex.REGISTRY.values()}
    for lang, text in pages.items():
        for nn in notebooks:
            assert f"### {nn} · " in text, (lang, nn)
        assert "check_additive_attention" in text and "block_size" in text
    rows = {lang: sum(line.startswith("| ") for line in text.splitlines()) for lang, text in pages.items()}
    assert rows["en"] == rows["zh"]
    points = {"en": "{} pt", "zh": "{} 分"}
    for lang, text in pages.items():  # in step with the registry: each exercise's row, its checker, its points
        sections = dict(re.findall(r"^### (\d\d) · .*?\n(.*?)(?=^### |^## )", text, flags=re.M | re.S))
        assert set(sections) == {r.notebook for r in ex.REGISTRY.values()}, (lang, sorted(sections))
        named = set(re.findall(r"`check_(\w+)`", "".join(sections.values())))
        assert named == set(ex.REGISTRY), (lang, named ^ set(ex.REGISTRY))
        for name, record in ex.REGISTRY.items():
            row = [line for line in sections[record.notebook].splitlines() if f"`check_{name}`" in line]
            assert len(row) == 1, (lang, name, "one row per exercise, in its notebook's section")
            head = row[0].split(" | ")[0]
            assert points[lang].format(record.points) in head, (lang, name, head)
    for name in (
        "additive_attention",
        "causal_attention",
        "split_qkv",
        "multihead",
        "padded_attention",
        "document_windows",
        "next_token_loss",
        "tiled_attention",
    ):
        assert ex.points(name) >= 1


# ---- keep what works: correct solutions written differently still pass ------------------------------------------


def padded_einsum_float64(queries, keys, values, key_padding_mask):
    num_tokens = queries.shape[-2]
    hidden = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :]
    scores = torch.einsum("bhqd,bhkd->bhqk", queries.double(), keys.double()) / keys.shape[-1] ** 0.5
    weights = torch.softmax(torch.where(hidden, torch.tensor(NEG_INF, dtype=torch.float64), scores), dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)
    return (weights @ values.double()).float().transpose(-2, -1).contiguous().transpose(-2, -1)  # non-contiguous


def padded_sdpa_mask(queries, keys, values, key_padding_mask):
    num_tokens = queries.shape[-2]
    visible = ~(torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :])
    out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=visible)
    return out.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0).nan_to_num(0.0)


def _windows_by_unfold(token_ids, max_length, stride):
    """Each document cut with one ``unfold``, the pieces joined."""
    ids = torch.as_tensor(token_ids)
    ends = (ids == 50256).nonzero().flatten() + 1
    docs = [d for d in torch.tensor_split(ids, ends) if len(d) > max_length]
    empty = ids.new_empty(0, max_length + 1)
    windows = torch.cat([d.unfold(0, max_length + 1, stride) for d in docs]) if docs else empty
    return windows.split([max_length, 1], dim=1)[0], windows[:, 1:]


def additive_sdpa():
    cls = additive_class()

    class AdditiveSDPA(cls):
        def forward(self, x):
            num_tokens = x.shape[1]
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            return F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=self.mask[:num_tokens, :num_tokens],
                dropout_p=self.dropout.p if self.training else 0.0,
            )

    return AdditiveSDPA


@pytest.mark.parametrize(
    ("exercise", "obj"),
    [
        ("padded_attention", padded_einsum_float64),
        ("padded_attention", padded_sdpa_mask),
        ("additive_attention", additive_sdpa()),
        (
            "split_qkv",
            lambda qkv, nh, n_kv: qkv.unflatten(-1, (nh + 2 * n_kv, -1)).transpose(1, 2).split([nh, n_kv, n_kv], dim=1),
        ),
        ("document_windows", _windows_by_unfold),
    ],
    ids=[
        "padded-einsum-float64-where",
        "padded-sdpa-bool-mask",
        "additive-sdpa-attn_mask",
        "split-qkv-unflatten",
        "document-windows-unfold-per-document",
    ],
)
def test_correct_solutions_written_differently_pass(exercise, obj):
    result = ex.grade(exercise, obj)
    assert result.passed, result.message


# ---- correct code in other styles passes every observed checker: legacy constructors, numpy, op overloads ------

aten = torch.ops.aten


def _blocked_overloads(queries, keys, values, block_size):
    """The notebook's blocked attention written with ``torch.ops.aten.<op>.<overload>`` and ``torch.Tensor([...])``."""
    t, hs = queries.shape[-2], queries.shape[-1]
    scale = torch.Tensor([hs]).sqrt()
    out = aten.empty_like.default(values)
    for qs in range(0, t, block_size):
        q = aten.div.Tensor(queries[:, :, qs : qs + block_size], scale)
        m = aten.full.default(list(q.shape[:-1]), NEG_INF)
        s, acc = torch.zeros(q.shape[:-1]), torch.zeros(q.shape)
        rows = torch.arange(qs, qs + q.shape[2])[:, None]
        for ks in range(0, qs + q.shape[2], block_size):
            sc = aten.matmul.default(q, keys[:, :, ks : ks + block_size].transpose(-2, -1))
            sc = aten.masked_fill.Scalar(sc, torch.arange(ks, ks + sc.shape[-1]) > rows, NEG_INF)
            new = aten.maximum.default(m, sc.amax(-1))
            p = aten.exp.default(sc - new[..., None])
            factor = aten.exp.default(m - new)
            s = s * factor + p.sum(-1)
            acc = acc * factor[..., None] + p @ values[:, :, ks : ks + block_size]
            m = new
        out[:, :, qs : qs + block_size] = acc / s[..., None]
    return out


def _cached_from_numpy(queries, keys, values, window):
    import numpy as np

    q_len, k_len = queries.shape[-2], keys.shape[-2]
    ones = np.ones((q_len, k_len), dtype=bool)
    band = np.triu(ones, k_len - q_len + 1) | np.tril(ones, k_len - q_len - window)
    hidden = torch.from_numpy(band)
    scores = aten.div.Tensor(queries @ keys.transpose(-2, -1), torch.Tensor([queries.shape[-1]]).sqrt())
    return aten._softmax.default(scores.masked_fill(hidden, NEG_INF), -1, False) @ values


def _padded_from_numpy(queries, keys, values, key_padding_mask):
    import numpy as np

    t = queries.shape[-2]
    hidden = torch.from_numpy(np.triu(np.ones((t, t), dtype=bool), 1)) | key_padding_mask[:, None, None, :]
    scores = queries @ keys.transpose(-2, -1) / torch.Tensor([keys.shape[-1]]).sqrt()
    weights = torch.softmax(scores.masked_fill(hidden, NEG_INF), dim=-1)
    return aten.masked_fill.Scalar(weights, hidden.all(dim=-1, keepdim=True), 0.0) @ values


def _windows_long_tensor(token_ids, max_length, stride):
    ids = torch.LongTensor(token_ids)
    ends = [0] + [i + 1 for i, t in enumerate(token_ids) if t == 50256] + [len(token_ids)]
    parts = [
        ids[b:e].unfold(0, max_length + 1, stride)
        for b, e in zip(ends[:-1], ends[1:], strict=True)
        if e - b > max_length
    ]
    windows = torch.cat(parts) if parts else torch.LongTensor(0, max_length + 1)
    return windows[:, :-1], windows[:, 1:]


def _windows_from_numpy(token_ids, max_length, stride):
    import numpy as np

    ids = np.array(token_ids, dtype=np.int64)
    docs = np.split(ids, np.flatnonzero(ids == 50256) + 1)
    rows = [doc[s : s + max_length + 1] for doc in docs for s in range(0, len(doc) - max_length, stride)]
    windows = torch.from_numpy(np.stack(rows) if rows else np.zeros((0, max_length + 1), dtype=np.int64))
    return aten.slice.Tensor(windows, 1, 0, max_length), aten.slice.Tensor(windows, 1, 1, max_length + 1)


def _dropout_legacy(x, p, training=True):
    if not training or p == 0:
        return x
    keep = aten.ge.Scalar(torch.rand_like(x), p)
    return x * keep / torch.Tensor([1 - p])


def _additive_overloads():
    cls = additive_class()

    class AdditiveOverloads(cls):
        def forward(self, x):
            n = x.shape[1]
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            scores = aten.add.Tensor(q @ k.transpose(1, 2), self.mask[:n, :n])
            weights = self.dropout(torch.softmax(scores / torch.Tensor([k.shape[-1]]).sqrt(), dim=-1))
            return aten.bmm.default(weights, v)

    return AdditiveOverloads


OTHER_STYLES = [
    ("additive_attention", _additive_overloads()),
    (
        "split_qkv",
        lambda qkv, nh, n_kv: tuple(
            aten.permute.default(t, [0, 2, 1, 3]) * torch.Tensor([1.0])
            for t in aten.split_with_sizes.default(qkv.reshape(*qkv.shape[:2], nh + 2 * n_kv, -1), [nh, n_kv, n_kv], 2)
        ),
    ),
    ("padded_attention", _padded_from_numpy),
    ("document_windows", _windows_long_tensor),
    ("document_windows", _windows_from_numpy),
    ("tiled_attention", _blocked_overloads),
    ("cached_attention", _cached_from_numpy),
    ("dropout", _dropout_legacy),
]


@pytest.mark.parametrize(("exercise", "obj"), OTHER_STYLES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(OTHER_STYLES)])
def test_correct_code_with_legacy_constructors_numpy_and_op_overloads_passes(exercise, obj):
    result = ex.grade(exercise, obj)
    assert result.passed, result.message


def test_sdpa_as_an_op_overload_is_named_not_a_crash():
    sdpa = ex.grade(
        "tiled_attention", lambda q, k, v, b: aten.scaled_dot_product_attention.default(q, k, v, None, 0.0, True)
    )
    assert (sdpa.status, sdpa.hint) == ("fail", "uses_sdpa"), sdpa.message
    assert "scaled_dot_product_attention.default" in sdpa.message


def test_llm_labs_dataset_handed_in_for_document_windows_is_the_reference():
    from llm_lab.dataset import GPTDatasetV1

    def windows(token_ids, max_length, stride):
        class Ids:
            def __init__(self, ids):
                self.ids = ids

            def encode(self, text, **kw):
                return list(self.ids)

        docs, current = [], []
        for t in token_ids:
            current.append(t)
            if t == 50256:
                docs.append(current)
                current = []
        pairs = [
            d[i]
            for doc in docs + [current]
            if len(doc) > max_length
            for d in [GPTDatasetV1("text", Ids(doc), max_length, stride)]
            for i in range(len(d))
        ]
        if not pairs:
            return torch.zeros(0, max_length, dtype=torch.long), torch.zeros(0, max_length, dtype=torch.long)
        return torch.stack([a for a, _ in pairs]), torch.stack([b for _, b in pairs])

    result = ex.grade("document_windows", windows)
    assert result.status == "reference", result.message


# ---- one rule for side effects across 00-08: an input changed in place is named --------------------------------


def _in_place(fn, index=0):
    """``fn``'s right result, after writing into its argument ``index`` (as ``x /= 1`` would not, ``x.mul_(1)``)."""

    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        target = args[index]
        if isinstance(target, torch.Tensor):
            target.add_(1) if target.dtype != torch.bool else target.logical_not_()
        return out

    return wrapped


@pytest.mark.parametrize(
    ("exercise", "index", "name"),
    [
        ("window_weights", 0, "attn_scores"),
        ("renormalize", 0, "attn_weights"),
        ("packed_weights", 1, "keys"),
        ("causal_softmax", 1, "key_padding_mask"),
        ("dropout", 0, "x"),
        ("induction_score", 1, "token_ids"),
        ("find_by_ablation", 0, "runs"),
    ],
)
def test_an_input_changed_in_place_is_named_in_every_notebook(exercise, index, name):
    fn = SOLUTIONS[exercise]
    if exercise == "dropout":  # the result is computed from x first, then x is written into

        def fn(x, p, training=True, base=fn):
            out = base(x.clone(), p, training)
            x.mul_(2)
            return out
    else:
        fn = _in_place(fn, index)
    result = ex.grade(exercise, fn)
    assert (result.status, result.hint) == ("fail", "input_modified"), result.message
    assert f"`{name}`" in result.message


@pytest.mark.parametrize("exercise", ["causal_attention", "multihead"])
def test_a_module_that_changes_its_input_in_place_is_named(exercise):
    base = flex()

    class Writes(base):
        def forward(self, x):
            out = super().forward(x)
            x.mul_(0.5)
            return out

    result = ex.grade(exercise, Writes)
    assert (result.status, result.hint) == ("fail", "input_modified"), result.message


# ---- non-real outputs are rejected with a hint, and nothing is printed --------------------------------------------


@pytest.mark.parametrize(
    "exercise", ["window_weights", "packed_weights", "renormalize", "dropout", "induction_score", "cached_attention"]
)
def test_a_complex_output_is_rejected_without_a_warning(exercise, recwarn, capsys):
    base = SOLUTIONS[exercise]
    result = ex.grade(exercise, lambda *a, **k: base(*a, **k).to(torch.complex64))
    assert (result.status, result.hint) == ("fail", "not_real"), result.message
    assert "complex" in result.message
    assert not [w for w in recwarn if "complex" in str(w.message).lower()]
    assert capsys.readouterr().err == ""
