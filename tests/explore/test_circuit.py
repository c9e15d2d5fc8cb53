"""llm_lab.explore.circuit: the count-proportional one-token copier, the per-row previous-token weight, path ablation,
logit attribution and generation through the KV cache; then a trained model probed on placements its training never
held (notebook 08)."""

import math

import pytest
import torch

from llm_lab.explore import circuit, copy_data, induction

SMALL = induction.InductionConfig(vocab_size=16, context_length=12, d_model=16, num_heads=2, num_layers=2)


def small_model(seed=0):
    torch.manual_seed(seed)
    return induction.AttentionOnlyTransformer(SMALL).eval()


def test_proportional_copier_splits_its_bet_over_every_earlier_continuation():
    # at position 6 (token 5): earlier 5s were followed by 1 and by 2; the right one (1) gets half: loss ln 2
    ids = torch.tensor([[5, 1, 9, 5, 2, 8, 5, 1]])
    assert copy_data.copyable(ids)[0].nonzero().flatten().tolist() == [6]
    assert math.isclose(circuit.proportional_copier_loss(ids), math.log(2), rel_tol=1e-12)
    once = torch.tensor([[5, 1, 9, 7, 5, 1]])  # one earlier 5: the copier is sure
    assert circuit.proportional_copier_loss(once) == 0.0


def test_the_old_name_ideal_copier_loss_warns_and_gives_the_same_loss():
    ids = torch.tensor([[5, 1, 9, 5, 2, 8, 5, 1]])
    with pytest.warns(DeprecationWarning, match="ideal_copier_loss is deprecated.*proportional_copier_loss"):
        old = circuit.ideal_copier_loss(ids)
    assert old == circuit.proportional_copier_loss(ids)
    assert "ideal_copier_loss" not in circuit.__all__


def test_previous_token_per_row_reads_each_row():
    t = 6
    w = torch.zeros(1, 1, 2, t, t)
    for i in range(t):
        w[0, 0, 0, i, max(i - 1, 0)] = 1.0  # a previous-token head
        w[0, 0, 1, i, 0] = 1.0  # a first-token head
    rows = circuit.previous_token_per_row(w)
    assert rows.shape == (1, 2, t - 1)
    assert torch.equal(rows[0, 0], torch.ones(t - 1)) and rows[0, 1].tolist() == [1.0, 0, 0, 0, 0]
    with pytest.raises(ValueError, match=r"attn_weights must be \(B, L, nh, T, T\), got \(6, 6\)"):
        circuit.previous_token_per_row(torch.ones(t, t))


def test_key_uses_counts_the_predictions_each_key_serves():
    # query 3 (token 5, next 6) reads key 1 (token before it 5, its token 6); query 4 (6 -> 9) has no earlier copy
    assert circuit.key_uses(torch.tensor([[5, 6, 7, 5, 6, 9]])).tolist() == [0, 1, 0, 0, 0, 0]
    # "A A A": query 1 (A -> A) reads key 1 itself (token before it A, its token A); query 2 has no target
    assert circuit.key_uses(torch.tensor([[3, 3, 3]])).tolist() == [0, 1, 0]
    ids = copy_data.copy_batch(200, induction.InductionConfig(), torch.Generator().manual_seed(0))
    uses = circuit.key_uses(ids)
    assert int(uses[-1]) == 0 and int(uses[0]) == 0  # the last key serves no prediction, the first has no token before
    assert bool(uses[1:-1].float().sum() >= copy_data.copyable(ids).sum())  # every copyable prediction reads a key


def test_heads_add_up_to_their_layer():
    model = small_model()
    ids = torch.randint(0, 16, (3, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        for layer in range(2):
            x, per_head = circuit.head_outputs(model, ids, layer)
            out, _ = model.attn[layer](model.norms[layer](x), return_attn_weights=True)
            assert torch.allclose(per_head.sum(dim=1) + model.attn[layer].out_proj.bias, out, atol=1e-6)


def test_path_ablation_removes_the_head_from_the_chosen_inputs_only():
    model = small_model()
    ids = torch.randint(0, 16, (3, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        whole_logits, whole = model(ids, return_attn_weights=True)
        _, ablated = model(ids, ablate=[(0, 1)], return_attn_weights=True)
    _, all_three = circuit.path_ablation(model, ids, 1, paths=circuit.PATHS)
    assert torch.allclose(all_three, ablated[:, 1], atol=1e-6)  # every input without it = the head switched off
    values_only_logits, values_only = circuit.path_ablation(model, ids, 1, paths=("values",))
    assert torch.allclose(values_only, whole[:, 1], atol=1e-6)  # values do not change where a head looks
    _, keys_only = circuit.path_ablation(model, ids, 1, paths=("keys",))
    assert not torch.allclose(keys_only, whole[:, 1], atol=1e-4)
    assert not torch.allclose(values_only_logits, whole_logits, atol=1e-4)
    with pytest.raises(ValueError, match=r"paths must be a non-empty subset of \('queries', 'keys', 'values'\)"):
        circuit.path_ablation(model, ids, 0, paths=("key",))
    with pytest.raises(ValueError, match=r"head must be an int in \[0, 1\], got 2"):
        circuit.path_ablation(model, ids, 2)


def test_logit_attributions_of_all_heads_and_the_rest_add_up_to_the_logits():
    # the final LayerNorm is linear once its scale is fixed: the heads' attributions, the embeddings' and the
    # biases' together give the centred logits
    model = small_model()
    ids = torch.randint(0, 16, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits = model(ids)
        total = sum(circuit.logit_attribution(model, ids, layer, head) for layer in range(2) for head in range(2))
        x = circuit._final_stream(model, ids)
        rest = x - sum(circuit.head_outputs(model, ids, layer)[1].sum(dim=1) for layer in range(2))
        norm = model.final_norm
        scale = (x.var(dim=-1, unbiased=False, keepdim=True) + norm.eps).rsqrt()
        rest_logits = model.unembed((rest - rest.mean(dim=-1, keepdim=True)) * scale * norm.weight + norm.bias)
        rest_logits = rest_logits - rest_logits.mean(dim=-1, keepdim=True)
    centred = logits - logits.mean(dim=-1, keepdim=True)
    assert torch.allclose(total + rest_logits, centred, atol=1e-4)


def test_generate_through_the_caches_equals_greedy_full_forward():
    model = small_model()
    prompt = torch.randint(0, 16, (2, 5), generator=torch.Generator().manual_seed(4))
    new = circuit.generate(model, prompt, 7)
    seq = prompt
    with torch.no_grad():
        for _ in range(7):
            seq = torch.cat([seq, model(seq)[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    assert torch.equal(new, seq[:, 5:])
    with pytest.raises(ValueError, match="a prompt of 5 tokens \\+ num_new=8 = 13 tokens exceed context_length=12"):
        circuit.generate(model, prompt, 8)


# ---- a trained model, probed where it never trained -----------------------------------------------------------


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(123)
    model = induction.AttentionOnlyTransformer(induction.InductionConfig())
    induction.train(model, induction.TrainSettings(measure_every=1000))
    return model


@pytest.fixture(scope="module")
def probes():
    config = induction.InductionConfig()
    return {
        name: copy_data.probe_batch(64, config, start, length, seed=10 + k)
        for k, (name, (start, length)) in enumerate(copy_data.PROBES.items())
    }


def test_trained_model_copies_on_placements_it_never_saw(trained, probes):
    uniform = math.log(64)
    with torch.no_grad():
        for name, ids in probes.items():
            losses = copy_data.split_losses(trained(ids), ids)
            assert losses["copyable"] < uniform / 2, (name, losses)
            assert losses["other"] > uniform - 0.1, (name, losses)  # nothing to copy: no better than a guess


def test_trained_previous_token_head_works_on_every_row_and_the_keys_read_it(trained, probes):
    probe = probes["0-31 told again at 32-63"]
    with torch.no_grad():
        _, weights = trained(probe, return_attn_weights=True)
    per_row = circuit.previous_token_per_row(weights)[0]  # (nh, T - 1)
    head = int(per_row.mean(dim=-1).argmax())
    assert int((per_row[head, :60] > 0.5).sum()) >= 57  # rows 1 .. 60: all but a few at most
    assert float(per_row[:, 61:].max()) < 0.1  # rows 62, 63: keys that serve no prediction (see key_uses)
    rows = torch.arange(32, 64)
    score = lambda w: float(w[:, :, rows, rows - 31].mean())  # noqa: E731
    whole = score(weights[:, 1])
    # no claim on the values: layer 1's pattern reads only its queries and keys, so without the head in the values
    # this score equals the whole one by construction (test_path_ablation_removes_the_head_from_the_chosen_inputs_only
    # checks that); what the values path does to the copying is path_claims' (test_induction_reach.py)
    paths = {p: score(circuit.path_ablation(trained, probe, head, paths=(p,))[1]) for p in ("keys", "queries")}
    assert paths["keys"] < whole / 3 and paths["queries"] > 2 * whole / 3


def test_by_ablation_the_strongest_induction_head_depends_on_the_previous_token_head(trained, probes):
    """Exercise 3 of notebook 08 on the trained model: the checker's reference finds the head the lesson names."""
    from llm_lab.exercises._ex08_induction import needed_head

    probe = probes["0-31 told again at 32-63"][:1]
    with torch.no_grad():
        runs = torch.stack(
            [trained(probe, return_attn_weights=True, ablate=a)[1][0] for a in [[]] + [[(0, h)] for h in range(4)]]
        )  # (5, L, nh, T, T)
    prev_head = int(circuit.previous_token_per_row(runs[:1])[0].mean(dim=-1).argmax())
    strongest = int(induction.induction_scores(runs[0])[1].argmax())
    assert needed_head(runs, 1, strongest) == prev_head


def test_trained_induction_heads_write_the_token_they_copy(trained, probes):
    probe = probes["0-31 told again at 32-63"]
    can, right = copy_data.copyable(probe), probe[:, 1:]
    share = torch.tensor(
        [
            [
                float(
                    (circuit.logit_attribution(trained, probe, layer, head)[:, :-1].argmax(-1) == right)[can]
                    .float()
                    .mean()
                )
                for head in range(4)
            ]
            for layer in range(2)
        ]
    )
    assert float(share[1].min()) > 0.3 and float(share[0].max()) < 0.1


def test_the_fixed_layout_teaches_a_shortcut_that_fails_elsewhere(probes):
    torch.manual_seed(123)
    model = induction.AttentionOnlyTransformer(induction.InductionConfig())
    settings = induction.TrainSettings(data="fixed start", steps=600, decay_from=400, measure_every=600)
    induction.train(model, settings)
    with torch.no_grad():
        losses = {name: copy_data.split_losses(model(ids), ids)["copyable"] for name, ids in probes.items()}
        _, weights = model(probes["0-31 told again at 32-63"], return_attn_weights=True)
    assert losses["0-31 told again at 32-63"] < math.log(64) / 2  # its own layout
    assert losses["40-51 told again at 52-63"] > math.log(64) / 2  # a late segment: the gated circuit fails
    per_row = circuit.previous_token_per_row(weights)[0]
    head = int(per_row.mean(dim=-1).argmax())
    assert float(per_row[head, 39:57].max()) < 0.2  # rows 40 .. 57: switched off past the repeat's start
