"""Notebook 08's training curve: the loss split by how far back the copy is, the in-context-learning score and
layer 0's previous-token weight, measured every 20 steps of the notebook's loop; the claims the notebook prints hold
on the default training and fail where what they claim is absent."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from llm_lab.explore import copy_data, distance, induction

CONFIG = induction.InductionConfig()
UNIFORM = math.log(CONFIG.vocab_size)


def notebook_curve(model, steps: int | None = None, task=None) -> dict:
    """The notebook's training loop (section 4), measuring ``distance.training_point`` every 20 steps."""
    settings = induction.TrainSettings()
    probe = copy_data.probe_batch(64, CONFIG, 0, 32, seed=10)  # "0-31 told again at 32-63"
    held = copy_data.copy_batch(2000, CONFIG, torch.Generator().manual_seed(1))[:64]
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: induction.lr_factor(step, settings))
    data = torch.Generator().manual_seed(settings.seed)
    curve: dict = {"step": []}
    model.train()
    for step in range(settings.steps if steps is None else steps):
        ids = copy_data.copy_batch(settings.batch_size, CONFIG, data, task or settings.task)
        loss = F.cross_entropy(model(ids)[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        schedule.step()
        if (step + 1) % 20 == 0:
            curve["step"].append(step + 1)
            for key, value in distance.training_point(model, probe, held).items():
                curve.setdefault(key, []).append(value)
    return curve


@pytest.fixture(scope="module")
def curve():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(123)
        return notebook_curve(induction.AttentionOnlyTransformer(CONFIG))
    finally:
        torch.set_num_threads(threads)


def test_the_claims_hold_on_the_default_training(curve):
    claims = distance.training_claims(curve, UNIFORM)
    assert len(claims) == 4 and all(claims.values()), claims
    i = curve["step"].index(100)
    assert curve["2-7 back"][i] < 3.2 and curve["8 or more back"][i] > 3.3, (
        curve["2-7 back"][i],
        curve["8 or more back"][i],
    )
    assert curve["icl"][0] > -0.3 and curve["icl"][-1] < -1.5  # no in-context learning at first, a lot at the end


def test_the_far_copies_claim_fails_on_a_model_that_never_sees_far_copies():
    """Trained on short patterns only (``short_share=1.0``: every copy 2-7 back), the model learns the short copies
    but its copies 8+ back barely move: the claim that they fall between the two steps fails."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(123)
        model = induction.AttentionOnlyTransformer(CONFIG)
        short = notebook_curve(model, steps=300, task=copy_data.CopyTask(short_share=1.0))
    finally:
        torch.set_num_threads(threads)
    claims = distance.training_claims(short, UNIFORM)
    assert not claims["copies 8+ back at least 1.5 lower at step 300 than at step 100"], short["8 or more back"]


def test_the_claims_fail_on_a_model_that_does_not_learn():
    """A learning rate of 0: the curve stays where it started, nothing falls first or at all."""
    torch.manual_seed(123)
    model = induction.AttentionOnlyTransformer(CONFIG)
    frozen = {k: v.clone() for k, v in model.state_dict().items()}
    for p in model.parameters():
        p.requires_grad_(False)
    points = [
        distance.training_point(
            model,
            copy_data.probe_batch(64, CONFIG, 0, 32, seed=10),
            copy_data.copy_batch(64, CONFIG, torch.Generator().manual_seed(1)),
        )
    ] * 15
    flat = {"step": [20 * (k + 1) for k in range(15)], **{key: [p[key] for p in points] for key in points[0]}}
    claims = distance.training_claims(flat, UNIFORM)
    assert not any(v for k, v in claims.items() if "probe" not in k), claims  # only "the probe is still near ln 64"
    assert all(torch.equal(v, frozen[k]) for k, v in model.state_dict().items())


def test_the_order_claims_fail_when_the_far_copies_fall_first(curve):
    """The same curve with the two distance groups swapped: copies 8+ back learned first breaks the first claim
    only; a previous-token weight already high at step 100 (a circuit there from the start) breaks the third."""
    swapped = {**curve, "2-7 back": curve["8 or more back"], "8 or more back": curve["2-7 back"]}
    claims = distance.training_claims(swapped, UNIFORM)
    assert [k for k, v in claims.items() if not v] == [next(iter(claims))], claims
    early = {**curve, "previous": [0.9] * len(curve["previous"])}
    assert not list(distance.training_claims(early, UNIFORM).values())[2]


def test_training_claims_need_the_steps_they_compare():
    with pytest.raises(ValueError, match="measured at steps 100 and 300"):
        distance.training_claims({"step": [50, 100, 150]}, UNIFORM)


def test_icl_score_and_loss_by_distance_on_known_logits():
    """Logits that put all mass on the right token late in the window and none early: the score is the difference
    of the two means; the distance groups take the copies their nearest source puts there."""
    ids = torch.tensor([[1, 2, 3, 1, 2, 3, 4, 5, 1, 2]])  # (1, 10): 1->2 copied 3 back at i=3, 2->3 at i=4, ...
    good = F.one_hot(torch.roll(ids, -1, dims=1), 8).double() * 50  # (1, T, V): the next token, nearly certain
    assert distance.icl_score(good, ids, width=2) == pytest.approx(0.0, abs=1e-9)
    mixed = good.clone()
    mixed[:, :2] = 0.0  # the first two predictions uniform over 8
    assert distance.icl_score(mixed, ids, width=2) == pytest.approx(-math.log(8), rel=1e-6)
    groups = distance.loss_by_distance(mixed, ids)
    assert groups["2-7 back"] == pytest.approx(0.0, abs=1e-9)  # i = 3, 4, 8: copies 3 and 6 back, all certain
    assert math.isnan(groups["8 or more back"])
    with pytest.raises(ValueError, match="logits must be"):
        distance.icl_score(good[:, :-1], ids)


def test_more_far_copies_trade_the_near_end_for_the_far_end():
    """The notebook's second data: more far copies help 48 back and hurt 8 back and the late probe; swapped (the
    default model named the far one) every claim fails."""
    late = copy_data.probe_batch(64, CONFIG, 40, 12, seed=12)  # "40-51 told again at 52-63"
    models, reach, late_loss = {}, {}, {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, task in (
            ("default", copy_data.CopyTask()),
            ("far", copy_data.CopyTask(max_gap=48, short_share=0.25)),
        ):
            torch.manual_seed(123)
            models[name] = induction.AttentionOnlyTransformer(CONFIG)
            induction.train(models[name], dataclasses.replace(induction.TrainSettings(), task=task))
            reach[name] = distance.sweep(models[name], [2, 8, 16, 48])
            with torch.no_grad():
                late_loss[name] = copy_data.split_losses(models[name](late), late)["copyable"]
    finally:
        torch.set_num_threads(threads)
    claims = distance.trade_claims(reach["default"], reach["far"], late_loss["default"], late_loss["far"])
    assert len(claims) == 3 and all(claims.values()), (claims, reach, late_loss)
    swapped = distance.trade_claims(reach["far"], reach["default"], late_loss["far"], late_loss["default"])
    assert not any(swapped.values()), swapped
    # the sweep claims of section 6 are the default data's: the far model fails both ends of them
    far_sweep = distance.sweep_claims(distance.sweep(models["far"], [8, 56]))
    assert not far_sweep["copy loss below 1.5 at 8 back"] and not far_sweep["copy loss above 3.0 at 56 back"], far_sweep
    with pytest.raises(ValueError, match="8 and 48"):
        distance.trade_claims(distance.sweep(models["far"], [2, 16]), reach["far"], 1.0, 2.0)
