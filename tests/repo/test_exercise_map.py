"""docs/exercises.md (and its Chinese twin) lists every exercise item of the sources, as the sources have it.

Each notebook's table is read by its header names, not by column positions. A table with the importance and
minutes columns must repeat the cost line of each exercise of the source
(``*Importance ★★☆ · about 10 minutes · transfer*`` under the heading, ``*重要性 ★★☆ · 约 10 分钟 · 迁移（transfer）*``
under the Chinese one), and the cost line's kind (transfer or practice) is the table's "transfer?" column.
"""

import re
import sys
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
KIND_OF_MARK = ("transfer", "practice")  # a "transfer?" mark, by its index in TRANSFER
# the header of a notebook's table, per language: its words -> the name the tests use
COLUMNS = {
    "en": {
        "#": "number",
        "kind": "kind",
        "difficulty": "difficulty",
        "importance": "importance",
        "minutes": "minutes",
        "graded": "graded",
        "transfer?": "transfer",
        "what it transfers": "what",
    },
    "zh": {
        "#": "number",
        "题型": "kind",
        "难度": "difficulty",
        "重要性": "importance",
        "分钟": "minutes",
        "评分": "graded",
        "迁移？": "transfer",
        "迁移了什么": "what",
    },
}
REQUIRED = ("number", "kind", "difficulty", "graded", "transfer", "what")
COSTS = ("importance", "minutes")
# the notebooks whose every exercise must carry a cost line (the others: checked where they have one)
COSTED = ("00", "01", "02")
# the kind a cost line ends with, per language: its words -> transfer or practice (a line without one: kind None)
KINDS = {
    "en": {"transfer": "transfer", "practice": "practice"},
    "zh": {"迁移（transfer）": "transfer", "巩固（practice）": "practice"},
}
COST_LINE = {
    "en": re.compile(r"\*Importance (?P<stars>[★☆]+) · about (?P<minutes>\d+) minutes(?: · (?P<kind>[^*]+))?\*"),
    "zh": re.compile(r"\*重要性 (?P<stars>[★☆]+) · 约 (?P<minutes>\d+) 分钟(?: · (?P<kind>[^*]+))?\*"),
}
# the notebooks whose cost lines carry no kind yet (08's sources are being edited elsewhere); checked to have none
UNLABELLED = ("08",)
# a statement that calls its exercise practice (checked to be labelled so)
SAYS_PRACTICE = {"en": r"This (?:one )?is practice", "zh": r"这道题是巩固"}
HEADING = {
    "en": r"### Exercise (\d+) · .*\((easy|medium|harder)\)",
    "zh": r"### 练习 (\d+) · .*（(简单|中等|较难)）",
}


def _cost(block: str, lang: str, where: str) -> tuple[str, int, str | None] | None:
    """The (stars, minutes, kind) of one exercise's heading cell, or None when it has no cost line; kind is
    "transfer", "practice", or None where the line names none.

    A cost line sits right after the heading, one blank line between, and a blank line after it."""
    lines = block.split("\n")
    found = [i for i, line in enumerate(lines) if COST_LINE[lang].search(line)]
    if not found:
        return None
    assert found == [2] and lines[1] == "" and lines[3] == "", (where, "the cost line must be line 3, between blanks")
    match = COST_LINE[lang].fullmatch(lines[2])
    assert match, (where, lines[2])
    stars = match["stars"]
    assert len(stars) == 3 and re.fullmatch(r"★{1,3}☆{0,2}", stars), (where, "1 to 3 filled stars out of 3", stars)
    kind = match["kind"]
    assert kind is None or kind in KINDS[lang], (where, "a kind the cost line may not name", kind)
    return stars, int(match["minutes"]), kind and KINDS[lang][kind]


def source_items(src: Path) -> list[tuple[int, str, bool]]:
    """(number, difficulty, autograded) of each exercise: autograded when its part of the source has a checker."""
    text = src.read_text(encoding="utf-8")
    parts = re.split(r"(?m)^%% md\n(?=### Exercise \d+ · )", text)[1:]
    items = []
    for part in parts:
        number, level = re.match(r"### Exercise (\d+) · .*\((easy|medium|harder)\)\s*$", part, re.M).groups()
        items.append((int(number), level, "%% code tags=checker" in part))
    return items


def source_cost_lines(src: Path) -> dict[int, tuple[str, int, str | None] | None]:
    """Per exercise number, its cost line (stars, minutes, kind), the same in both languages; None where it has
    none. A statement that says its exercise is practice must be labelled practice, in each language."""
    text = src.read_text(encoding="utf-8")
    costs = {}
    for lang, marker in (("en", "%% md\n"), ("zh", "%% md zh\n")):
        blocks = re.split(r"(?m)^%% ", text)
        for block in blocks:
            block = "%% " + block
            if not block.startswith(marker):
                continue
            body = block[len(marker) :]
            heading = re.match(HEADING[lang] + r"\s*$", body.split("\n", 1)[0])
            if not heading:
                continue
            number = int(heading[1])
            cost = _cost(body, lang, (src.name, lang, number))
            if re.search(SAYS_PRACTICE[lang], body):
                assert cost and cost[2] == "practice", (src.name, lang, number, "the text says practice", cost)
            if lang == "en":
                costs[number] = cost
            else:
                assert costs.get(number, "missing") == cost, (src.name, number, "en and zh cost lines differ", cost)
    return costs


def source_costs(src: Path) -> dict[int, tuple[str, int] | None]:
    """Per exercise number, its cost (stars, minutes); None where it has none."""
    return {number: line and line[:2] for number, line in source_cost_lines(src).items()}


def source_kinds(src: Path) -> dict[int, str | None]:
    """Per exercise number, the kind its cost line names (transfer or practice); None where it names none."""
    return {number: line and line[2] for number, line in source_cost_lines(src).items()}


def page_rows(lang: str) -> dict[str, list[dict[str, str]]]:
    """Per notebook (its two digits), each item row of the page as {column name: cell}, read by the header."""
    rows, notebook, header = {}, None, None
    for line in PAGES[lang].read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\d\d) · ", line)
        if heading:
            notebook, header = heading[1], None
            rows[notebook] = []
            continue
        if not notebook or not line.startswith("| "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == "#":
            unknown = [c for c in cells if c not in COLUMNS[lang]]
            assert not unknown, (lang, notebook, "unknown columns", unknown)
            header = [COLUMNS[lang][c] for c in cells]
            assert all(name in header for name in REQUIRED), (lang, notebook, header)
            assert (COSTS[0] in header) == (COSTS[1] in header), (lang, notebook, "importance and minutes go together")
        elif re.match(r"\d+$", cells[0]):
            assert header, (lang, notebook, "an item row before the table's header")
            assert len(cells) == len(header), (lang, notebook, cells)
            rows[notebook].append(dict(zip(header, cells, strict=True)))
    return rows


@pytest.mark.parametrize("lang", PAGES)
def test_the_map_lists_every_item_with_its_difficulty_and_grading(lang):
    rows = page_rows(lang)
    assert set(rows) == {src.name[:2] for src in SOURCES}
    for src in SOURCES:
        want = source_items(src)
        got = rows[src.name[:2]]
        assert [int(r["number"]) for r in got] == [n for n, _, _ in want], (lang, src.name)
        for row, (number, level, auto) in zip(got, want, strict=True):
            assert row["difficulty"] == LEVELS[lang][level], (lang, src.name, number)
            assert row["graded"].startswith(AUTO[lang]) == auto, (lang, src.name, number, row["graded"])
            assert row["transfer"] in TRANSFER[lang], (lang, src.name, number, row["transfer"])


def test_every_cost_line_names_its_kind():
    """Every exercise's cost line ends with its kind, in both languages; the UNLABELLED notebooks' lines name none
    (labelled, they leave UNLABELLED)."""
    for src in SOURCES:
        kinds = source_kinds(src)
        assert kinds, (src.name, "no exercise found")
        if src.name[:2] in UNLABELLED:
            assert set(kinds.values()) == {None}, (src.name, "now labelled: take it out of UNLABELLED", kinds)
        else:
            assert None not in kinds.values(), (src.name, "exercises whose cost line names no kind", kinds)


@pytest.mark.parametrize("lang", PAGES)
def test_the_notebooks_label_each_exercise_as_the_map_marks_it(lang):
    """The kind on each exercise's cost line is the map's "transfer?" column for that item."""
    rows = page_rows(lang)
    for src in SOURCES:
        if src.name[:2] in UNLABELLED:
            continue
        marked = {int(r["number"]): KIND_OF_MARK[TRANSFER[lang].index(r["transfer"])] for r in rows[src.name[:2]]}
        labelled = source_kinds(src)
        differ = {n: (labelled.get(n), marked.get(n)) for n in labelled.keys() | marked.keys()}
        differ = {n: pair for n, pair in differ.items() if pair[0] != pair[1]}
        assert not differ, (lang, src.name, "exercise: (notebook's kind, map's kind)", differ)


def test_the_kind_checks_can_fail(tmp_path, monkeypatch):
    """Each kind check fails on a source or a page that disagrees or lacks a kind; the unchanged files pass."""
    by_number = {src.name[:2]: src for src in SOURCES}
    labelled, prose = by_number["00"], by_number["03"]
    practice_says = next(n for n, k in source_kinds(prose).items() if k == "practice")  # 03 Ex 2 says so
    practice_cost = source_costs(prose)[practice_says][1]
    en, zh = (" · transfer*", " · practice*"), (" · 迁移（transfer）*", " · 巩固（practice）*")

    def mapped(lang):
        return lambda: test_the_notebooks_label_each_exercise_as_the_map_marks_it(lang)

    def every():
        test_every_cost_line_names_its_kind()

    def one(src):
        return lambda: source_cost_lines(next(s for s in sys.modules[__name__].SOURCES if s.name == src.name))

    flip_to_transfer = [
        (f"about {practice_cost} minutes{en[1]}", f"about {practice_cost} minutes{en[0]}"),
        (f"约 {practice_cost} 分钟{zh[1]}", f"约 {practice_cost} 分钟{zh[0]}"),
    ]
    label_first = [("minutes*", "minutes" + en[0]), ("分钟*", "分钟" + zh[0])]  # its first exercise, both languages
    cases = [
        ("a notebook's kind flipped in both languages", labelled, [(en[0], en[1]), (zh[0], zh[1])], mapped("en")),
        ("the same, against the zh page", labelled, [(en[0], en[1]), (zh[0], zh[1])], mapped("zh")),
        ("the en page's mark flipped", PAGES["en"], [("| by hand | yes |", "| by hand | practice |")], mapped("en")),
        ("the zh page's mark flipped", PAGES["zh"], [("| 老师批改 | 是 |", "| 老师批改 | 巩固 |")], mapped("zh")),
        ("a cost line without its kind (both languages)", labelled, [(en[0], "*"), (zh[0], "*")], every),
        ("the zh kind differs from the en one", labelled, [(zh[0], zh[1])], one(labelled)),
        ("a kind the line may not name", labelled, [(en[0], " · transfers*")], one(labelled)),
        ("the text says practice, the label transfer", prose, flip_to_transfer, one(prose)),
    ]
    if UNLABELLED:
        cases.append(("an UNLABELLED notebook labelled", by_number[UNLABELLED[0]], label_first, every))
    _each_fails(monkeypatch, tmp_path, cases)
    mapped("en")(), mapped("zh")(), every(), one(prose)()


def test_the_costed_notebooks_give_every_exercise_a_cost_line():
    sources = {src.name[:2]: src for src in SOURCES}
    for notebook in COSTED:
        costs = source_costs(sources[notebook])
        assert costs and all(costs.values()), (notebook, "exercises without a cost line", costs)


@pytest.mark.parametrize("lang", PAGES)
def test_the_importance_and_minutes_columns_repeat_the_sources(lang):
    rows = page_rows(lang)
    for src in SOURCES:
        costs = source_costs(src)
        for row in rows[src.name[:2]]:
            if "importance" not in row:
                continue
            cost = costs.get(int(row["number"]))
            assert cost, (lang, src.name, row["number"], "the table gives a cost the source does not")
            assert (row["importance"], int(row["minutes"])) == cost, (lang, src.name, row["number"], cost)


def _each_fails(monkeypatch, tmp_path, cases) -> None:
    """Each case, (what, path, replacements, check): ``check`` fails on ``path`` with the replacements made."""
    for what, path, replacements, check in cases:
        with monkeypatch.context() as patch:
            _with_changed(patch, tmp_path, path, replacements)
            with pytest.raises(AssertionError):
                check()
                print("did not fail:", what)


def _with_changed(monkeypatch, tmp_path, path: Path, replacements) -> None:
    """Point the tests at a copy of ``path`` (a source or a page) with each (old, new) replaced once, in turn."""
    text = path.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, (path.name, old)
        text = text.replace(old, new, 1)
    changed = tmp_path / path.name
    changed.write_text(text, encoding="utf-8")
    if path in SOURCES:
        monkeypatch.setattr(sys.modules[__name__], "SOURCES", [changed if s == path else s for s in SOURCES])
    else:
        lang = next(lang for lang, page in PAGES.items() if page == path)
        monkeypatch.setitem(PAGES, lang, changed)


def test_the_cost_checks_can_fail(tmp_path, monkeypatch):
    """Each cost check fails on a page or a source lacking what it checks; the unchanged files pass them all."""
    source = next(src for src in SOURCES if src.name.startswith("00"))
    row = next(r for r in page_rows("en")["00"] if r["number"] == "1")
    row_text = f"| {row['importance']} | {row['minutes']} |"
    other_stars = "★☆☆" if row["importance"] != "★☆☆" else "★★★"
    minutes = f"{row['minutes']} minutes ·", f"{row['minutes']} 分钟 ·"

    def table():
        test_the_importance_and_minutes_columns_repeat_the_sources("en")

    def costed():
        test_the_costed_notebooks_give_every_exercise_a_cost_line()

    def one_source():
        source_costs(next(s for s in sys.modules[__name__].SOURCES if s.name == source.name))

    cases = [
        (
            "the table's minutes differ",
            PAGES["en"],
            [(row_text, f"| {row['importance']} | {int(row['minutes']) + 5} |")],
            table,
        ),
        ("the table's stars differ", PAGES["en"], [(row_text, f"| {other_stars} | {row['minutes']} |")], table),
        ("a header word the page does not know", PAGES["en"], [("| importance |", "| weight |")], table),
        ("the source's minutes differ (both languages)", source, [(m, "99" + m) for m in minutes], table),
        ("the zh cost line differs from the en one", source, [(minutes[1], "99" + minutes[1])], one_source),
        ("a cost line not after a blank line", source, [("\n\n*Importance", "\n*Importance")], one_source),
        ("four stars", source, [("*Importance ★", "*Importance ★★★★")], one_source),
        ("an exercise without a cost line", source, [("*Importance", "*Reading"), ("*重要性", "*阅读")], costed),
    ]
    _each_fails(monkeypatch, tmp_path, cases)
    table(), costed(), one_source()


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
    transfer = sum(r["transfer"] == TRANSFER[lang][0] for r in rows)
    return [str(len(rows)), str(transfer), str(len(rows) - transfer)]


@pytest.mark.parametrize("lang", PAGES)
def test_the_totals_are_the_rows_counted(lang):
    """Every number of the totals is recounted from the item rows: per kind (by hand, autograded), in all, and the
    fraction sentence; a row whose transfer column changes must change the totals with it."""
    rows = [r for items in page_rows(lang).values() for r in items]
    by_hand = [r for r in rows if not r["graded"].startswith(AUTO[lang])]
    auto = [r for r in rows if r["graded"].startswith(AUTO[lang])]
    table, (transfer, items, percent) = stated_totals(lang)
    assert [r[0].split("（")[0].split(" (")[0] for r in table] == list(TOTAL_ROWS[lang]), table
    assert [r[1:] for r in table] == [counted(by_hand, lang), counted(auto, lang), counted(rows, lang)], (lang, table)
    want_transfer = sum(r["transfer"] == TRANSFER[lang][0] for r in rows)
    assert (transfer, items) == (want_transfer, len(rows)), (lang, transfer, items)
    assert percent == round(100 * want_transfer / len(rows)), (lang, percent)


def test_the_totals_check_can_fail(tmp_path, monkeypatch):
    """One item row turned from transfer to practice, the totals left as they were: the check above fails."""
    for lang, page in PAGES.items():
        text = page.read_text(encoding="utf-8")
        yes = f"| {TRANSFER[lang][0]} |"
        changed = tmp_path / page.name
        changed.write_text(text.replace(yes, f"| {TRANSFER[lang][1]} |", 1), encoding="utf-8")
        monkeypatch.setitem(PAGES, lang, changed)
        with pytest.raises(AssertionError):
            test_the_totals_are_the_rows_counted(lang)


def test_the_two_pages_agree():
    en, zh = page_rows("en"), page_rows("zh")

    def kept(rows, lang):
        return [(r["number"], TRANSFER[lang].index(r["transfer"]), r.get("importance"), r.get("minutes")) for r in rows]

    assert {nb: kept(rows, "en") for nb, rows in en.items()} == {nb: kept(rows, "zh") for nb, rows in zh.items()}
