"""Heads that do something: the hand-built position heads, the measures, and the model trained on The Verdict."""

import hashlib
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from llm_lab import resources
from llm_lab.explore import heads
from tools.authoring import train
from tools.release import float_nudge

ROOT = Path(__file__).resolve().parents[2]

# What each named head of the shipped model does, measured on the held-out tenth of the story, and the bar it
# must clear. Evenly spread weights score about 0.09 (previous token) and 0.12 (current token) on these windows.
NAMED_HEADS = {
    # "layer.head": (role, measure, threshold)
    "0.2": ("previous token", heads.previous_token_score, 0.5),
    "0.6": ("current token", heads.current_token_score, 0.5),
}


@pytest.fixture(scope="module")
def trained():
    return heads.load_trained()


@pytest.fixture(scope="module")
def heldout(trained):
    windows = trained.heldout_windows()  # (N, T) model ids the model never trained on
    with torch.no_grad():
        _, weights = trained.model(windows, return_attn_weights=True)
    return windows, weights


# ---- the shipped file ---------------------------------------------------------------------------------


def test_shipped_file_matches_its_checksum_and_size():
    filename, sha256 = resources.TRAINED_HEADS
    path = resources.verified_path(filename, sha256)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    assert path.stat().st_size <= 5 * 1024 * 1024


def test_corrupted_file_fails_its_checksum(monkeypatch, tmp_path):
    filename, _ = resources.TRAINED_HEADS
    shutil.copy(resources.verified_path(*resources.TRAINED_HEADS), tmp_path / filename)
    with open(tmp_path / filename, "ab") as f:
        f.write(b"x")
    monkeypatch.setenv("LLM_LAB_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="failed its checksum"):
        heads.load_trained()


def test_loaded_model_is_in_eval_mode_and_predicts(trained):
    cfg = trained.model.config
    assert not trained.model.training
    assert len(trained.vocab) == cfg.vocab_size and torch.equal(trained.vocab, trained.vocab.sort().values)
    assert trained.losses.shape == (trained.settings["steps"],) and torch.isfinite(trained.losses).all()
    # it learned the training text: the loss of the last 100 steps is far below that of a uniform guess
    assert trained.losses[-100:].mean() < 0.5 * torch.log(torch.tensor(float(cfg.vocab_size)))
    ids = trained.encode(" Jack Gisburn")
    logits, weights = trained.model(ids, return_attn_weights=True)
    assert logits.shape == (1, ids.shape[1], cfg.vocab_size)
    assert len(weights) == cfg.num_layers and weights[0].shape == (1, cfg.num_heads, ids.shape[1], ids.shape[1])
    assert trained.tokens(ids[0]) == [" Jack", " G", "is", "burn"]


def test_token_mapping_round_trips_and_rejects_unknown_ids(trained):
    gpt2_ids = trained.vocab[[0, 5, -1]]
    assert torch.equal(trained.vocab[trained.to_local(gpt2_ids)], gpt2_ids)
    with pytest.raises(ValueError, match="do not occur in The Verdict"):
        trained.encode(" quantum")
    with pytest.raises(TypeError, match="text must be a str"):
        trained.encode([1, 2])


def test_model_rejects_bad_ids(trained):
    cfg = trained.model.config
    with pytest.raises(ValueError, match="model's own vocabulary"):
        trained.model(torch.tensor([[cfg.vocab_size]]))
    with pytest.raises(ValueError, match="context_length"):
        trained.model(torch.zeros(1, cfg.context_length + 1, dtype=torch.long))
    with pytest.raises(ValueError, match="integer tensor"):
        trained.model(torch.zeros(1, 4))


def test_heldout_windows_come_from_the_unseen_tail(trained):
    windows = trained.heldout_windows(16)
    assert windows.shape[1] == 16
    tail = trained.to_local(train.verdict_ids()[0][trained.heldout_start :])
    assert torch.equal(windows.flatten(), tail[: windows.numel()])


# ---- what the trained heads do ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NAMED_HEADS))
def test_named_trained_head_does_what_its_name_says(trained, heldout, name):
    role, measure, threshold = NAMED_HEADS[name]
    windows, weights = heldout
    layer, head = map(int, name.split("."))
    assert trained.roles[name] == role
    assert measure(weights[layer])[head] > threshold
    assert heads.head_roles(weights[layer], windows)[head] == role


def test_random_init_model_has_no_such_heads(trained, heldout):
    windows, _ = heldout
    torch.manual_seed(0)
    fresh = heads.TinyAttentionLM(trained.model.config).eval()
    with torch.no_grad():
        _, weights = fresh(windows, return_attn_weights=True)
    for role, measure, threshold in NAMED_HEADS.values():
        for w in weights:
            assert (measure(w) < threshold).all(), role
    assert all(role == "spread out" for w in weights for role in heads.head_roles(w, windows))


# ---- hand-built heads and the measures ----------------------------------------------------------------


def test_hand_built_previous_token_head_looks_back_one_and_copies():
    torch.manual_seed(1)
    x = torch.randn(2, 12, 5)  # (B, T, d_token)
    head = heads.hand_built_head(d_token=5, context_length=12, target="previous")
    with torch.no_grad():
        out, w = head(heads.with_positions(x), return_attn_weights=True)
    assert heads.previous_token_score(w.unsqueeze(1)).item() > 0.9
    # token i outputs token i-1's embedding, up to the e**-10 share each other token keeps
    assert torch.allclose(out[:, 1:, :5], x[:, :-1], atol=1e-2)
    assert torch.allclose(out[:, 0, :5], x[:, 0], atol=1e-6)  # token 0 sees only itself


def test_hand_built_first_token_head():
    head = heads.hand_built_head(d_token=3, context_length=8, target="first")
    with torch.no_grad():
        _, w = head(heads.with_positions(torch.rand(1, 8, 3)), return_attn_weights=True)
    assert heads.first_token_score(w.unsqueeze(1)).item() > 0.9
    assert heads.previous_token_score(w.unsqueeze(1)).item() < 0.1


def test_projections_have_the_documented_layout():
    p = heads.position_head_projections(d_token=2, context_length=4, strength=1.0)
    assert p.W_query.shape == p.W_key.shape == p.W_value.shape == (6, 6)
    # the query of token 3 (input feature 2 + 3) asks for position 2 (output feature 2 + 2)
    assert p.W_query[4, 5] == pytest.approx(6**0.5) and p.W_query.count_nonzero() == 3
    assert torch.equal(p.W_value[:2, :2], torch.eye(2)) and p.W_value[:, 2:].count_nonzero() == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"target": "next"}, ValueError, "target must be one of"),
        ({"strength": 0}, ValueError, "strength must be a positive finite"),
        ({"strength": float("inf")}, ValueError, "strength"),
        ({"d_token": 0}, ValueError, "d_token"),
        ({"context_length": 2.5}, TypeError, "context_length"),
    ],
)
def test_hand_built_head_rejects_bad_arguments(kwargs, error, match):
    args = {"d_token": 3, "context_length": 6, **kwargs}
    with pytest.raises(error, match=match):
        heads.position_head_projections(**args)


def test_measures_on_known_patterns():
    prev = torch.eye(5).roll(-1, dims=1).tril()  # row i -> i-1, row 0 -> nothing yet
    prev[0, 0] = 1.0
    w = torch.stack([prev, torch.eye(5), heads.uniform_weights(1, 1, 5)[0, 0]])[None]  # (1, 3, 5, 5)
    assert torch.allclose(heads.previous_token_score(w), torch.tensor([1.0, 0.0, (1 / 3 + 1 / 4 + 1 / 5) / 3]))
    assert torch.allclose(heads.current_token_score(w), torch.tensor([0.0, 1.0, (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4]))
    assert torch.allclose(heads.first_token_score(w), torch.tensor([0.0, 0.0, (1 / 3 + 1 / 4 + 1 / 5) / 3]))


def test_same_token_and_induction_scores():
    ids = torch.tensor([[7, 8, 9, 7, 8]])  # 7 and 8 repeat
    w = torch.zeros(1, 2, 5, 5)
    w[0, 0, :, 0] = 1.0  # head 0: always the first token
    w[0, 1, torch.arange(5), torch.tensor([0, 1, 2, 1, 2])] = 1.0  # head 1: what followed the last copy
    # rows with an earlier copy: 3 (of id 7 at 0) and 4 (of id 8 at 1)
    assert torch.allclose(heads.same_token_score(w, ids), torch.tensor([0.5, 0.0]))
    assert torch.allclose(heads.induction_score(w, ids), torch.tensor([0.0, 1.0]))
    assert heads.induction_score(w, torch.tensor([[1, 2, 3, 4, 5]])).isnan().all()  # nothing repeats


@pytest.mark.parametrize(
    ("weights", "ids", "match"),
    [
        (torch.rand(5, 5), None, "batch, num_heads"),
        (torch.rand(1, 2, 5, 4), None, "num_tokens, num_tokens"),
        (torch.rand(1, 2, 5, 5), torch.zeros(2, 5, dtype=torch.long), "token_ids must be an integer tensor"),
        (torch.rand(1, 2, 5, 5), torch.zeros(1, 5), "token_ids must be an integer tensor"),
        (torch.rand(1, 2, 2, 2), None, "at least 3 tokens"),
    ],
)
def test_measures_reject_bad_input(weights, ids, match):
    with pytest.raises(ValueError, match=match):
        if ids is None:
            heads.previous_token_score(weights)
        else:
            heads.same_token_score(weights, ids)


def test_head_report_rows_and_even_baseline():
    w = torch.stack([torch.eye(8), heads.uniform_weights(1, 1, 8)[0, 0]])[None]  # (1, 2, 8, 8)
    report = heads.head_report(w, head_names=["self", "even"])
    lines = report.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["self", "even", "spread"]
    assert lines[2].split()[1:] == lines[3].split()[2:]  # the even head scores exactly the baseline
    assert heads.head_roles(w) == ["current token", "spread out"]
    with pytest.raises(ValueError, match="head_names has 1 labels for 2 heads"):
        heads.head_report(w, head_names=["x"])


def test_with_positions_appends_one_hot_codes():
    x = torch.rand(2, 3, 4)
    xp = heads.with_positions(x)
    assert xp.shape == (2, 3, 7) and torch.equal(xp[..., :4], x)
    assert torch.equal(xp[1, :, 4:], torch.eye(3))
    with pytest.raises(ValueError, match="x.unsqueeze"):
        heads.with_positions(torch.rand(3, 4))


# ---- the training script (`make train`), a few steps --------------------------------------------------


def test_train_script_runs_and_matches_the_shipped_start(trained, tmp_path):
    out = tmp_path / "heads.pt"
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    assert train.main(["--steps", "3", "--out", str(out)]) == 0
    # training leaves the caller's settings alone: thread count, deterministic mode, random state
    assert torch.get_num_threads() == threads and not torch.are_deterministic_algorithms_enabled()
    assert torch.equal(torch.get_rng_state(), rng)
    quick = heads.load_trained(out)
    assert quick.losses.shape == (3,)
    # same seeds, same data: the first steps retrace the shipped run
    assert torch.allclose(quick.losses, trained.losses[:3], atol=1e-3)
    assert set(quick.roles) == set(trained.roles)
    with pytest.raises(SystemExit):
        train.main(["--steps", "0", "--out", str(out)])


def test_even_baseline_is_exact_and_rounds_off_the_float_boundary():
    # T = 6: rows 2..5 spread evenly put (1/3 + 1/4 + 1/5 + 1/6) / 4 = 19/80 = 0.2375 on the previous token,
    # a value whose last printed digit would follow the float summation order (0.23750001 or 0.23749999)
    w = heads.uniform_weights(2, 1, 6)
    ids = torch.tensor([[1, 2, 1, 2, 1, 3], [0, 0, 0, 1, 1, 0]])
    even = heads._even_scores(w, ids)
    assert even["previous token"] == Fraction(19, 80) and even["current token"] == Fraction(29, 100)
    floats = {name: float(s[0]) for name, s in heads.head_scores(w, ids).items()}
    assert floats.keys() == even.keys()
    assert all(abs(floats[name] - float(even[name])) < 1e-6 for name in floats)
    assert heads.head_report(w).splitlines()[-1].split()[2:] == ["0.238", "0.238", "0.290"]  # half to even
    for sign in (1, -1):  # float results nudged both ways, as make test-perturbed does: the row stays
        with float_nudge.FloatNudge(sign=sign):
            assert heads.head_report(w).splitlines()[-1].split()[2:] == ["0.238", "0.238", "0.290"]
