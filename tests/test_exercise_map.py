"""docs/exercises.md (and its Chinese twin) lists every exercise item of the sources, as the sources have it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]_*.exercises.nbsrc"))
PAGES = {"en": ROOT / "docs" / "exercises.md", "zh": ROOT / "docs" / "exercises.zh-CN.md"}
LEVELS = {"en": {"easy": "easy", "medium": "medium", "harder": "harder"},
          "zh": {"easy": "简单", "medium": "中等", "harder": "较难"}}
AUTO = {"en": "auto", "zh": "自动"}
TRANSFER = {"en": ("yes", "practice"), "zh": ("是", "巩固")}


def source_items(src: Path) -> list[tuple[int, str, bool]]:
    """(number, difficulty, autograded) of each exercise: autograded when its part of the source has a checker."""
    text = src.read_text(encoding="utf-8")
    parts = re.split(r"(?m)^%% md\n(?=### Exercise \d+ · )", text)[1:]
    items = []
    for part in parts:
        number, level = re.match(r"### Exercise (\d+) · .*\((easy|medium|harder)\)\s*$", part, re.M).groups()
        items.append((int(number), level, "%% code tags=checker" in part))
    return items


def page_rows(lang: str) -> dict[str, list[list[str]]]:
    """Per notebook (its two digits), the cells of each item row of the page."""
    rows, notebook = {}, None
    for line in PAGES[lang].read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\d\d) · ", line)
        if heading:
            notebook = heading[1]
            rows[notebook] = []
        elif notebook and re.match(r"\| \d+ \|", line):
            rows[notebook].append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


@pytest.mark.parametrize("lang", PAGES)
def test_the_map_lists_every_item_with_its_difficulty_and_grading(lang):
    rows = page_rows(lang)
    assert set(rows) == {src.name[:2] for src in SOURCES}
    for src in SOURCES:
        want = source_items(src)
        got = rows[src.name[:2]]
        assert [int(r[0]) for r in got] == [n for n, _, _ in want], (lang, src.name)
        for row, (number, level, auto) in zip(got, want, strict=True):
            _, _, difficulty, graded, transfer, _ = row
            assert difficulty == LEVELS[lang][level], (lang, src.name, number)
            assert graded.startswith(AUTO[lang]) == auto, (lang, src.name, number, graded)
            assert transfer in TRANSFER[lang], (lang, src.name, number, transfer)


@pytest.mark.parametrize("lang", PAGES)
def test_the_totals_are_the_rows_and_two_thirds_transfer(lang):
    rows = [r for items in page_rows(lang).values() for r in items]
    transfer = sum(r[4] == TRANSFER[lang][0] for r in rows)
    text = PAGES[lang].read_text(encoding="utf-8")
    last_row = [line for line in text.splitlines() if line.startswith("| ")][-1]
    assert [c.strip() for c in last_row.strip("|").split("|")][1:] == [str(len(rows)), str(transfer),
                                                                      str(len(rows) - transfer)]
    assert f"{round(100 * transfer / len(rows))}" in text.split(last_row, 1)[1]
    assert 3 * transfer >= 2 * len(rows)


def test_the_two_pages_agree():
    en, zh = page_rows("en"), page_rows("zh")
    assert {nb: [(r[0], TRANSFER["en"].index(r[4])) for r in rows] for nb, rows in en.items()} == \
        {nb: [(r[0], TRANSFER["zh"].index(r[4])) for r in rows] for nb, rows in zh.items()}
