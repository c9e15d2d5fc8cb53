"""The Chinese notebooks use one term per concept: the table in docs/glossary.md, checked against every source."""

import re
from pathlib import Path

import pytest

from tools import course as _course
from tools.authoring import nbtool

ROOT = Path(__file__).resolve().parents[2]

GLOSSARY = ROOT / "docs" / "glossary.md"
SOURCES = sorted(nbtool.SRC.glob("[0-9][0-9]_*.nbsrc"))


def split_row(line: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` is a literal bar inside a cell."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def glossary() -> list[dict]:
    rows = []
    lines = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = split_row(lines[0])
    assert header[:4] == ["English", "中文", "Reserved", "Never write"], header
    for line in lines[2:]:
        english, chinese, reserved, never, *_ = split_row(line)
        rows.append(
            {
                "english": [form.strip().lower() for form in english.split(" / ")],
                "chinese": chinese,
                "reserved": reserved == "yes",
                "never": [item for item in re.findall(r"`([^`]+)`", never)],
            }
        )
    return rows


def pattern(item: str) -> re.Pattern:
    return re.compile(item[3:]) if item.startswith("re:") else re.compile(re.escape(item))


def chinese_texts(src: Path) -> list[tuple[str, str, str]]:
    """(where, Chinese text, its English twin) for every markdown cell, the title, every comment and code twin."""
    spec = nbtool.parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))
    texts = [(f"{src.name} title", spec["title"]["zh"], spec["title"]["en"])] if spec["title"] else []
    md = [c for c in spec["cells"] if c["type"] == "md"]
    texts += [(f"{src.name} markdown cell {i}", c["zh"], c["en"]) for i, c in enumerate(md)]
    for cell in spec["cells"]:
        if cell["type"] == "code":
            _, comments = nbtool.comment_twins(nbtool.localize_code(cell["source"], "en", cell["at"]), cell["at"])
            texts += [
                (f"{cell['at']}+{row}", twins["zh"], en)
                for row, (_, en, twins) in sorted(comments.items())
                if twins.get("zh")
            ]
            lines, code_twins, _ = nbtool.code_twins(cell["source"], cell["at"])  # a figure's words: '# zh>' lines
            texts += [(f"{cell['at']}+{row}", twins["zh"], lines[row - 1]) for row, twins in sorted(code_twins.items())]
    return texts


ROWS = glossary()
TEXTS = [t for src in SOURCES for t in chinese_texts(src)]
# the exercises' how-to paragraph and the instructor version's header note, written by the builder
TEXTS += [(f"tools/course.py HOWTO[{v!r}]", text["zh"], text["en"]) for v, text in _course.HOWTO.items()]
TEXTS += [("tools/course.py INSTRUCTOR_NOTE", _course.INSTRUCTOR_NOTE["zh"], _course.INSTRUCTOR_NOTE["en"])]


def test_glossary_is_well_formed():
    assert len(ROWS) >= 20
    chinese = [r["chinese"] for r in ROWS]
    assert len(chinese) == len(set(chinese)), "one row per Chinese term"
    for row in ROWS:
        for item in row["never"]:
            assert not pattern(item).search(row["chinese"]), f"{row['chinese']} forbids itself ({item})"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["english"][0])
def test_forbidden_variants_are_absent(row):
    hits = [
        f"{where}: {m.group(0)!r} in {zh[max(0, m.start() - 15) : m.end() + 15]!r}"
        for where, zh, _ in TEXTS
        for item in row["never"]
        for m in pattern(item).finditer(zh)
    ]
    assert not hits, f"write {row['chinese']!r} ({row['english'][0]}), see docs/glossary.md:\n" + "\n".join(hits)


@pytest.mark.parametrize("row", [r for r in ROWS if r["reserved"]], ids=lambda r: r["english"][0])
def test_reserved_terms_translate_their_concept_only(row):
    # a longer term with a row of its own (验证集 holds 验证) answers for itself, not for the shorter one
    longer = [r["chinese"] for r in ROWS if row["chinese"] in r["chinese"] != row["chinese"]]

    def uses(zh: str) -> bool:
        for term in longer:
            zh = zh.replace(term, "")
        return row["chinese"] in zh

    stray = [
        f"{where}: {zh[:60]!r}"
        for where, zh, en in TEXTS
        if uses(zh) and not any(form in en.lower() for form in row["english"])
    ]
    assert not stray, (
        f"{row['chinese']!r} is reserved for {row['english'][0]!r}, but these English twins "
        "never say so:\n" + "\n".join(stray)
    )


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["english"][0])
def test_every_glossary_term_is_used(row):
    if row["chinese"] == "第 NN 课":
        assert any(re.search(r"第 \d\d 课", zh) for _, zh, _ in TEXTS)
    else:
        assert any(row["chinese"] in zh for _, zh, _ in TEXTS), f"{row['chinese']!r} is never used: drop the row?"


def test_notebook_references_read_di_nn_ke():
    """Every mention of another notebook by number is '第 NN 课' (two digits, spaces around)."""
    loose = [
        f"{where}: {m.group(0)!r}"
        for where, zh, _ in TEXTS
        for m in re.finditer(r"第\s*\d+\s*课", zh)
        if not re.fullmatch(r"第 \d\d 课", m.group(0))
    ]
    assert not loose, "\n".join(loose)


def test_layers_and_heads_are_numbered_apart():
    """A layer is 第 N 层, a head N 号头 (docs/glossary.md): '第 0 个头' or '0 号层' would read like the other."""
    number = r"(?:\d+|`[^`]+`)"
    wrong = re.compile(rf"第 ?{number} ?个?头|{number} ?号层|第 ?{number} ?个层")
    loose = [f"{where}: {m.group(0)!r}" for where, zh, _ in TEXTS for m in wrong.finditer(zh)]
    assert not loose, "write 第 N 层 for a layer and N 号头 for a head:\n" + "\n".join(loose)
    assert any(re.search(r"\d 号头", zh) for _, zh, _ in TEXTS)


def test_dropout_mask_never_borrows_the_causal_masks_word():
    """Dropout's random keep/drop pattern is 丢弃掩码; 遮蔽 stays with the causal and padding masks."""
    causal = re.compile(r"(因果|填充|加性)遮蔽|遮蔽矩阵")
    other_mask = re.compile(r"causal|padding|future|-inf|−inf|hid")  # the English is (also) about hiding
    stray = [
        f"{where}: {zh[max(0, m.start() - 15) : m.end() + 15]!r}"
        for where, zh, en in TEXTS
        if "dropout" in en.lower() and not other_mask.search(en.lower())
        for m in re.finditer("遮蔽", causal.sub("", zh))
    ]
    assert not stray, "write 丢弃掩码 for dropout's mask (docs/glossary.md):\n" + "\n".join(stray)


@pytest.mark.parametrize("row", [r for r in ROWS if r["never"]], ids=lambda r: r["english"][0])
def test_library_messages_avoid_forbidden_variants(row):
    """The checkers and explorers print Chinese into the zh notebooks: the same words apply to them."""
    hits = [
        f"{path.relative_to(ROOT)}: {m.group(0)!r}"
        for path in sorted((ROOT / "llm_lab").rglob("*.py"))
        for item in row["never"]
        for m in pattern(item).finditer(path.read_text(encoding="utf-8"))
    ]
    assert not hits, f"write {row['chinese']!r} ({row['english'][0]}):\n" + "\n".join(hits)
