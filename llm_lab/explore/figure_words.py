"""The words the figure helpers draw, in every language: a table, with no import of matplotlib.

``llm_lab.explore.plotting`` and ``llm_lab.bench.benchmark`` draw with them; tools/authoring/figure_font.py reads
them (with the notebooks' own labels, their '# zh>' code twins) to know which characters the shipped CJK font needs.
"""

from __future__ import annotations

from .. import _checks

# The words the helpers draw, per language; a notebook's own labels have '# zh>' code twins in its source.
FIGURE_WORDS = {
    "key": {"en": "key", "zh": "键"},
    "query": {"en": "query", "zh": "查询"},
    "keys j": {"en": "keys j", "zh": "键 j"},
    "queries i": {"en": "queries i", "zh": "查询 i"},
    "tiles": {
        "en": "T={num_tokens}, block_size={block_size}: {computed} of {total} tiles",
        "zh": "T={num_tokens}，block_size={block_size}：{total} 个块中计算 {computed} 个",
    },
    "output": {"en": "output", "zh": "输出"},
    "shapes": {
        "en": "the tensors of CausalAttention.forward: B = {b}, T = num_tokens = {T}, d_in = {d_in}, d_out = {d_out}",
        "zh": "CausalAttention.forward 中的张量：B = {b}，T = num_tokens = {T}，d_in = {d_in}，d_out = {d_out}",
    },
    "sequence length T": {"en": "sequence length T", "zh": "序列长度 T"},
    "time": {"en": "forward + backward (ms, median)", "zh": "前向 + 反向（毫秒，中位数）"},
    "time min": {"en": "forward + backward (ms, fastest round)", "zh": "前向 + 反向（毫秒，最快的一轮）"},
    "saved": {"en": "saved for backward (MiB)", "zh": "为反向传播保存（MiB）"},
    "dashed": {"en": "dashed: builds T×T weights", "zh": "虚线：构造 T×T 的权重"},
    "circuit title": {"en": "two layers copy: … A B … A → B", "zh": "两层如何复制：… A B … A → B"},
    "circuit layer 0": {
        "en": "layer 0, previous-token head:\nB's position reads A",
        "zh": "第 0 层，前一个词元头：\nB 的位置读取 A",
    },
    "circuit writes": {
        "en": 'at B the stream now holds:\n"the token before me was A"',
        "zh": "B 处的残差流多了一条：\n“我前面的词元是 A”",
    },
    "circuit layer 1": {
        "en": 'layer 1, induction head: the query "I am A" matches that key',
        "zh": "第 1 层，归纳头：查询“我是 A”与这个键匹配",
    },
    "circuit copies": {"en": "copies B:\npredicts B next", "zh": "复制 B：\n预测下一个是 B"},
}
FIGURE_LANGUAGES = tuple(FIGURE_WORDS["key"])


def figure_word(key: str, lang: str = "en", **fields) -> str:
    """The figure word ``key`` of ``FIGURE_WORDS`` in ``lang``, its ``{fields}`` filled in."""
    _checks.one_of("lang", lang, FIGURE_LANGUAGES)
    return FIGURE_WORDS[key][lang].format(**fields)
