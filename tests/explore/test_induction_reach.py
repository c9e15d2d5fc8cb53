"""Notebook 08's induction stripe, distance sweep, path effects and weight circuits: the measures on hand-made rows,
the claims the notebook prints on the trained default model, and each claim failing on a model that lacks what it
checks."""

import math

import pytest
import torch

from llm_lab.explore import circuit, copy_data, distance, induction
from llm_lab.explore import weights_circuits as wc

CONFIG = induction.InductionConfig()


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(123)
    model = induction.AttentionOnlyTransformer(CONFIG)
    induction.train(model, induction.TrainSettings())  # the notebook's training, ~15 s on one thread
    return model


@pytest.fixture(scope="module")
def untrained():
    torch.manual_seed(123)
    return induction.AttentionOnlyTransformer(CONFIG).eval()


def _prev_head(model):
    probe = copy_data.probe_batch(64, CONFIG, 0, 32, seed=10)
    with torch.no_grad():
        _, w = model(probe, return_attn_weights=True)
    return int(circuit.previous_token_per_row(w)[0].mean(dim=-1).argmax()), probe


# ---- the measures on rows whose answer is known ------------------------------------------------------------


def test_source_distances_finds_the_nearest_earlier_pair():
    ids = torch.tensor([[1, 2, 3, 1, 2, 5, 1, 2]])  # the pair (1, 2) at 0, 3, 6
    # prediction 3 (token 1 -> 2) copies from 3 back; prediction 6 from 3 back (nearest), not 6
    assert distance.source_distances(ids).tolist() == [3, 3]
    assert distance.source_distances(torch.tensor([[1, 2, 3, 4]])).numel() == 0


def test_longest_stretches_finds_the_longest_repeat_at_one_distance():
    ids = torch.tensor([[1, 2, 3, 1, 2, 3, 9], [5, 6, 7, 8, 9, 10, 11], [4, 4, 4, 4, 0, 1, 2], [7, 8, 9, 7, 8, 3, 7]])
    length, back = distance.longest_stretches(ids)
    assert length.tolist() == [3, 0, 3, 2]  # 1 2 3 again 3 back; nothing; 4 4 4 from 1 back; 7 8 again 3 back
    assert back.tolist() == [3, 0, 1, 3]  # on a tie (4 4 4: 3 at 1 back, 2 at 2 back) the longest, then the smallest
    with pytest.raises(ValueError, match="int64"):
        distance.longest_stretches(ids.float())


def test_training_rows_repeat_a_stretch_longer_than_a_planted_run_only_where_copies_line_up():
    rows = copy_data.copy_batch(2000, CONFIG, torch.Generator().manual_seed(1))  # notebook 08's section 1
    length, back = distance.longest_stretches(rows)
    assert int((length > copy_data.CopyTask().max_run).sum()) == 11  # the count the notebook prints
    assert int(length.max()) == 21 and int(back[length.argmax()]) == 29
    assert int(length.max()) < 32  # the first probe's repeat is longer than any of them
    probe_length, probe_back = distance.longest_stretches(copy_data.repeated_sequences(4, CONFIG))
    assert (probe_length >= 32).all() and (probe_back == 32).all()  # the notebook's check fails on rows like the probe


def test_proportional_copier_losses_per_prediction_average_to_circuit_s():
    ids = copy_data.copy_batch(50, CONFIG, torch.Generator().manual_seed(4))
    per = distance.proportional_copier_losses(ids)
    assert torch.equal(per.isnan(), ~copy_data.copyable(ids))
    assert float(per.nanmean()) == pytest.approx(circuit.proportional_copier_loss(ids))
    with pytest.warns(DeprecationWarning, match="ideal_copier_losses is deprecated.*proportional_copier_losses"):
        old = distance.ideal_copier_losses(ids)
    torch.testing.assert_close(old, per, rtol=0, atol=0, equal_nan=True)


def test_recency_copier_bets_most_on_the_latest_occurrence_where_the_proportional_one_splits_evenly():
    # at position 8 (token 5): earlier 5s at 0 (followed by 1), 3 (by 2) and 6 (by 2, the latest); the answer is 2
    ids = torch.tensor([[5, 1, 9, 5, 2, 8, 5, 2, 5, 2]])
    i = 8
    proportional = distance.proportional_copier_losses(ids)[0, i]
    recency = distance.recency_copier_losses(ids)[0, i]
    assert math.isclose(proportional, -math.log(2 / 3), rel_tol=1e-12)  # two of three occurrences, counted alike
    assert math.isclose(recency, -math.log((1 + 0.5) / (1 + 0.5 + 0.25)), rel_tol=1e-12)  # weights 1, 1/2, 1/4
    assert recency < proportional
    # the order reversed (the latest occurrence followed by 1): recency now costs more, counting does not change
    flipped = torch.tensor([[5, 2, 9, 5, 2, 8, 5, 1, 5, 2]])
    assert math.isclose(distance.proportional_copier_losses(flipped)[0, i], -math.log(2 / 3), rel_tol=1e-12)
    assert distance.recency_copier_losses(flipped)[0, i] > proportional
    # decay=1 is the count-proportional copier; nan where nothing is copyable, like it
    ids = copy_data.copy_batch(50, CONFIG, torch.Generator().manual_seed(4))
    torch.testing.assert_close(
        distance.recency_copier_losses(ids, decay=1.0),
        distance.proportional_copier_losses(ids),
        rtol=0,
        atol=0,
        equal_nan=True,
    )
    assert torch.equal(distance.recency_copier_losses(ids).isnan(), ~copy_data.copyable(ids))
    with pytest.raises(ValueError, match="decay"):
        distance.recency_copier_losses(ids, decay=0.0)


@pytest.mark.parametrize("copier", [distance.proportional_copier_losses, distance.recency_copier_losses])
def test_each_copier_knows_only_the_current_token(copier):
    # the same current token and the same earlier occurrences of it, everything else changed: the same loss
    ids = torch.tensor([[5, 1, 9, 5, 2, 8, 5, 2, 5, 2]])
    other = torch.tensor([[5, 1, 3, 5, 2, 7, 5, 2, 5, 2]])  # tokens 9 and 8, which are not the current token, changed
    assert math.isclose(copier(ids)[0, 8], copier(other)[0, 8], rel_tol=1e-12)
    # a model that reads the token before would tell the two rows below apart at position 8 (before it: 2 vs 4);
    # the copier cannot: its loss there is the same
    a = torch.tensor([[4, 5, 1, 2, 5, 3, 2, 5, 1]])  # 5 after 4 was followed by 1, 5 after 2 by 3
    b = torch.tensor([[4, 5, 1, 2, 5, 3, 4, 5, 1]])
    assert math.isclose(copier(a)[0, 7], copier(b)[0, 7], rel_tol=1e-12)


@pytest.mark.parametrize("d", [3, 8, 30, 56])
def test_sweep_batch_copies_its_last_tokens_from_distance_back(d):
    ids = distance.sweep_batch(4, CONFIG, d, seed=1)
    for i in range(64 - distance.SWEEP_LENGTH, 64):
        assert torch.equal(ids[:, i], ids[:, i - d])
    with pytest.raises(ValueError, match="distance"):
        distance.sweep_batch(4, CONFIG, 57)


def test_sweep_batch_places_the_repeat_where_it_ends_and_only_the_copy_moves():
    base = distance.sweep_batch(4, CONFIG, 16, seed=2)
    assert torch.equal(base, distance.sweep_batch(4, CONFIG, 16, seed=2, end=63))  # the default end: the last token
    ids = distance.sweep_batch(4, CONFIG, 16, seed=2, end=27)  # the repeat at 20 .. 27, its source at 4 .. 11
    assert torch.equal(ids[:, 20:28], ids[:, 4:12])
    plain = torch.randint(0, CONFIG.vocab_size, (4, 64), generator=torch.Generator().manual_seed(2))
    outside = torch.ones(64, dtype=torch.bool)
    outside[20:28] = False
    assert torch.equal(ids[:, outside], plain[:, outside])  # the same random tokens everywhere else
    with pytest.raises(ValueError, match="distance"):
        distance.sweep_batch(4, CONFIG, 21, end=27)  # the source would start at -1
    with pytest.raises(ValueError, match="end"):
        distance.sweep_batch(4, CONFIG, 1, end=64)


def test_grid_agrees_with_the_sweep_at_the_window_end_and_leaves_out_what_does_not_fit(untrained):
    g = distance.grid(untrained, [8, 48], [27, 55, 63], batch_size=16)
    assert (g["distance"], g["end"]) == ([8, 48], [27, 55, 63])
    assert math.isnan(g["loss"][1][0]) and math.isnan(g["proportional"][1][0])  # 48 back does not fit before 20
    assert not any(math.isnan(x) for x in g["loss"][0] + g["loss"][1][1:])
    s = distance.sweep(untrained, [8, 48], batch_size=16)
    assert [g["loss"][0][2], g["loss"][1][2]] == pytest.approx(s["loss"], abs=1e-5)
    assert [g["proportional"][0][2], g["proportional"][1][2]] == pytest.approx(s["proportional"])
    with pytest.raises(ValueError, match="end"):
        distance.grid(untrained, [8], [5])


def test_training_data_copies_mostly_from_a_few_tokens_back():
    d = distance.source_distances(copy_data.copy_batch(2000, CONFIG, torch.Generator().manual_seed(1)))
    assert 0.6 < float(((d >= 2) & (d <= 7)).float().mean()) < 0.8
    assert float((d >= 32).float().mean()) < 0.02


# ---- the claims the notebook prints: true on the trained model, false on one that lacks it --------------------


def test_sweep_claims_hold_on_the_trained_model_also_between_the_printed_distances(trained):
    r = distance.sweep(trained, range(8, 57))
    assert all(distance.sweep_claims(r).values())
    loss = dict(zip(r["distance"], r["loss"], strict=True))
    near = sum(loss[d] for d in range(9, 13)) / 4  # distances the notebook does not print
    far = sum(loss[d] for d in range(50, 56)) / 6
    assert near < 1.8 and far > 3.0 and loss[12] < loss[24] < loss[40] < loss[52]
    weight = dict(zip(r["distance"], r["weight"], strict=True))
    assert weight[10] > 2 * weight[54]


def test_sweep_claims_fail_on_an_untrained_model(untrained):
    claims = distance.sweep_claims(distance.sweep(untrained, [8, 56]))
    assert not claims["copy loss below 1.5 at 8 back"]
    assert all(v for k, v in claims.items() if "copier" in k)  # the copiers do not depend on the model
    flat = {"distance": [8, 56], "loss": [1.0, 4.0], "proportional": [0.5, 1.2], "recency": [0.3, 1.0]}
    assert not distance.sweep_claims(flat)["count-proportional copier between 0.4 and 0.6 at every distance from 8 on"]
    close = dict(flat, recency=[0.45, 1.0])  # the recency-weighted copier within 0.1 of the other at 8 back
    key = "recency-weighted copier at least 0.1 below the count-proportional one at every distance up to 8"
    assert distance.sweep_claims(flat)[key] and not distance.sweep_claims(close)[key]
    with pytest.raises(ValueError, match="8 and 56"):
        distance.sweep_claims({"distance": [8], "loss": [1.0], "proportional": [0.5], "recency": [0.3]})


def test_grid_claims_hold_on_the_trained_model(trained):
    g = distance.grid(trained, distance.GRID_DISTANCES, distance.GRID_ENDS)
    assert all(distance.grid_claims(g).values())


def test_each_grid_claim_fails_on_a_grid_without_what_it_checks():
    ds, es = distance.GRID_DISTANCES, distance.GRID_ENDS
    flat = {"distance": list(ds), "end": list(es), "loss": [[1.0] * len(es) for _ in ds], "proportional": []}
    flat["proportional"] = [[0.5] * len(es) for _ in ds]  # the model at the count-proportional copier + 0.5 everywhere
    claims = distance.grid_claims(flat)
    assert not any(claims.values()), claims
    # position matters, distance not: only the claims about position hold
    by_end = dict(flat, loss=[[1.0 + 0.2 * k for k in range(len(es))] for _ in ds])
    held = {k for k, v in distance.grid_claims(by_end).items() if v}
    assert held == {
        "16 back: copy loss at least 0.5 higher with the repeat ending at 63 than at 27",
        "32 back: copy loss at least 0.5 higher with the repeat ending at 63 than at 43",
        "16 back: the excess over the count-proportional copier larger ending at 63 than at 27",
    }
    with pytest.raises(ValueError, match="distances"):
        distance.grid_claims(dict(flat, distance=[8, 16]))


def test_window_losses_score_the_grid_s_predictions_on_other_rows(untrained):
    """On the grid's own rows, window_losses gives the grid's loss (every scored prediction there is copyable)."""
    ids = distance.sweep_batch(256, CONFIG, 32, seed=0, end=59)
    g = distance.grid(untrained, (32,), (59,))
    assert distance.window_losses(untrained, ids, (59,))[0] == pytest.approx(g["loss"][0][0], abs=1e-6)
    with pytest.raises(ValueError, match="end"):
        distance.window_losses(untrained, ids, (64,))
    with pytest.raises(ValueError, match="copyable"):
        distance.window_losses(untrained, torch.arange(64)[None], (59,))  # no token occurs twice


def test_length_claims_hold_on_the_trained_model_and_fail_where_the_long_repeat_costs_more(trained, untrained):
    """The check: the first probe's 32-token repeat costs no more than the grid's 8-token repeats at the same place
    and distance. An untrained model fails it; so does a long repeat that costs 0.3 more than the grid's."""
    probe = copy_data.probe_batch(64, CONFIG, 0, 32, seed=10)
    g = distance.grid(trained, distance.GRID_DISTANCES, distance.GRID_ENDS)
    assert all(distance.length_claims(distance.window_losses(trained, probe, distance.LENGTH_ENDS), g).values())
    untrained_run = distance.window_losses(untrained, probe, distance.LENGTH_ENDS)
    assert not any(distance.length_claims(untrained_run, g).values())
    row = g["loss"][distance.GRID_DISTANCES.index(distance.LENGTH_DISTANCE)]
    worse = [row[distance.GRID_ENDS.index(e)] + 0.3 for e in distance.LENGTH_ENDS]
    assert not any(distance.length_claims(worse, g).values())
    with pytest.raises(ValueError, match="one loss per end"):
        distance.length_claims(worse[:2], g)


def stripe_claims(model, probe, ablate=()):
    """Section 6's picture checks: the highest layer-1 induction score above 0.3; that head's mean weight on the
    stripe (row i, key i - 31) more than 20 times its mean weight on another key of the same rows."""
    with torch.no_grad():
        _, weights = model(probe, return_attn_weights=True, ablate=ablate)
    scores = induction.induction_scores(weights)
    head = int(scores[1].argmax())
    rows = torch.arange(32, 64)
    stripe = weights[:, 1, head, rows, rows - 31]
    other = (1 - stripe) / rows
    return bool(scores[1].max() > 0.3), bool(stripe.mean() > 20 * other.mean())


def test_stripe_claims_hold_trained_and_fail_untrained_or_without_the_previous_token_head(trained, untrained):
    """The stripe checks hold for the trained model; an untrained model spreads its weight (its stripe no heavier
    than any other key); with the previous-token head switched off, layer 1 loses the stripe."""
    head, probe = _prev_head(trained)
    trained.eval()
    assert stripe_claims(trained, probe) == (True, True)
    assert stripe_claims(untrained, probe) == (False, False)
    assert stripe_claims(trained, probe, ablate=[(0, head)]) == (False, False)


def test_path_claims_hold_trained_and_fail_untrained(trained, untrained):
    head, probe = _prev_head(trained)
    effects = circuit.path_effects(trained, probe, head)
    assert all(circuit.path_claims(effects).values())
    assert effects["keys"]["copyable"] > 3.0 and effects["whole"]["copyable"] < 2.0
    bad = circuit.path_claims(circuit.path_effects(untrained, probe, head))
    assert not bad["keys: copyable loss up by more than 1"]
    assert not bad["keys: induction score below a third of the whole model's"]
    # a model whose queries or values need the head: those claims fail
    fake = dict(effects, values={"copyable": effects["whole"]["copyable"] + 1.0, "induction": 0.0})
    fake["queries"] = {"copyable": effects["whole"]["copyable"] + 1.0, "induction": 0.0}
    failed = [claim for claim, holds in circuit.path_claims(fake).items() if not holds]
    assert failed == [c for c in circuit.path_claims(effects) if c.startswith(("queries", "values"))]


def test_weight_claims_hold_trained_and_fail_untrained_or_zeroed(trained, untrained):
    head, _ = _prev_head(trained)
    assert all(wc.claims(trained, head).values())
    bad = wc.claims(untrained, head)
    assert not bad["every layer-1 OV circuit: diagonal on more than 0.8 of the rows"]
    assert not bad[f"layer 0, head {head}: band on more than 0.8 of rows 1 .. 60"]
    broken = wc.random_head(trained, 0, head, seed=1)  # the previous-token head's weights redrawn
    assert not wc.claims(broken, head)[f"layer 0, head {head}: band on more than 0.8 of rows 1 .. 60"]
    no_copy = wc.random_head(trained, 1, 0, seed=1)  # one induction head's weights redrawn
    assert not wc.claims(no_copy, head)["every layer-1 OV circuit: diagonal on more than 0.8 of the rows"]


def test_diagonal_and_band_share_on_known_matrices():
    assert wc.diagonal_share(torch.eye(5)) == 1.0
    assert wc.diagonal_share(torch.eye(5).roll(1, dims=1)) == 0.0
    band = torch.eye(6).roll(-1, dims=1)  # row i: largest at i - 1 (row 0 wraps, and is not scored)
    assert wc.band_share(band) == 1.0 and wc.band_share(torch.eye(6)) == 0.0
    with pytest.raises(ValueError, match="num_tokens"):
        wc.diagonal_share(torch.ones(3, 4))
