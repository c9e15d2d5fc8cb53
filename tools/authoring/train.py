"""Train the tiny attention-only model on The Verdict and write data/heads-verdict.pt (`make train`).

    .venv/bin/python -m tools.authoring.train                 # the shipped file (a few minutes on 2 CPU cores)
    .venv/bin/python -m tools.authoring.train --steps 3 --out /tmp/x.pt   # a quick run, e.g. in the tests

Deterministic: CPU only, fixed seeds, torch.use_deterministic_algorithms(True), a fixed number of threads.
The last 10% of the story's tokens are held out: the heads are measured there, on text the model never saw.
After writing a new data/heads-verdict.pt, put its sha256 in llm_lab/resources.py and data/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from llm_lab import gpt2_tokenizer, load_text
from llm_lab.explore import heads

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Settings:
    steps: int = 1500
    batch_size: int = 32
    lr: float = 3e-3
    weight_decay: float = 0.1
    seed: int = 123  # initial weights
    data_seed: int = 1  # which windows each step draws
    heldout_fraction: float = 0.1
    threads: int = 1  # results can depend on the thread count; one thread also copes best with a busy machine


def verdict_ids():
    """The story as GPT-2 ids ``(n,)``, and the sorted GPT-2 ids that occur in it (the model's vocabulary)."""
    gpt2_ids = torch.tensor(gpt2_tokenizer().encode(load_text("the-verdict")))
    return gpt2_ids, torch.unique(gpt2_ids)  # unique() sorts


@contextmanager
def deterministic(settings: Settings):
    """Seeded, deterministic, fixed thread count; the caller's RNG state and settings come back afterwards."""
    was_deterministic, threads = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(settings.threads)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was_deterministic)
            torch.set_num_threads(threads)


def train(settings: Settings, config_kwargs: dict | None = None, log=print):
    """Train from scratch; return the dict that is saved (config, state_dict, vocab, losses, ...)."""
    with deterministic(settings):
        return _train(settings, config_kwargs, log)


def _train(settings: Settings, config_kwargs: dict | None, log):
    gpt2_ids, vocab = verdict_ids()
    ids = torch.searchsorted(vocab, gpt2_ids)  # (n,) model ids
    heldout_start = int(len(ids) * (1 - settings.heldout_fraction))
    train_ids = ids[:heldout_start]

    config = heads.TinyConfig(vocab_size=len(vocab), **(config_kwargs or {}))
    model = heads.TinyAttentionLM(config)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    windows = train_ids.unfold(0, config.context_length + 1, 1)  # (n_windows, T + 1): every start
    gen = torch.Generator().manual_seed(settings.data_seed)
    losses = []
    start = time.perf_counter()
    for step in range(settings.steps):
        batch = windows[torch.randint(len(windows), (settings.batch_size,), generator=gen)]  # (B, T + 1)
        logits = model(batch[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 100 == 0 or step == settings.steps - 1:
            log(f"step {step:4d}  loss {loss.item():.3f}  {time.perf_counter() - start:5.1f} s")
    model.eval()
    return {
        "config": asdict(config),
        "state_dict": model.state_dict(),
        "vocab": vocab,
        "losses": torch.tensor(losses),
        "heldout_start": heldout_start,
        "settings": asdict(settings),
    }


def name_roles(saved: dict) -> dict:
    """Measure every head on the held-out windows and name what it does (see heads.head_role)."""
    with torch.random.fork_rng(devices=[]):  # the random init is overwritten: leave the caller's RNG alone
        model = heads.TinyAttentionLM(heads.TinyConfig(**saved["config"]))
    trained = heads.TrainedHeads(
        model=model,
        vocab=saved["vocab"],
        losses=saved["losses"],
        heldout_start=saved["heldout_start"],
        roles={},
        settings={},
    )
    trained.model.load_state_dict(saved["state_dict"])
    trained.model.eval()
    windows = trained.heldout_windows()
    with torch.no_grad():
        _, weights = trained.model(windows, return_attn_weights=True)
    roles = {}
    for layer, w in enumerate(weights):
        for head, role in enumerate(heads.head_roles(w, windows)):
            roles[f"{layer}.{head}"] = role
    return roles


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=Settings.steps)
    parser.add_argument("--out", type=Path, default=ROOT / "data" / heads.TRAINED_HEADS[0])
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    saved = train(Settings(steps=args.steps))
    saved["roles"] = name_roles(saved)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()  # saved through a buffer, the archive's inner folder is "archive", not the file's name
    torch.save(saved, buffer)
    args.out.write_bytes(buffer.getvalue())
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes), sha256 {digest}")
    for name, role in saved["roles"].items():
        print(f"  layer.head {name}: {role}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
