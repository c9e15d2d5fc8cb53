import shutil

import pytest
import torch

import llm_lab
from llm_lab import GPTDatasetV1, create_dataloader_v1, gpt2_tokenizer, load_text, resources, tokenizer

KNOWN = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
KNOWN_IDS = [
    15496,
    11,
    466,
    345,
    588,
    8887,
    30,
    220,
    50256,
    554,
    262,
    4252,
    18250,
    8812,
    2114,
    286,
    617,
    34680,
    27271,
    13,
]


class CharTokenizer:
    """One id per character: makes window arithmetic easy to read in tests."""

    def encode(self, text, allowed_special=()):
        return [ord(c) for c in text]


def test_tokenizer_known_ids_and_round_trip():
    enc = gpt2_tokenizer()
    assert enc.n_vocab == 50257 and enc.eot_token == 50256
    assert enc.encode(KNOWN, allowed_special={"<|endoftext|>"}) == KNOWN_IDS
    assert enc.decode(KNOWN_IDS) == KNOWN


def test_the_verdict():
    text = load_text("the-verdict")
    assert len(text) == 20479 and text.startswith("I HAD always thought Jack Gisburn")
    assert len(gpt2_tokenizer().encode(text)) == 5145


def test_unknown_text_name():
    with pytest.raises(ValueError, match=r"unknown text 'verdict'; available: \['the-verdict'\]"):
        load_text("verdict")


def test_number_of_windows_and_shift_by_one():
    text = "abcdefghij"  # 10 tokens
    ds = GPTDatasetV1(text, CharTokenizer(), max_length=4, stride=3)
    # starts 0, 3 (6 would need tokens 6..10, one past the end)
    assert len(ds) == (10 - 4 - 1) // 3 + 1 == 2
    x0, y0 = ds[0]
    assert x0.tolist() == [ord(c) for c in "abcd"] and y0.tolist() == [ord(c) for c in "bcde"]
    x_last, y_last = ds[len(ds) - 1]
    assert x_last.tolist() == [ord(c) for c in "defg"] and y_last.tolist() == [ord(c) for c in "efgh"]
    assert x0.dtype == torch.long


@pytest.mark.parametrize("n_tokens,max_length,stride", [(5, 4, 1), (11, 4, 3), (100, 8, 8), (100, 8, 20), (9, 8, 5)])
def test_windows_match_the_book_list_approach(n_tokens, max_length, stride):
    ids = list(range(1000, 1000 + n_tokens))
    ds = GPTDatasetV1(
        "x" * n_tokens, type("T", (), {"encode": lambda self, t, allowed_special=(): ids})(), max_length, stride
    )
    book = [(ids[i : i + max_length], ids[i + 1 : i + max_length + 1]) for i in range(0, n_tokens - max_length, stride)]
    assert len(ds) == len(book)
    for i, (x, y) in enumerate(book):
        assert ds[i][0].tolist() == x and ds[i][1].tolist() == y
    # the last token of the text is reachable as a target exactly when the windows line up with the end
    assert ds.target_ids.max().item() <= ids[-1]


def test_windows_are_views_of_one_tensor():
    ds = GPTDatasetV1(load_text(), gpt2_tokenizer(), max_length=256, stride=1)
    assert len(ds) == 5145 - 256
    base = ds.token_ids.untyped_storage().data_ptr()
    assert ds.windows.untyped_storage().data_ptr() == base
    assert ds.input_ids.untyped_storage().data_ptr() == base
    assert ds[100][0].untyped_storage().data_ptr() == base


def test_text_too_short_names_counts():
    with pytest.raises(ValueError, match=r"it has 3 tokens, but max_length=4 needs at least 5"):
        GPTDatasetV1("abc", CharTokenizer(), max_length=4, stride=1)
    # exactly max_length tokens is still one short: the target needs one more
    with pytest.raises(ValueError, match=r"it has 4 tokens"):
        GPTDatasetV1("abcd", CharTokenizer(), max_length=4, stride=1)
    assert len(GPTDatasetV1("abcde", CharTokenizer(), max_length=4, stride=1)) == 1


@pytest.mark.parametrize(
    "kw,name", [({"max_length": 0}, "max_length"), ({"stride": -1}, "stride"), ({"batch_size": 0}, "batch_size")]
)
def test_non_positive_arguments(kw, name):
    with pytest.raises(ValueError, match=f"{name} must be a positive int"):
        create_dataloader_v1(load_text(), **kw)


def test_dataset_rejects_non_string():
    with pytest.raises(TypeError, match="txt must be a str, got list"):
        GPTDatasetV1(["a"], CharTokenizer(), 2, 1)


def test_dataloader_book_example():
    loader = create_dataloader_v1(load_text(), batch_size=8, max_length=4, stride=4, shuffle=False)
    x, y = next(iter(loader))
    assert x.shape == y.shape == (8, 4)
    assert x[0].tolist() == [40, 367, 2885, 1464]
    assert torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(x[1:, 0], y[:-1, -1])  # stride == max_length: windows tile the text
    n_windows = (5145 - 4 - 1) // 4 + 1
    assert len(loader.dataset) == n_windows == 1286 and len(loader) == n_windows // 8  # drop_last


def test_drop_last_with_too_few_windows():
    with pytest.raises(ValueError, match=r"only 2 windows for batch_size=4 with drop_last=True"):
        create_dataloader_v1("one two three four five six seven eight nine ten", batch_size=4, max_length=4, stride=4)


def test_missing_data_file(monkeypatch, tmp_path):
    monkeypatch.setattr(resources, "data_dirs", lambda: [tmp_path])
    with pytest.raises(FileNotFoundError, match=r"'gpt2.tiktoken' \(sha256 306cd27f.*not found; searched: "):
        resources.verified_path(*resources.GPT2_BPE)


def test_checksum_failure_names_file_and_hash(monkeypatch, tmp_path):
    bad = tmp_path / "the-verdict.txt"
    shutil.copy(resources.verified_path(*resources.TEXTS["the-verdict"]), bad)
    bad.write_text(bad.read_text() + "tampered")
    monkeypatch.setenv("LLM_LAB_DATA", str(tmp_path))
    resources._read_text.cache_clear()
    try:
        with pytest.raises(ValueError, match=rf"{bad} failed its checksum: expected sha256 b41e41a6"):
            load_text("the-verdict")
    finally:
        resources._read_text.cache_clear()


def test_tokenizer_checksum_failure(monkeypatch, tmp_path):
    (tmp_path / "gpt2.tiktoken").write_text("not a tokenizer")
    monkeypatch.setenv("LLM_LAB_DATA", str(tmp_path))
    tokenizer.gpt2_tokenizer.cache_clear()
    try:
        with pytest.raises(ValueError, match="gpt2.tiktoken failed its checksum"):
            gpt2_tokenizer()
    finally:
        tokenizer.gpt2_tokenizer.cache_clear()


def test_runtime_helpers():
    assert llm_lab.get_device().type in {"cpu", "cuda", "mps"}
    llm_lab.seed_everything(7)
    a = torch.rand(3)
    llm_lab.seed_everything(7)
    assert torch.equal(a, torch.rand(3))
    with pytest.raises(TypeError, match="seed must be an int"):
        llm_lab.seed_everything(1.5)
    assert llm_lab.in_colab() is False


def test_slices_give_batches_of_windows():
    ds = GPTDatasetV1("abcdefghij", CharTokenizer(), max_length=4, stride=1)
    x, y = ds[0:3]
    assert x.shape == y.shape == (3, 4)
    assert torch.equal(x, ds.input_ids[:3]) and torch.equal(y, ds.target_ids[:3])
    x, y = ds[[0, 5]]
    assert x[1].tolist() == [ord(c) for c in "fghi"]


class PlainTokenizer:
    def encode(self, text):  # no allowed_special keyword
        return [ord(c) for c in text]


def test_tokenizer_problems_are_named():
    assert len(GPTDatasetV1("abcdef", PlainTokenizer(), 4, 1)) == 2
    with pytest.raises(TypeError, match="tokenizer must have an encode"):
        GPTDatasetV1("abcdef", None, 4, 1)
    strings = type("S", (), {"encode": lambda self, t, allowed_special=(): list(t)})()
    with pytest.raises(TypeError, match="tokenizer.encode must return a list of int token ids"):
        GPTDatasetV1("abcdef", strings, 4, 1)
    negative = type("N", (), {"encode": lambda self, t, allowed_special=(): [-1] * len(t)})()
    with pytest.raises(ValueError, match=r"negative token id \(-1\)"):
        GPTDatasetV1("abcdef", negative, 4, 1)
    empty = type("E", (), {"encode": lambda self, t, allowed_special=(): []})()
    with pytest.raises(ValueError, match="it has 0 tokens"):
        GPTDatasetV1("abcdef", empty, 4, 1)


def test_load_text_and_seed_argument_types():
    with pytest.raises(TypeError, match=r"name must be a str, one of \['the-verdict'\]; got \['a'\]"):
        load_text(["a"])
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*63\), got 1180591620717411303424"):
        llm_lab.seed_everything(2**70)
    import numpy as np

    llm_lab.seed_everything(np.int64(3))  # NumPy ints are ints
