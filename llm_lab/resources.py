"""Shipped data files (text, tokenizer), found and checksum-verified.

In a clone the files live in the repository's ``data/`` folder; an installed wheel carries them as
``llm_lab/_data``. ``LLM_LAB_DATA`` overrides both.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

TEXTS = {
    # name: (file, sha256)
    "the-verdict": ("the-verdict.txt", "b41e41a68f0398a3154ae69e2e4c0e2694e17fe0d66730536837f1b01935b31f"),
}
GPT2_BPE = ("gpt2.tiktoken", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
# A tiny attention-only model trained on The Verdict by `make train` (tools/authoring/train.py):
# llm_lab.explore.heads.load_trained()
TRAINED_HEADS = ("heads-verdict.pt", "694419619f1135113ba3792a6a8179d91bb5f8deccdc972af20c53bea8977995")
# The CJK font the Chinese figures draw with: a subset of Noto Sans CJK SC (OFL, LICENSE.noto-cjk) made by
# tools/authoring/figure_font.py; llm_lab.explore.plotting registers it with matplotlib
FIGURE_FONT = ("NotoSansSC-llmlab-subset.ttf", "046bd6a7c03a0780080b94c0fd36d894c4effb6974ec8aa24a260e21d8864aa2")


def shipped_files() -> list[tuple[str, str]]:
    """``(file, sha256)`` of every data file llm_lab opens (the bug-report block checks each one)."""
    return [*TEXTS.values(), GPT2_BPE, TRAINED_HEADS, FIGURE_FONT]


def data_dirs() -> list[Path]:
    """The folders searched for data files, in order."""
    here = Path(__file__).resolve().parent
    dirs = [here / "_data", here.parent / "data"]
    if os.environ.get("LLM_LAB_DATA"):
        dirs.insert(0, Path(os.environ["LLM_LAB_DATA"]))
    return dirs


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verified_path(filename: str, sha256: str) -> Path:
    """Path of a shipped data file whose sha256 matches; a clear error otherwise."""
    for folder in data_dirs():
        path = folder / filename
        if path.is_file():
            actual = _sha256(path)
            if actual != sha256:
                raise ValueError(
                    f"data file {path} failed its checksum: expected sha256 {sha256}, got {actual}. "
                    "Restore it from the repository (git checkout -- data/) or reinstall llm_lab."
                )
            return path
    searched = ", ".join(str(d) for d in data_dirs())
    raise FileNotFoundError(
        f"data file {filename!r} (sha256 {sha256}) not found; searched: {searched}. "
        "Run from a clone of the repository, reinstall llm_lab, or set LLM_LAB_DATA to a folder holding it."
    )


def load_text(name: str = "the-verdict") -> str:
    """The text of a shipped corpus, checksum verified. Known names: ``"the-verdict"``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, one of {sorted(TEXTS)}; got {name!r} ({type(name).__name__})")
    if name not in TEXTS:
        raise ValueError(f"unknown text {name!r}; available: {sorted(TEXTS)}")
    return _read_text(name)


@cache
def _read_text(name: str) -> str:
    filename, sha256 = TEXTS[name]
    return verified_path(filename, sha256).read_text(encoding="utf-8")
