"""llm_lab.explore.positions: notebook 09's position schemes on notebook 08's model (RoPE, the sinusoidal table,
ALiBi, the sliding window), running past the trained length, and the one training function."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from llm_lab.explore import induction, positions

SMALL = dict(vocab_size=16, context_length=12, d_model=16, num_heads=2, num_layers=2)


def _model(scheme, seed=0, **kw):
    torch.manual_seed(seed)
    return positions.PositionalTransformer(positions.PositionConfig(scheme=scheme, **{**SMALL, **kw})).eval()


# ---- RoPE ------------------------------------------------------------------------------------------------------


def _score(q, k, m, n, convention="half", rope=positions.apply_rope):
    """q at position m, k at position n: the dot product after rotating each (q, k: (hs,))."""
    t = max(m, n) + 1
    qs = rope(q.expand(t, -1).clone(), convention=convention)[m]
    ks = rope(k.expand(t, -1).clone(), convention=convention)[n]
    return float(qs @ ks)


@pytest.mark.parametrize("convention", positions.CONVENTIONS)
def test_a_rope_score_depends_only_on_the_offset(convention):
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(16, generator=g, dtype=torch.float64), torch.randn(16, generator=g, dtype=torch.float64)
    for offset in (0, 1, 5, 37):
        scores = [_score(q, k, n + offset, n, convention) for n in (0, 3, 20, 100)]
        assert max(scores) - min(scores) < 1e-9, (offset, scores)
    # and the offset matters: the check above is not true of any function
    assert abs(_score(q, k, 5, 0, convention) - _score(q, k, 6, 0, convention)) > 1e-3


def test_the_offset_check_fails_for_an_absolute_scheme():
    """An absolute table added to q and k (what the check above rules out) gives scores that move with n."""

    def absolute(x, convention="half"):
        return x + positions.sinusoidal_table(x.shape[0], x.shape[1]).double()

    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(16, generator=g, dtype=torch.float64), torch.randn(16, generator=g, dtype=torch.float64)
    scores = [_score(q, k, n + 5, n, rope=absolute) for n in (0, 3, 20)]
    assert max(scores) - min(scores) > 1e-3


def test_interleaved_rope_equals_a_complex_number_reference():
    """Pair (2k, 2k + 1) as the complex number x_2k + i x_2k+1, multiplied by e^(i p w_k): torch's complex type."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 10, 8, generator=g, dtype=torch.float64)
    angles = positions.rope_angles(torch.arange(10), 8).double()  # (T, hs / 2)
    reference = torch.view_as_real(
        torch.view_as_complex(x.reshape(2, 3, 10, 4, 2)) * torch.polar(torch.ones_like(angles), angles)
    )
    got = positions.apply_rope(x, convention="interleaved")
    assert torch.allclose(got, reference.flatten(-2), atol=1e-6)


def test_rotate_half_and_interleaved_agree_up_to_a_permutation_of_the_features():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 9, 16, generator=g)
    p = positions.interleaved_order(16)
    assert sorted(p.tolist()) == list(range(16))
    inter = positions.apply_rope(x, convention="interleaved")
    half = positions.apply_rope(x[..., p], convention="half")
    assert torch.allclose(inter[..., p], half, atol=1e-6)
    assert not torch.allclose(inter, positions.apply_rope(x, convention="half"), atol=1e-3)  # not the same layout


def test_rope_keeps_lengths_rotates_nothing_at_position_0_and_turns_the_first_pair_one_radian_per_token():
    x = torch.zeros(3, 8)
    x[:, 0] = 1.0  # pair 0 of rotate-half: features 0 and 4
    out = positions.apply_rope(x)
    assert torch.allclose(out[0], x[0])
    assert torch.allclose(out[2, [0, 4]], torch.tensor([math.cos(2.0), math.sin(2.0)]), atol=1e-6)
    y = torch.randn(5, 7, 16)
    assert torch.allclose(positions.apply_rope(y).norm(dim=-1), y.norm(dim=-1), atol=1e-5)


def test_rope_frequencies_run_from_one_radian_per_token_down():
    w = positions.rope_frequencies(16)
    assert w.shape == (8,) and float(w[0]) == 1.0 and torch.all(w[1:] < w[:-1])
    assert math.isclose(float(w[3]), 10000 ** (-6 / 16), rel_tol=1e-6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: positions.rope_frequencies(7), "head_size=7 must be even"),
        (lambda: positions.rope_frequencies(8, base=1.0), "base=1.0 must be a number above 1"),
        (lambda: positions.apply_rope(torch.zeros(3, 8), convention="pairs"), "convention='pairs' must be one of"),
        (lambda: positions.apply_rope(torch.zeros(3, 8), positions=torch.arange(4)), r"positions must be \(3,\)"),
        (lambda: positions.sinusoidal_table(4, 5), "d_model=5 must be even"),
        (lambda: positions.PositionConfig(scheme="relative"), "scheme='relative' must be one of"),
        (lambda: positions.window_mask(4, 0), "window"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---- the sinusoidal table and ALiBi ------------------------------------------------------------------------------


def test_the_sinusoidal_table_is_sines_and_cosines_at_falling_frequencies():
    table = positions.sinusoidal_table(50, 8)
    assert table.shape == (50, 8) and table.dtype == torch.float32
    assert torch.equal(table[0], torch.tensor([0.0, 1.0] * 4))
    p = torch.arange(50, dtype=torch.float64)
    for k in range(4):
        w = 10000 ** (-2 * k / 8)
        assert torch.allclose(table[:, 2 * k].double(), torch.sin(p * w), atol=1e-6)
        assert torch.allclose(table[:, 2 * k + 1].double(), torch.cos(p * w), atol=1e-6)
    assert torch.allclose(table.norm(dim=-1), torch.full((50,), 2.0), atol=1e-5)  # sqrt(d / 2) on every row


def test_alibi_is_a_linear_penalty_per_head_with_the_causal_mask_folded_in():
    bias = positions.alibi_bias(4, 5)
    slopes = positions.alibi_slopes(4)
    assert torch.allclose(slopes, torch.tensor([2**-2, 2**-4, 2**-6, 2**-8]))
    assert bias.shape == (4, 5, 5) and torch.isinf(bias[:, 0, 1:]).all() and (bias[:, 0, 1:] < 0).all()
    assert torch.allclose(bias[1, 4, :], -slopes[1] * torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0]))


# ---- the model ----------------------------------------------------------------------------------------------------


def test_the_learned_scheme_is_notebook_08s_model():
    torch.manual_seed(5)
    old = induction.AttentionOnlyTransformer(induction.InductionConfig(**SMALL)).eval()
    new = _model("learned", seed=5)
    ids = torch.randint(0, 16, (3, 12), generator=torch.Generator().manual_seed(0))
    assert list(old.state_dict()) == list(new.state_dict())
    assert torch.equal(old(ids), new(ids))


@pytest.mark.parametrize("scheme", ["sinusoidal", "rope", "none", "alibi"])
def test_schemes_without_a_table_run_past_the_trained_length(scheme):
    model = _model(scheme)
    ids = torch.randint(0, 16, (2, 40), generator=torch.Generator().manual_seed(0))  # trained length 12
    logits, weights = model(ids, return_attn_weights=True)
    assert logits.shape == (2, 40, 16) and weights.shape == (2, 2, 2, 40, 40)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 2, 2, 40), atol=1e-5)
    assert torch.allclose(model(ids), logits, atol=1e-5)  # the fused path agrees with the explicit one
    # causal at any length: the first 12 positions do not see the rest
    assert torch.allclose(model(ids[:, :12]), logits[:, :12], atol=1e-5)


def test_the_learned_scheme_refuses_a_length_beyond_its_table_by_name():
    model = _model("learned")
    with pytest.raises(ValueError, match="learned position table has 12 rows"):
        model(torch.zeros(1, 13, dtype=torch.long))
    assert model(torch.zeros(1, 12, dtype=torch.long)).shape == (1, 12, 16)


def test_without_positions_one_layer_sees_its_past_as_a_set_and_two_layers_do_not():
    """The "none" scheme, one layer: shuffle the tokens before the last one and the last row's logits stay. Two
    layers: they move, because layer 0's outputs at the earlier rows each depend on their own prefix (the causal
    mask is a source of order). A model with positions moves in one layer too: the check can fail."""
    ids = torch.randint(0, 16, (2, 12), generator=torch.Generator().manual_seed(1))
    shuffled = ids.clone()
    shuffled[:, :-1] = ids[:, torch.randperm(11, generator=torch.Generator().manual_seed(2))]
    with torch.no_grad():
        one = _model("none", num_layers=1)
        assert torch.allclose(one(ids)[:, -1], one(shuffled)[:, -1], atol=1e-5)
        two = _model("none")
        assert not torch.allclose(two(ids)[:, -1], two(shuffled)[:, -1], atol=1e-3)
        rope = _model("rope", num_layers=1)
        assert not torch.allclose(rope(ids)[:, -1], rope(shuffled)[:, -1], atol=1e-3)


def test_a_causal_row_keeps_its_output_exactly_where_it_keeps_its_set_of_tokens():
    """Notebook 09's first check: shuffle the past, and a causal row's output is unchanged exactly where the row sees
    the same set of tokens as before (only the last row here). With RoPE on the queries and keys the order is
    visible, the last row changes although it sees the same set, and the check fails."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 1, 6, 8).unbind(0)  # as in the notebook
    past = torch.tensor([3, 0, 4, 1, 2, 5])
    same_set = [set(past[: r + 1].tolist()) == set(range(int(past[r]) + 1)) for r in range(6)]
    assert same_set == [False] * 5 + [True]

    def unchanged(turn):
        before = F.scaled_dot_product_attention(turn(q), turn(k), v, is_causal=True)
        after = F.scaled_dot_product_attention(turn(q[:, :, past]), turn(k[:, :, past]), v[:, :, past], is_causal=True)
        return [torch.allclose(after[..., r, :], before[..., int(past[r]), :], atol=1e-6) for r in range(6)]

    assert unchanged(lambda x: x) == same_set
    assert unchanged(positions.apply_rope) != same_set


def test_rope_rotates_queries_and_keys_not_values():
    model = _model("rope", num_layers=1)
    attn = model.attn[0]
    x = torch.randn(1, 6, 16, generator=torch.Generator().manual_seed(3))
    q, k, v, _, _ = attn._project(x)
    plain_v = attn._split_heads(attn.W_value(x), 1, 6)
    plain_q = attn._split_heads(attn.W_query(x), 1, 6)
    assert torch.equal(v, plain_v)
    assert torch.allclose(q, positions.apply_rope(plain_q), atol=1e-6) and not torch.allclose(q, plain_q, atol=1e-3)


def test_window_mask_hides_the_future_and_keys_window_or_more_back():
    seen = positions.window_mask(6, 3)
    want = torch.tensor([[j <= i and i - j < 3 for j in range(6)] for i in range(6)])
    assert torch.equal(seen, want)
    assert torch.equal(positions.window_mask(6), torch.ones(6, 6, dtype=torch.bool).tril())


@pytest.mark.parametrize("scheme", ["rope", "none", "alibi", "sinusoidal"])
def test_a_window_cuts_what_a_row_can_read(scheme):
    """Two layers of window W: row i reads tokens i - 2(W - 1) .. i only. Changing token 0 leaves the rows from
    2W - 1 on exactly as they were; without the window it moves them."""
    model = _model(scheme)
    ids = torch.randint(0, 16, (1, 30), generator=torch.Generator().manual_seed(4))
    changed = ids.clone()
    changed[0, 0] = (ids[0, 0] + 1) % 16
    w = 4
    with torch.no_grad():
        a, b = model(ids, window=w), model(changed, window=w)
        assert torch.equal(a[:, 2 * w - 1 :], b[:, 2 * w - 1 :])
        assert not torch.allclose(a[:, : 2 * w - 1], b[:, : 2 * w - 1])
        assert not torch.allclose(model(ids)[:, 2 * w - 1 :], model(changed)[:, 2 * w - 1 :])
        _, weights = model(ids, return_attn_weights=True, window=w)
    i = torch.arange(30)
    assert (weights[..., (i[:, None] - i[None, :]) >= w] == 0).all()
    assert model.attn[0].window is None  # the window is for one call only


def test_a_window_in_chosen_layers_only():
    """``window_layers=(0,)`` hides the far keys in layer 0 and leaves layer 1 reading them; ``(1,)`` the reverse;
    both layers named is the plain ``window``."""
    model = _model("rope")
    ids = torch.randint(0, 16, (1, 30), generator=torch.Generator().manual_seed(4))
    i = torch.arange(30)
    far = (i[:, None] - i[None, :]) >= 4
    with torch.no_grad():
        _, w_first = model(ids, return_attn_weights=True, window=4, window_layers=(0,))  # (B, L, nh, T, T)
        _, w_second = model(ids, return_attn_weights=True, window=4, window_layers=[1])
        both = model(ids, window=4, window_layers=(0, 1))
        assert torch.equal(both, model(ids, window=4))
        assert not torch.allclose(model(ids, window=4, window_layers=(0,)), both)
    assert (w_first[:, 0][..., far] == 0).all() and (w_first[:, 1][..., far] > 0).any()
    assert (w_second[:, 1][..., far] == 0).all() and (w_second[:, 0][..., far] > 0).any()
    assert all(attn.window is None for attn in model.attn)  # for one call only


@pytest.mark.parametrize(
    "layers, error, match",
    [((2,), ValueError, "window_layers entry"), ((), ValueError, "at least one layer"), (0, TypeError, "sequence")],
)
def test_window_layers_are_checked(layers, error, match):
    with pytest.raises(error, match=match):
        _model("rope")(torch.zeros(1, 5, dtype=torch.long), window=2, window_layers=layers)


def test_a_window_is_checked():
    with pytest.raises(ValueError, match="window"):
        _model("rope")(torch.zeros(1, 5, dtype=torch.long), window=0)


# ---- training and probing ---------------------------------------------------------------------------------------


def test_train_schemes_uses_notebook_08s_training_for_every_scheme():
    settings = dataclasses.replace(induction.TrainSettings(), steps=3, batch_size=4, measure_every=3, probe_size=2)
    config = induction.InductionConfig(**SMALL)
    runs = positions.train_schemes(("learned", "rope"), settings, config, seed=7)
    torch.manual_seed(7)
    old = induction.AttentionOnlyTransformer(config)
    induction.train(old, settings)
    assert all(
        torch.equal(a, b)
        for a, b in zip(old.state_dict().values(), runs["learned"]["model"].state_dict().values(), strict=True)
    )
    assert runs["rope"]["model"].config.scheme == "rope" and runs["rope"]["history"].steps == [0, 3]
    assert runs["rope"]["cpu_seconds"] > 0
    with pytest.raises(ValueError, match="scheme='xl' must be one of"):
        positions.train_schemes(("xl",), settings, config)


def test_probe_measures_at_any_length_beside_two_one_token_copiers():
    model = _model("rope")
    out = positions.probe(model, 40, distances=(3, 10), batch_size=16)
    assert out["distance"] == [3, 10] and len(out["loss"]) == len(out["proportional"]) == len(out["recency"]) == 2
    assert out["previous"].shape == (39,) and out["far"].shape == (39,)
    assert all(0 < i < 4 for i in out["proportional"] + out["recency"])
    assert float(out["far"][:11].abs().max()) == 0.0  # rows below 12 have no key 12 or more back
    with pytest.raises(ValueError, match="learned position table"):
        positions.probe(_model("learned"), 40)


def test_no_gradient_reaches_the_learned_tables_last_row():
    """Notebook 09's reason for the learned model's last row: the last position's prediction has no target and no
    later position reads it, so training leaves its row of the table exactly where it started."""
    settings = dataclasses.replace(induction.TrainSettings(), steps=3, batch_size=4, measure_every=3, probe_size=2)
    config = induction.InductionConfig(**SMALL)
    trained = positions.train_schemes(("learned",), settings, config, seed=7)["learned"]["model"]
    torch.manual_seed(7)
    start = positions.PositionalTransformer(positions.PositionConfig(scheme="learned", **SMALL))
    moved = (trained.pos_emb.weight - start.pos_emb.weight).detach().norm(dim=-1)  # (T,)
    assert float(moved[-1]) == 0.0 and bool((moved[:-1] > 0).all())


def test_the_lessons_comparison_holds_at_a_second_seed():
    """Notebook 09's second training (seed 124, data seed 1, the lesson's settings), learned and RoPE, without
    running the notebook: RoPE copies 8 back below 1.5 at 64 tokens, better than the learned table (below 2.0),
    holds below 1.5 at 128 tokens and is above 2.5 at 256."""
    settings = dataclasses.replace(positions.LESSON_SETTINGS, seed=1)
    runs = positions.train_schemes(("learned", "rope"), settings, seed=124)
    learned, rope = runs["learned"]["model"], runs["rope"]["model"]
    at = {t: positions.probe(rope, t, distances=(8,))["loss"][0] for t in positions.LENGTHS}
    learned_64 = positions.probe(learned, 64, distances=(8,))["loss"][0]
    assert learned_64 < 2.0 and at[64] < 1.5 and at[64] < learned_64, (learned_64, at)
    assert at[128] < 1.5 and at[256] > 2.5, at


def test_row_means_averages_blocks_of_rows():
    per_row = torch.arange(1, 8, dtype=torch.float32)  # rows 1 .. 7, value = row
    assert positions.row_means(per_row, 4) == [2.0, 5.5]


# ---- the notebook's claims ---------------------------------------------------------------------------------------


def _probe(loss, previous, far=(0.0, 0.0, 0.0, 0.0), length=256):
    """A probe result: copy losses at 8 and 56 back, and per-row weights constant over each block of 64 rows."""
    blocks = length // 64
    per_row = torch.tensor([v for v in previous[:blocks] for _ in range(64)])[1:]
    far_row = torch.tensor([v for v in far[:blocks] for _ in range(64)])[1:]
    return {"loss": list(loss), "proportional": [0.5, 0.5], "recency": [0.4, 0.6], "previous": per_row, "far": far_row}


def _measured():
    lengths = {64: 1, 128: 2, 256: 4}
    probes = {
        "learned": {64: _probe((1.2, 3.9), (0.9,), length=64), 128: None, 256: None},
        "sinusoidal": {
            t: _probe((1.1, 3.6) if t == 64 else (4.8, 4.9), (0.5, 0.0, 0.0, 0.0), length=t) for t in lengths
        },
        "rope": {
            64: _probe((0.6, 2.6), (0.95,), length=64),
            128: _probe((0.7, 3.0), (0.95, 0.9), length=128),
            256: _probe((3.4, 4.5), (0.95, 0.9, 0.6, 0.4), far=(0.0, 0.05, 0.4, 0.5)),
        },
        "none": {t: _probe((3.9, 4.0), (0.06, 0.01, 0.01, 0.0), length=t) for t in lengths},
    }
    window = {"rope": _probe((0.6, 3.0), (0.95, 0.9, 0.9, 0.9)), "sinusoidal": _probe((4.6, 4.6), (0.5, 0, 0, 0))}
    return {"probes": probes, "window": window, "heads": {}}


def test_every_claim_holds_on_the_measured_pattern_and_each_can_fail():
    uniform = math.log(64)
    assert all(positions.claims(_measured(), uniform).values())
    breaks = {  # one change per claim: the pattern a claim rules out
        "learned": lambda m: m["probes"]["learned"].__setitem__(128, m["probes"]["learned"][64]),
        "sinusoidal: copies": lambda m: m["probes"]["sinusoidal"][128]["loss"].__setitem__(0, 2.0),
        "sinusoidal: previous": lambda m: m["probes"]["sinusoidal"][256]["previous"][100:110].fill_(0.9),
        "rope: copies": lambda m: m["probes"]["rope"][128]["loss"].__setitem__(0, 2.0),
        "rope: previous": lambda m: m["probes"]["rope"][256]["previous"][191:].fill_(0.9),
        "rope: on rows": lambda m: m["probes"]["rope"][256]["far"][191:].fill_(0.1),
        "rope, a 64-key window": lambda m: m["window"]["rope"]["previous"][150:].fill_(0.2),
        "sinusoidal, the same window": lambda m: m["window"]["sinusoidal"]["loss"].__setitem__(0, 1.0),
        "none": lambda m: m["probes"]["none"][64]["loss"].__setitem__(0, 2.0),
    }
    for start, change in breaks.items():
        m = _measured()
        change(m)
        failed = [name for name, holds in positions.claims(m, uniform).items() if not holds]
        assert len(failed) == 1 and failed[0].startswith(start), (start, failed)
