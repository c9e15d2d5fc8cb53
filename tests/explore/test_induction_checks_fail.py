"""Notebook 08's printed checks, each run with the notebook's own computation on the trained default model, where it
holds, and on a model or input that lacks what it checks, where it must fail. A check that no model could fail
would prove nothing. (The stripe, sweep, path and weight claims: test_induction_reach.py.)

Functions the notebook defines itself (the by-hand model, loop and decoding step, the loss bands) are read from
the learner notebook, so a change in a cell is a change in the test."""

import ast
import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import llm_lab
from llm_lab import MultiHeadAttention
from llm_lab.explore import circuit, copy_data, induction
from llm_lab.explore import weights_circuits as wc
from llm_lab.kv_cache import KVCache, decode_step

CONFIG = induction.InductionConfig()
UNIFORM = math.log(CONFIG.vocab_size)
HS = CONFIG.d_model // CONFIG.num_heads
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "en" / "08_induction_heads.ipynb"
FIRST = "0-31 told again at 32-63"


def notebook_def(name, **env):
    """The function or class ``name`` as a code cell of the learner notebook defines it, run in ``env``."""
    for cell in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.parse("".join(cell["source"])).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                exec(compile(ast.Module([node], []), str(NOTEBOOK), "exec"), env)  # noqa: S102
                return env[name]
    raise LookupError(f"{name} is not defined in {NOTEBOOK.name}")


def rebuild(model, edit=None):
    """A fresh model with ``model``'s weights, ``edit(fresh)`` applied to them. Not ``copy.deepcopy``: a deep copy
    keeps the original's ablation hooks, so ``ablate=`` on the copy would switch nothing off."""
    fresh = induction.AttentionOnlyTransformer(model.config)
    fresh.load_state_dict(model.state_dict())
    if edit is not None:
        with torch.no_grad():
            edit(fresh)
    return fresh.eval()


def zero_heads(layer, heads):
    def edit(m):
        for h in heads:
            m.attn[layer].out_proj.weight[:, h * HS : (h + 1) * HS] = 0.0

    return edit


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(123)
    model = induction.AttentionOnlyTransformer(CONFIG)
    induction.train(model, induction.TrainSettings(measure_every=1000))  # the notebook's training
    return model.eval()


@pytest.fixture(scope="module")
def fixed_layout():
    torch.manual_seed(123)
    model = induction.AttentionOnlyTransformer(CONFIG)
    settings = induction.TrainSettings(data="fixed start", steps=600, decay_from=400, measure_every=600)
    induction.train(model, settings)  # section 8's training
    return model.eval()


@pytest.fixture(scope="module")
def untrained():
    torch.manual_seed(123)
    return induction.AttentionOnlyTransformer(CONFIG).eval()


@pytest.fixture(scope="module")
def probes():
    return {
        name: copy_data.probe_batch(64, CONFIG, start, length, seed=10 + k)
        for k, (name, (start, length)) in enumerate(copy_data.PROBES.items())
    }


def per_row_of(model, probe):
    """Section 7: the weight on the previous token row by row, and the layer-0 head with the most."""
    with torch.no_grad():
        _, weights = model(probe, return_attn_weights=True)
    per_row = circuit.previous_token_per_row(weights)  # (L, nh, T - 1)
    return per_row, int(per_row[0].mean(dim=-1).argmax())


# ---- section 2: the library model is the by-hand class; section 4: train is the by-hand loop --------------------


def test_same_logits_holds_for_the_same_seed_and_fails_for_other_weights():
    """The check: the by-hand ``AttentionOnly`` and the library class, each built after seed 123, give the same
    logits. Built after another seed, the library model has other weights, and the check must say so."""
    by_hand_class = notebook_def("AttentionOnly", nn=nn, torch=torch, MultiHeadAttention=MultiHeadAttention)
    batch = copy_data.copy_batch(4, CONFIG, torch.Generator().manual_seed(2))

    def same_logits(lib_seed):
        torch.manual_seed(123)
        by_hand = by_hand_class(vocab_size=64, context_length=64, d_model=64, num_heads=4, num_layers=2)
        torch.manual_seed(lib_seed)
        lib = induction.AttentionOnlyTransformer(CONFIG)
        with torch.no_grad():
            return torch.allclose(by_hand(batch)[0], lib(batch), atol=1e-6)

    assert same_logits(123)
    assert not same_logits(124)


def test_same_weights_after_40_steps_holds_for_train_and_fails_for_another_data_stream():
    """The check: the notebook's ``loop_by_hand`` and ``induction.train``, from the same weights, end with equal
    weights. ``train`` drawing its batches from another seed is another loop: the weights differ."""
    short = induction.TrainSettings(steps=40, measure_every=40)
    loop_by_hand = notebook_def(
        "loop_by_hand", torch=torch, F=F, induction=induction, copy_data=copy_data, config=CONFIG
    )
    torch.manual_seed(123)
    start = induction.AttentionOnlyTransformer(CONFIG).state_dict()

    def same_weights(their_settings):
        mine, theirs = induction.AttentionOnlyTransformer(CONFIG), induction.AttentionOnlyTransformer(CONFIG)
        mine.load_state_dict(start)
        theirs.load_state_dict(start)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as the notebook runs: train uses one thread, and sums in that order
        try:
            loop_by_hand(mine, short, short.steps)
        finally:
            torch.set_num_threads(threads)
        induction.train(theirs, their_settings)
        pairs = zip(mine.state_dict().values(), theirs.state_dict().values(), strict=True)
        return all(torch.equal(a, b) for a, b in pairs)

    assert same_weights(short)
    assert not same_weights(dataclasses.replace(short, seed=short.seed + 1))


# ---- section 6: copying where it never trained ----------------------------------------------------------------


def copies_and_guesses(model, probes):
    """Section 6's check per probe: (copyable loss below half the uniform guess, other loss above it minus 0.1)."""
    with torch.no_grad():
        losses = {name: copy_data.split_losses(model(ids), ids) for name, ids in probes.items()}
    return {name: (m["copyable"] < UNIFORM / 2, m["other"] > UNIFORM - 0.1) for name, m in losses.items()}


def test_copying_on_unseen_placements_holds_trained_and_fails_untrained(trained, untrained, probes):
    """The check: on every probe the copyable loss is below half the uniform guess. An untrained model copies
    nothing: its copyable loss is above the guess on every probe."""
    assert all(all(pair) for pair in copies_and_guesses(trained, probes).values())
    assert not any(copies for copies, _ in copies_and_guesses(untrained, probes).values())


def test_no_better_than_a_guess_elsewhere_fails_for_a_model_that_predicts_without_copying(probes):
    """The check: on the predictions with nothing to copy the loss stays above the uniform guess minus 0.1, so the
    low copyable loss comes from copying, not from predicting tokens in general. On the probes those tokens are
    random draws, so no causal model can fail it there; it fails for a model with a skill other than copying on an
    input where that skill applies: a model that always predicts the current token plus one, on rows that count
    up (then told again). Its loss on the non-copyable predictions is far below the guess."""
    counting = lambda ids: 50.0 * F.one_hot((ids + 1) % CONFIG.vocab_size, CONFIG.vocab_size).float()  # noqa: E731
    start = torch.randint(0, CONFIG.vocab_size, (64, 1), generator=torch.Generator().manual_seed(0))
    rows = (start + torch.arange(32)) % CONFIG.vocab_size
    counted = {"counting, told again": torch.cat([rows, rows], dim=1)}  # (64, 64)
    assert copies_and_guesses(counting, counted) == {"counting, told again": (True, False)}
    assert not copies_and_guesses(counting, probes)[FIRST][0]  # on random tokens it predicts nothing


# ---- section 7: the previous-token head, row by row -----------------------------------------------------------


def row_claims(model, probe):
    """Section 7's first two checks: the previous-token head above 0.5 on at least 57 of rows 1 .. 60; rows 62 and
    63 below 0.1 in every layer-0 head."""
    per_row, head = per_row_of(model, probe)
    return int((per_row[0, head, :60] > 0.5).sum()) >= 57, bool(per_row[0, :, 61:].max() < 0.1)


def rest_claim(per_row, head):
    """Section 7's third check: every other layer-0 head above 0.5 on at least 20 of rows 1 .. 60, and at 0.5 or
    below on at least 5 of them (looks at the previous token on most rows, not on every one)."""
    rest = [h for h in range(CONFIG.num_heads) if h != head]
    return all(20 <= int((per_row[0, h, :60] > 0.5).sum()) <= 55 for h in rest)


def test_other_heads_on_most_rows_holds_trained_and_fails_untrained_or_with_every_row_covered(
    trained, untrained, probes
):
    """The check that the other layer-0 heads also look at the previous token, on most rows but not all: it holds
    for the trained model; an untrained model's heads do so on few rows; heads that do so on every row (the
    previous-token head's rows copied into the others) fail its upper bound."""
    per_row, head = per_row_of(trained, probes[FIRST])
    assert rest_claim(per_row, head)
    assert not rest_claim(*per_row_of(untrained, probes[FIRST]))
    everywhere = per_row.clone()
    everywhere[0, :] = per_row[0, head]
    assert not rest_claim(everywhere, head)


def roll_positions(shift):
    def edit(m):
        m.pos_emb.weight.copy_(m.pos_emb.weight.roll(shift, dims=0))

    return edit


def shuffle_positions(m):
    m.pos_emb.weight.copy_(m.pos_emb.weight[torch.randperm(64, generator=torch.Generator().manual_seed(0))])


def test_previous_token_rows_hold_trained_and_fail_untrained_or_with_shuffled_positions(trained, untrained, probes):
    """The first check: one layer-0 head puts more than 0.5 on the previous token on nearly every row 1 .. 60. An
    untrained model has no such head (its best head passes on 1 row); with the position embeddings shuffled, the
    trained head no longer finds the position before its own (3 rows)."""
    probe = probes[FIRST]
    assert row_claims(trained, probe) == (True, True)
    assert not row_claims(untrained, probe)[0]
    assert not row_claims(rebuild(trained, shuffle_positions), probe)[0]


def test_nothing_learned_on_the_last_rows_fails_when_they_read_trained_positions(trained, probes):
    """The second check: rows 62 and 63, whose keys no training prediction reads, learned no previous-token
    weight. With every position embedding moved two rows later (row i reads the embedding of i - 2), rows 62 and
    63 read the embeddings of 60 and 61, where the head did form: the check fails, while the first still holds."""
    assert row_claims(rebuild(trained, roll_positions(2)), probes[FIRST]) == (True, False)


# ---- section 8: the shortcut a fixed layout teaches -----------------------------------------------------------


def shortcut_claims(shortcut, general, probes):
    """Section 8's checks: the copyable loss below half the guess, per probe, for ``shortcut``; its best
    previous-token head below 0.2 on every row 40 .. 57; ``general``'s head above 0.5 on 15 of those 18 rows."""
    with torch.no_grad():
        below = [copy_data.split_losses(shortcut(ids), ids)["copyable"] < UNIFORM / 2 for ids in probes.values()]
    shortcut_rows, best = per_row_of(shortcut, probes[FIRST])
    general_rows, prev_head = per_row_of(general, probes[FIRST])
    return (
        below,
        bool(shortcut_rows[0, best, 39:57].max() < 0.2),
        int((general_rows[0, prev_head, 39:57] > 0.5).sum()) >= 15,
    )


def test_shortcut_checks_hold_for_the_fixed_layout_and_fail_with_the_models_swapped(
    trained, fixed_layout, untrained, probes
):
    """The checks: the fixed-layout model copies in its own layout only (True, False, False) and its previous-token
    head is off on rows 40 .. 57, where the general model's is on. Swap the two models and every check fails: the
    general model copies on all three probes and its head is on there; the fixed-layout model's is off. An untrained
    model copies on none and has no head on those rows either."""
    assert shortcut_claims(fixed_layout, trained, probes) == ([True, False, False], True, True)
    assert shortcut_claims(trained, fixed_layout, probes) == ([True, True, True], False, False)
    below, _, general_on = shortcut_claims(untrained, untrained, probes)
    assert below == [False, False, False] and not general_on


# ---- section 9: ablation --------------------------------------------------------------------------------------


def ablation_table(model, probe):
    """Section 9's printed bands, with the notebook's ``band`` and ``versus``: (copyable loss, mean layer-1 induction
    score) with nothing ablated, then without each layer-0 head in turn (the loss as a change from the baseline)."""
    band, versus = notebook_def("band"), notebook_def("versus")
    rows, baseline = [], None
    for ablate in [[]] + [[(0, h)] for h in range(CONFIG.num_heads)]:
        measured = induction.measure(model, probe, ablate=ablate)
        score = float(measured["induction"][1].mean())
        if baseline is None:
            baseline = measured["copyable"]
        loss = versus(measured["copyable"], baseline) if ablate else band(baseline)
        rows.append((loss, "above 0.3" if score > 0.3 else "below 0.2" if score < 0.2 else "0.2 to 0.3"))
    return rows


def printed_table(prev_head):
    """The table the notebook stored: only the previous-token head matters."""
    kept, lost = ("within 0.5 of the baseline", "above 0.3"), ("over 1.0 above it", "below 0.2")
    return [("1.5 to 3.0", "above 0.3")] + [lost if h == prev_head else kept for h in range(CONFIG.num_heads)]


def test_ablation_bands_hold_trained_and_fail_untrained_or_with_the_previous_token_head_redrawn(
    trained, untrained, probes
):
    """The check: the model copies (baseline); copying and the induction score collapse without the previous-token
    head, and not without any of the other three layer-0 heads. An untrained model copies in no row of the table;
    with the previous-token head's weights redrawn the model copies in none either, and switching off no head
    costs it more than 1.0."""
    probe = probes[FIRST]
    _, prev_head = per_row_of(trained, probe)
    assert ablation_table(trained, probe) == printed_table(prev_head)
    table = ablation_table(untrained, probe)
    assert table[0] == ("above 3.0", "below 0.2") and table != printed_table(prev_head)
    redrawn = ablation_table(rebuild(wc.random_head(trained, 0, prev_head, seed=1)), probe)
    assert redrawn[0] == ("above 3.0", "below 0.2")
    assert all(loss != "over 1.0 above it" for loss, _ in redrawn[1:])


# ---- section 10: what the induction heads write ---------------------------------------------------------------


def top_share_claims(model, ids):
    """Section 10's checks: the layer-1 heads that rank the right token first on more than 0.3 of the copyable
    predictions, and whether every layer-0 head does so on less than 0.1."""
    can, right = copy_data.copyable(ids), ids[:, 1:]
    top_share = torch.zeros(CONFIG.num_layers, CONFIG.num_heads)
    for layer in range(CONFIG.num_layers):
        for head in range(CONFIG.num_heads):
            dla = circuit.logit_attribution(model, ids, layer, head)[:, :-1]  # (B, T - 1, V)
            top_share[layer, head] = (dla.argmax(dim=-1) == right)[can].float().mean()
    return (top_share[1] > 0.3).nonzero().flatten().tolist(), bool(top_share[0].max() < 0.1)


def test_induction_heads_write_the_copy_trained_and_not_untrained_or_without_the_previous_token_head(
    trained, untrained, probes
):
    """The first check: all four layer-1 heads rank the copied token first on more than 0.3 of the copyable
    predictions. Untrained heads write nothing in particular (none passes); with the previous-token head's output
    zeroed the layer-1 heads lose their target, and none passes either."""
    probe = probes[FIRST]
    assert top_share_claims(trained, probe) == ([0, 1, 2, 3], True)
    assert top_share_claims(untrained, probe)[0] == []
    _, prev_head = per_row_of(trained, probe)
    assert top_share_claims(rebuild(trained, zero_heads(0, [prev_head])), probe)[0] == []


def test_layer_0_writes_nothing_useful_fails_on_rows_that_alternate_two_tokens(trained):
    """The second check: no layer-0 head ranks the right token first on 0.1 of the copyable predictions; on the
    probe the copy sits 32 back, out of layer 0's reach. On rows A B A B ... the token to predict is the previous
    one, which the previous-token head attends to and writes (its OV circuit copies): the check fails."""
    pairs = torch.randint(0, CONFIG.vocab_size, (64, 2), generator=torch.Generator().manual_seed(5))
    assert not top_share_claims(trained, pairs.repeat(1, 32))[1]


# ---- section 11: the model generates --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prompt():
    """Section 11's prompt: the first 32 GPT-2 tokens of The Verdict, each distinct one a random id, then again its
    first three."""
    passage = llm_lab.gpt2_tokenizer().encode(llm_lab.load_text("the-verdict"))[:32]
    distinct = sorted(set(passage))
    ids = torch.randperm(64, generator=torch.Generator().manual_seed(7)).tolist()
    to_id = dict(zip(distinct, ids, strict=False))
    return torch.tensor([[to_id[t] for t in passage] + [to_id[t] for t in passage[:3]]])  # (1, 35)


def decode(model, prompt, step, restart_positions=False):
    """Section 11's loop: greedy decoding through ``step`` (the notebook's ``new_token_logits``) and one cache per
    layer; the sequence, and the largest gap between the cached logits and the full forward's."""
    caches = [KVCache() for _ in model.attn]
    logits, sequence, max_gap = step(model, prompt, caches, 0), prompt, 0.0
    with torch.no_grad():
        for _ in range(64 - prompt.shape[1]):
            next_id = logits[:, -1:].argmax(dim=-1)
            sequence = torch.cat([sequence, next_id], dim=1)
            logits = step(model, next_id, caches, 0 if restart_positions else sequence.shape[1] - 1)
            max_gap = max(max_gap, float((logits - model(sequence)[:, -1:]).abs().max()))
    return sequence, max_gap


NEW_TOKEN_LOGITS = dict(torch=torch, decode_step=decode_step)


def test_cached_decoding_equals_the_full_forward_and_fails_with_a_wrong_position_or_no_cache(
    trained, untrained, prompt
):
    """The checks: cached decoding gives the full forward's logits (gap below 1e-4) and the tokens of
    ``circuit.generate``. Feeding every new token at position 0, or through an empty cache each step, computes
    something else (gaps above 1); tokens generated by another model are other tokens."""
    step = notebook_def("new_token_logits", **NEW_TOKEN_LOGITS)
    sequence, gap = decode(trained, prompt, step)
    generated = sequence[0, prompt.shape[1] :]
    assert gap < 1e-4 and torch.equal(generated, circuit.generate(trained, prompt, len(generated))[0])
    assert decode(trained, prompt, step, restart_positions=True)[1] > 1.0
    forgetful = lambda model, ids, caches, start: step(model, ids, [KVCache() for _ in caches], start)  # noqa: E731
    assert decode(trained, prompt, forgetful)[1] > 1.0
    assert not torch.equal(generated, circuit.generate(untrained, prompt, len(generated))[0])


def copy_claims(sequence, prompt):
    """Section 11's checks on the generated tokens: each followed the token before it earlier in the row; the
    first five are the passage's."""
    row, t0 = sequence[0], prompt.shape[1]
    copies = [bool(((row[: t - 1] == row[t - 1]) & (row[1:t] == row[t])).any()) for t in range(t0, 64)]
    return all(copies), torch.equal(sequence[0, t0 : t0 + 5], prompt[0, 3:8])


def test_generation_copies_trained_and_not_untrained_or_without_the_previous_token_head(trained, untrained, prompt):
    """The checks: every generated token is a copy, and the first five continue the passage. An untrained model
    writes tokens that never followed their predecessor; without the previous-token head (its output zeroed) the
    model cannot find where its token occurred before and writes other tokens."""
    step = notebook_def("new_token_logits", **NEW_TOKEN_LOGITS)
    assert copy_claims(decode(trained, prompt, step)[0], prompt) == (True, True)
    assert copy_claims(decode(untrained, prompt, step)[0], prompt) == (False, False)
    _, prev_head = per_row_of(trained, copy_data.probe_batch(64, CONFIG, 0, 32, seed=10))
    no_prev = rebuild(trained, zero_heads(0, [prev_head]))
    assert copy_claims(decode(no_prev, prompt, step)[0], prompt) == (False, False)


# ---- exercise 1: predict, then run an ablation ----------------------------------------------------------------


def exercise_claims(model, probe):
    """Exercise 1's checks: with only the previous-token head left in layer 0 the copyable loss stays within 1.0
    of the baseline and closer to it than to the guess; without the strongest induction head, within 1.0."""
    _, prev_head = per_row_of(model, probe)
    baseline = induction.measure(model, probe)
    ind_head = int(baseline["induction"][1].argmax())
    others = [(0, h) for h in range(CONFIG.num_heads) if h != prev_head]
    only_prev = induction.measure(model, probe, ablate=others)["copyable"]
    one_less = induction.measure(model, probe, ablate=[(1, ind_head)])["copyable"]
    base = baseline["copyable"]
    return only_prev < base + 1.0, only_prev - base < UNIFORM - only_prev, one_less < base + 1.0


def test_exercise_ablations_hold_trained_and_fail_without_a_working_head_or_a_spare(trained, untrained, probes):
    """The checks: layer 0's previous-token head alone carries what layer 1 needs, and layer 1 has spare
    induction heads. With the previous-token head's output zeroed, keeping only it leaves layer 0 writing nothing
    useful (the first two checks fail); with layer 1 cut down to its strongest head, switching that one off
    removes all copying (the third fails). An untrained model copies at no ablation: its loss sits at the guess,
    not nearer the baseline."""
    probe = probes[FIRST]
    assert exercise_claims(trained, probe) == (True, True, True)
    _, prev_head = per_row_of(trained, probe)
    assert exercise_claims(rebuild(trained, zero_heads(0, [prev_head])), probe)[:2] == (False, False)
    strongest = int(induction.measure(trained, probe)["induction"][1].argmax())
    spare = [h for h in range(CONFIG.num_heads) if h != strongest]
    assert not exercise_claims(rebuild(trained, zero_heads(1, spare)), probe)[2]
    assert not exercise_claims(untrained, probe)[1]
