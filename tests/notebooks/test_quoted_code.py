"""Code the notebooks quote in their prose (a fenced block, not a cell) says what the package's code says."""

import inspect
import re
import textwrap

from llm_lab import FusedMultiHeadAttention
from tools.authoring import nbtool

FENCE = re.compile(r"```python\n(.*?)```", re.S)
CHECK = re.compile(r'_checks\.flag\("(\w+)", \1\)')  # the quote leaves the argument check out


def code_lines(text: str) -> list[str]:
    """Non-empty lines with their trailing comments cut off (no '#' inside a string in the quoted code)."""
    return [line.split("  #")[0].rstrip() for line in text.splitlines() if line.strip()]


def quoted_forwards(lang: str) -> list[str]:
    cells = nbtool.parse(nbtool.SRC / "07_efficient_attention.nbsrc")["cells"]
    blocks = [b for c in cells if c["type"] == "md" for b in FENCE.findall(c[lang])]
    return [b for b in blocks if b.startswith("def forward(self, x, return_attn_weights=False):")]


def test_notebook_07_quotes_fused_forward_as_the_package_has_it():
    source = textwrap.dedent(inspect.getsource(FusedMultiHeadAttention.forward))
    expected = code_lines(CHECK.sub(r"\1", source))[1:]  # the body; the def line carries type hints
    assert expected[0].strip() == "if return_attn_weights:", expected[0]
    for lang in nbtool.LANGS:
        (quote,) = quoted_forwards(lang)
        assert code_lines(quote)[1:] == expected, f"{lang}: 07's quoted forward differs from llm_lab's"
