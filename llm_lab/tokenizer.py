"""GPT-2's byte-pair tokenizer, built offline from the shipped ``gpt2.tiktoken`` file.

``tiktoken.get_encoding("gpt2")`` downloads its vocabulary at run time; this builds the identical
encoding from the file in ``data/`` so it works without internet.
"""

from __future__ import annotations

from functools import lru_cache

from .resources import GPT2_BPE, verified_path

# GPT-2's pre-tokenizer split pattern (tiktoken's r50k_base); hard-coded because older tiktoken releases
# do not export it.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
ENDOFTEXT = "<|endoftext|>"


@lru_cache(maxsize=1)
def gpt2_tokenizer():
    """A ``tiktoken.Encoding`` equal to ``tiktoken.get_encoding("gpt2")`` (50,257 ids, ``<|endoftext|>`` = 50256)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    filename, sha256 = GPT2_BPE
    path = verified_path(filename, sha256)
    ranks = load_tiktoken_bpe(str(path), expected_hash=sha256)
    return tiktoken.Encoding(
        name="gpt2",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: 50256},
        explicit_n_vocab=50257,
    )
