"""docs/exercises.md (and its Chinese twin) lists every exercise item of the sources, as the sources have it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]_*.exercises.nbsrc"))
PAGES = {"en": ROOT / "docs" / "exercises.md", "zh": ROOT / "docs" / "exercises.zh-CN.md"}
LEVELS = {
    "en": {"easy": "easy", "medium": "medium", "harder": "harder"},
    "zh": {"easy": "简单", "medium": "中等", "harder": "较难"},
}
AUTO = {"en": "auto", "zh": "自动"}
TRANSFER = {"en": ("yes", "practice"), "zh": ("是", "巩固")}


COST = re.compile(r"^\*Importance ([★☆]{3}) · about (\d+) minutes\*$", re.M)


def source_items(src: Path) -> list[tuple[int, str, bool, tuple[str, str] | None]]:
    """(number, difficulty, autograded, cost) of each exercise: autograded when its part of the source has a
    checker; cost the (stars, minutes) of its cost line, None where it has none."""
    text = src.read_text(encoding="utf-8")
    parts = re.split(r"(?m)^%% md\n(?=### Exercise \d+ · )", text)[1:]
    items = []
    for part in parts:
        number, level = re.match(r"### Exercise (\d+) · .*\((easy|medium|harder)\)\s*$", part, re.M).groups()
        cost = COST.search(part.split("%% md zh", 1)[0])
        items.append((int(number), level, "%% code tags=checker" in part, cost.groups() if cost else None))
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
        assert [int(r[0]) for r in got] == [n for n, *_ in want], (lang, src.name)
        for row, (number, level, auto, cost) in zip(got, want, strict=True):
            difficulty, (graded, transfer, _) = row[2], row[-3:]  # a table with costs has 8 columns, one without 6
            if len(row) == 8:  # importance and minutes, as the source's cost line has them
                assert cost is not None and tuple(row[3:5]) == cost, (lang, src.name, number, row[3:5], cost)
            assert difficulty == LEVELS[lang][level], (lang, src.name, number)
            assert graded.startswith(AUTO[lang]) == auto, (lang, src.name, number, graded)
            assert transfer in TRANSFER[lang], (lang, src.name, number, transfer)


TOTALS = {"en": "## Totals", "zh": "## 合计"}
# the totals table's rows, in order: the by-hand items, the autograded ones, all of them
TOTAL_ROWS = {
    "en": ("Predict / Explain", "Implement / Find the bug", "all"),
    "zh": ("预测 / 解释", "实现 / 找错误", "全部"),
}
FRACTION = {
    "en": r"\*\*Transfer fraction: (\d+) of (\d+) items, (\d+) %\.\*\*",
    "zh": r"\*\*迁移比例：(?P<n>\d+) 道题中 (?P<t>\d+) 道，(?P<pct>\d+)%。\*\*",
}


def stated_totals(lang: str) -> tuple[list[list[str]], tuple[int, int, int]]:
    """The totals section's table rows (cells) and its fraction sentence as (transfer, items, percent)."""
    section = PAGES[lang].read_text(encoding="utf-8").split(TOTALS[lang], 1)[1]
    table = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| ---")
    ][1:]  # without the header
    found = re.search(FRACTION[lang], section)
    assert found, (lang, "no fraction sentence")
    if lang == "zh":
        fraction = (int(found["t"]), int(found["n"]), int(found["pct"]))
    else:
        fraction = tuple(int(g) for g in found.groups())
    return table, fraction


def counted(rows: list[list[str]], lang: str) -> list[str]:
    """items, transfer, practice of these rows, as the table writes them."""
    transfer = sum(r[-2] == TRANSFER[lang][0] for r in rows)
    return [str(len(rows)), str(transfer), str(len(rows) - transfer)]


@pytest.mark.parametrize("lang", PAGES)
def test_the_totals_are_the_rows_counted_and_two_thirds_transfer(lang):
    """Every number of the totals is recounted from the item rows: per kind (by hand, autograded), in all, and the
    fraction sentence; a row whose transfer column changes must change the totals with it."""
    rows = [r for items in page_rows(lang).values() for r in items]
    by_hand = [r for r in rows if not r[-3].startswith(AUTO[lang])]
    auto = [r for r in rows if r[-3].startswith(AUTO[lang])]
    table, (transfer, items, percent) = stated_totals(lang)
    assert [r[0].split("（")[0].split(" (")[0] for r in table] == list(TOTAL_ROWS[lang]), table
    assert [r[1:] for r in table] == [counted(by_hand, lang), counted(auto, lang), counted(rows, lang)], (lang, table)
    want_transfer = sum(r[-2] == TRANSFER[lang][0] for r in rows)
    assert (transfer, items) == (want_transfer, len(rows)), (lang, transfer, items)
    assert percent == round(100 * want_transfer / len(rows)), (lang, percent)
    assert 3 * want_transfer >= 2 * len(rows)


def test_the_totals_check_can_fail(tmp_path, monkeypatch):
    """One item row turned from transfer to practice, the totals left as they were: the check above fails."""
    for lang, page in PAGES.items():
        text = page.read_text(encoding="utf-8")
        yes = f"| {TRANSFER[lang][0]} |"
        changed = tmp_path / page.name
        changed.write_text(text.replace(yes, f"| {TRANSFER[lang][1]} |", 1), encoding="utf-8")
        monkeypatch.setitem(PAGES, lang, changed)
        with pytest.raises(AssertionError):
            test_the_totals_are_the_rows_counted_and_two_thirds_transfer(lang)


def test_the_two_pages_agree():
    en, zh = page_rows("en"), page_rows("zh")
    assert {nb: [(r[0], TRANSFER["en"].index(r[-2])) for r in rows] for nb, rows in en.items()} == {
        nb: [(r[0], TRANSFER["zh"].index(r[-2])) for r in rows] for nb, rows in zh.items()
    }


def test_the_cost_columns_check_can_fail(tmp_path, monkeypatch):
    """A row with importance and minutes that differ from its source's cost line: the item check fails."""
    for lang, page in PAGES.items():
        text = page.read_text(encoding="utf-8")
        found = re.search(r"(?m)^(\| \d+ \| [^|]+ \| [^|]+ \| [★☆]{3} \| )(\d+)( \|)", text)
        if found is None:  # no table with costs yet
            continue
        changed = tmp_path / page.name
        bumped = f"{found[1]}{int(found[2]) + 1}{found[3]}"
        changed.write_text(text.replace(found[0], bumped, 1), encoding="utf-8")
        monkeypatch.setitem(PAGES, lang, changed)
        with pytest.raises(AssertionError):
            test_the_map_lists_every_item_with_its_difficulty_and_grading(lang)
