"""llm_lab.explore.induction (old path llm_lab.induction): the repeated-tokens data, the attention-only model and its
ablation switch, the scores, training (notebook 08's exercise checkers: tests/exercises/test_ex08_induction.py)."""

import math

import pytest
import torch

from llm_lab.explore import copy_data, induction

CONFIG = induction.InductionConfig()
SMALL = induction.InductionConfig(vocab_size=16, context_length=12, d_model=16, num_heads=2, num_layers=2)


# ---- configuration and data ------------------------------------------------------------------------------------


def test_told_twice_agrees_with_its_definition_on_random_rows():
    def by_definition(row, m):  # some i, d >= m: row[i : i + d] == row[i + d : i + 2 * d]
        t = len(row)
        return any(row[i : i + d] == row[i + d : i + 2 * d] for d in range(m, t // 2 + 1) for i in range(t - 2 * d + 1))

    g = torch.Generator().manual_seed(5)
    for vocab, t, m in [(2, 12, 2), (3, 17, 3), (2, 20, 4), (4, 9, 1)]:
        ids = torch.randint(0, vocab, (300, t), generator=g)
        expected = torch.tensor([by_definition(row, m) for row in ids.tolist()])
        assert expected.any() and not expected.all()  # both answers occur, so the comparison means something
        assert torch.equal(copy_data.told_twice(ids, m), expected), (vocab, t, m)
        # copy_batch's NumPy check of the same thing
        assert torch.equal(torch.from_numpy(copy_data._told_twice(ids.numpy(), m)), expected), (vocab, t, m)


def test_most_rows_end_inside_a_short_pattern():
    """CopyTask.end_share: the last 4 .. 9 tokens repeat from 2 or 3 back, so the last keys are read too."""
    ids = copy_data.copy_batch(2000, CONFIG, torch.Generator().manual_seed(1))
    tail = ids[:, -4:]
    ends = (tail == ids[:, -6:-2]).all(dim=1) | (tail == ids[:, -7:-3]).all(dim=1)  # 2 or 3 back
    share = copy_data.CopyTask().end_share
    assert share < float(ends.float().mean()) < share + 0.1  # + the short copies that happen to end there
    alone = copy_data.copy_batch(2000, CONFIG, torch.Generator().manual_seed(1), copy_data.CopyTask(end_share=0.0))
    assert float(((alone[:, -4:] == alone[:, -6:-2]).all(dim=1)).float().mean()) < 0.1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 30}, "d_model=30 must be divisible by num_heads=4"),
        ({"context_length": 63}, "context_length=63 must be even"),
        ({"num_layers": 0}, "num_layers"),
    ],
)
def test_config_names_the_bad_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        induction.InductionConfig(**kwargs)


def test_repeat_batch_copies_n_places_back_with_varying_offsets():
    ids, offsets = copy_data.repeat_batch(64, CONFIG, torch.Generator().manual_seed(0))
    assert ids.shape == (64, 64) and ids.dtype == torch.long and offsets.shape == (64,)
    assert int(offsets.min()) >= 4 and int(offsets.max()) <= 32 and len(set(offsets.tolist())) > 10
    for row, n in zip(ids, offsets.tolist(), strict=True):
        assert torch.equal(row[32:], row[32 - n : 64 - n])
    again, _ = copy_data.repeat_batch(64, CONFIG, torch.Generator().manual_seed(0))
    assert torch.equal(ids, again)


def test_repeat_batch_leaves_the_global_stream_alone_and_checks_min_offset():
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    copy_data.repeat_batch(2, CONFIG, torch.Generator().manual_seed(1))
    assert torch.equal(torch.rand(2), expected)
    with pytest.raises(ValueError, match="min_offset=33 must be an int between 1 and context_length // 2 = 32"):
        copy_data.repeat_batch(2, CONFIG, torch.Generator(), min_offset=33)


def test_copy_batch_copies_anywhere_and_never_tells_a_segment_twice_in_a_row():
    ids = copy_data.copy_batch(512, CONFIG, torch.Generator().manual_seed(0))
    assert ids.shape == (512, 64) and ids.dtype == torch.long
    assert torch.equal(ids, copy_data.copy_batch(512, CONFIG, torch.Generator().manual_seed(0)))
    can = copy_data.copyable(ids)  # (B, T - 1)
    assert 0.3 < float(can.float().mean()) < 0.6
    per_position = can.float().mean(dim=0)
    assert float(per_position[8:].min()) > 0.2  # copies at every position from 8 on, not at a fixed start
    assert not copy_data.told_twice(ids, 8).any()  # the probes' placement never occurs in training
    for start, length in copy_data.PROBES.values():
        probe = copy_data.probe_batch(4, CONFIG, start, length)
        assert copy_data.told_twice(probe, 8).all()
        assert torch.equal(probe[:, start + length : start + 2 * length], probe[:, start : start + length])


def test_told_twice_finds_a_segment_repeated_at_once_only():
    row = torch.arange(20)[None]
    assert not copy_data.told_twice(row, 3).any()
    row = torch.tensor([[9, 1, 2, 3, 1, 2, 3, 8]])  # 1 2 3 told twice in a row
    assert copy_data.told_twice(row, 3).all() and not copy_data.told_twice(row, 4).any()
    row = torch.tensor([[1, 2, 3, 7, 1, 2, 3, 8]])  # told twice with a gap: not "in a row"
    assert not copy_data.told_twice(row, 3).any()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"copy_rate": 1.5}, r"copy_rate=1.5 must be a float in \(0, 1\)"),
        ({"min_run": 9, "max_run": 8}, "min_run=9 must not exceed max_run=8"),
        ({"max_gap": 0}, "max_gap must be a positive int"),
        ({"end_share": 1}, r"end_share=1 must be a float in \[0, 1\]"),
        ({"min_run": 8}, "the end pattern .* must stay under 2 \\* min_told_twice tokens"),
    ],
)
def test_copy_task_names_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        copy_data.CopyTask(**kwargs)


def test_probe_batch_and_train_settings_name_bad_values():
    with pytest.raises(ValueError, match="start=40, length=20: the segment and its repeat must fit"):
        copy_data.probe_batch(2, CONFIG, 40, 20)
    with pytest.raises(ValueError, match=r"data='random' must be one of \('copies', 'fixed start'\)"):
        induction.TrainSettings(data="random")
    with pytest.raises(TypeError, match="task must be a CopyTask"):
        copy_data.copy_batch(2, CONFIG, torch.Generator(), task={"copy_rate": 0.1})


def test_probe_is_one_half_twice():
    probe = copy_data.repeated_sequences(5, CONFIG, seed=3)
    assert probe.shape == (5, 64) and torch.equal(probe[:, :32], probe[:, 32:])
    assert torch.equal(probe, copy_data.repeated_sequences(5, CONFIG, seed=3))


# ---- the model ---------------------------------------------------------------------------------------------------


def small_model(seed=0):
    torch.manual_seed(seed)
    return induction.AttentionOnlyTransformer(SMALL).eval()


def test_forward_shapes_and_weights():
    model = small_model()
    ids = torch.randint(0, 16, (3, 12))
    logits, weights = model(ids, return_attn_weights=True)
    assert logits.shape == (3, 12, 16) and weights.shape == (3, 2, 2, 12, 12)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(3, 2, 2, 12))
    with torch.no_grad():  # causal: the first 5 positions do not see the rest
        assert torch.allclose(model(ids[:, :5]), logits[:, :5], atol=1e-6)


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (torch.zeros(2, 13, dtype=torch.long), "num_tokens=13 must be between 1 and context_length=12"),
        (torch.full((1, 4), 16), r"ids must lie in \[0, 16\), got 16..16"),
        (torch.zeros(4), "ids must be an integer tensor"),
    ],
)
def test_forward_names_bad_ids(ids, message):
    with pytest.raises(ValueError, match=message):
        small_model()(ids)


def test_ablation_zeroes_exactly_one_heads_slice_before_out_proj():
    model = small_model()
    ids = torch.randint(0, 16, (2, 12), generator=torch.Generator().manual_seed(1))
    seen = {}

    def record(module, args):
        seen["in"] = args[0].clone()

    handle = model.attn[0].out_proj.register_forward_pre_hook(record)
    with torch.no_grad():
        whole = model(ids)
        before = seen["in"]
        ablated = model(ids, ablate=[(0, 1)])
        after = seen["in"]
    handle.remove()
    hs = SMALL.d_model // SMALL.num_heads
    assert torch.equal(after[..., :hs], before[..., :hs]) and (after[..., hs:] == 0).all()
    assert not torch.allclose(whole, ablated)
    assert torch.equal(model(ids), whole)  # the switch is off again after the call
    with torch.no_grad():
        assert torch.equal(model(ids, ablate=[(1, 0), (1, 1)]), model(ids, ablate=[(1, 1), (1, 0)]))


@pytest.mark.parametrize(
    ("ablate", "message"),
    [
        ([(2, 0)], r"layer=2 in ablate must be an int in \[0, 2\)"),
        ([(0, 5)], r"head=5 in ablate must be an int in \[0, 2\)"),
        ([3], "ablate takes \\(layer, head\\) pairs, got 3"),
    ],
)
def test_ablation_names_bad_pairs(ablate, message):
    with pytest.raises(ValueError, match=message):
        small_model()(torch.zeros(1, 4, dtype=torch.long), ablate=ablate)


# ---- the scores --------------------------------------------------------------------------------------------------


def pattern(t, key_of_row):
    """(T, T) weights with all of row i on key_of_row(i) (rows whose key is out of range: on key 0)."""
    w = torch.zeros(t, t)
    for i in range(t):
        j = key_of_row(i)
        w[i, j if 0 <= j <= i else 0] = 1.0
    return w


def test_scores_of_perfect_heads_and_of_an_even_spread():
    t = 16
    prev = pattern(t, lambda i: i - 1)
    ind = pattern(t, lambda i: i - t // 2 + 1)
    weights = torch.stack([torch.stack([prev, ind])])  # (L=1, nh=2, T, T): one sequence
    assert torch.allclose(induction.previous_token_scores(weights), torch.tensor([[1.0, 1 / 15]]))
    assert torch.allclose(induction.induction_scores(weights), torch.tensor([[0.0, 1.0]]))
    batched = weights.expand(3, 1, 2, t, t)  # (B, L, nh, T, T) averages over the batch too
    assert torch.equal(induction.induction_scores(batched), induction.induction_scores(weights))
    even = torch.ones(t, t).tril()
    even = (even / even.sum(dim=-1, keepdim=True)).expand(1, 1, t, t)
    expected = induction.even_scores(t)
    assert math.isclose(float(induction.previous_token_scores(even)[0, 0]), expected["previous token"], rel_tol=1e-6)
    assert math.isclose(float(induction.induction_scores(even)[0, 0]), expected["induction"], rel_tol=1e-6)
    with pytest.raises(ValueError, match="T must be even, got T=5"):
        induction.induction_scores(torch.ones(1, 1, 5, 5))
    with pytest.raises(ValueError, match=r"got \(4, 4\)"):
        induction.previous_token_scores(torch.ones(4, 4))


def test_copyable_marks_pairs_seen_before_and_split_losses_uses_it():
    ids = torch.tensor([[5, 1, 2, 5, 1, 3, 5, 1]])  # (5, 1) repeats at 3 and 6: targets 4 and 7 copyable
    assert copy_data.copyable(ids)[0].nonzero().flatten().tolist() == [3, 6]
    logits = torch.zeros(1, 8, 8)
    logits[0, [3, 6], 1] = 50.0  # perfect on the copyable predictions, uniform on the rest
    losses = copy_data.split_losses(logits, ids)
    assert losses["copyable"] < 1e-6 and math.isclose(losses["other"], math.log(8), rel_tol=1e-9)
    assert (losses["n_copyable"], losses["n_other"]) == (2, 5)
    with pytest.raises(ValueError, match=r"logits must be \(B, T, V\) for ids \(1, 8\)"):
        copy_data.split_losses(logits[:, :4], ids)


def test_half_losses_split_the_predictions():
    t, v = 8, 5
    ids = torch.tensor([[0, 1, 2, 3, 0, 1, 2, 3]])
    logits = torch.zeros(1, t, v)  # uniform everywhere ...
    logits[0, torch.arange(4, 7), ids[0, 5:]] = 50.0  # ... except the repeated half, predicted perfectly
    first, repeated = copy_data.half_losses(logits, ids)
    assert math.isclose(first, math.log(v), rel_tol=1e-6) and repeated < 1e-6


def test_first_half_losses_split_chance_matches_from_copies_and_new_tokens():
    v = 8
    ids = torch.tensor([[5, 1, 5, 1, 5, 2, 0, 3, 4, 6, 7, 0]])  # first half: predictions 0 .. 4
    # i = 0, 1: new tokens; i = 2, 3: the pair occurred before (copyable, in no group but "all"); i = 4: token 5
    # occurred before, the pair (5, 2) did not: a chance match
    logits = torch.zeros(1, 12, v)
    logits[0, 4, 1] = 10.0  # at the chance match, a bet on what followed 5 before
    logits[0, 2, 1] = 10.0  # at the copy, the right bet
    out = copy_data.first_half_losses(logits, ids)
    bet = math.log(math.exp(10.0) + v - 1)
    assert math.isclose(out["chance match"], bet, rel_tol=1e-9)
    assert math.isclose(out["no earlier occurrence"], math.log(v), rel_tol=1e-9)
    copied = bet - 10.0
    assert math.isclose(out["all"], (2 * math.log(v) + copied + math.log(v) + bet) / 5, rel_tol=1e-9)
    no_match = copy_data.first_half_losses(logits, torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3]]))
    assert math.isnan(no_match["chance match"])
    with pytest.raises(ValueError, match=r"logits must be \(B, T, V\)"):
        copy_data.first_half_losses(logits[:, :5], ids)


# ---- training ----------------------------------------------------------------------------------------------------


def test_lr_schedule_holds_then_decays_to_the_final_ratio():
    s = induction.TrainSettings(steps=100, decay_from=60, final_lr_ratio=0.1)
    assert induction.lr_factor(0, s) == induction.lr_factor(60, s) == 1.0
    assert math.isclose(induction.lr_factor(80, s), 0.55) and math.isclose(induction.lr_factor(100, s), 0.1)


def test_train_is_deterministic_and_leaves_the_caller_state_alone():
    settings = induction.TrainSettings(steps=6, batch_size=4, measure_every=3, probe_size=2, decay_from=3)
    threads = torch.get_num_threads()
    calls = []
    first = induction.train(small_model(), settings, progress=lambda step, m, s: calls.append(step))
    assert torch.get_num_threads() == threads
    assert calls == first.steps == [0, 3, 6] and len(first.train_loss) == 6
    assert first.scores("induction").shape == (3, 2, 2) and first.scores("previous").shape == (3, 2, 2)
    second = induction.train(small_model(), settings)
    assert first.train_loss == second.train_loss and first.copyable == second.copyable
    with pytest.raises(ValueError, match="'previous' or 'induction'"):
        first.scores("first token")


def test_train_draws_its_data_from_its_own_generator():
    model = small_model()
    settings = induction.TrainSettings(steps=2, batch_size=2, measure_every=2, probe_size=1)
    torch.manual_seed(9)
    induction.train(model, settings)
    after_training = torch.rand(3)
    torch.manual_seed(9)
    assert torch.equal(torch.rand(3), after_training)


def test_a_copy_of_the_model_ablates_its_own_heads():
    """The heads to zero are kept on each copy's own layers: ablating a deep copy (``weights_circuits.random_head``
    returns one) changes the copy's logits, and ablating the original leaves the copy's unchanged."""
    import copy

    torch.manual_seed(0)
    config = induction.InductionConfig(vocab_size=16, context_length=12, d_model=16, num_heads=2, num_layers=2)
    model = induction.AttentionOnlyTransformer(config).eval()
    twin = copy.deepcopy(model)
    ids = copy_data.copy_batch(4, config, torch.Generator().manual_seed(1))
    with torch.no_grad():
        whole = twin(ids)
        assert not torch.allclose(twin(ids, ablate=[(0, 1)]), whole)
        assert torch.equal(model(ids, ablate=[(0, 1)]), twin(ids, ablate=[(0, 1)]))
        assert torch.equal(twin(ids), whole)  # the plan is cleared after each call
