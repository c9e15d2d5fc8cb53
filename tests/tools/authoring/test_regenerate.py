"""``make regenerate`` (tools/authoring/regenerate.py): a stale derived file is named and regenerated, for each kind
of derived file; that the repository's are current is tests/repo/test_derived_files.py."""

from __future__ import annotations

import re
import shutil

import pytest

from tools.authoring import regenerate

ROOT = regenerate.ROOT
PAGES = (*regenerate.MAP, *regenerate.CHECKS)


def copy_of(tmp_path, names):
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


# Each plant: a derived file, a pattern in it and what its first match becomes (the file edited by hand, or its
# source changed without make regenerate).
PLANTS = [
    ("llm_lab/exercises/checkers.py", r"def check_", "def check_old_"),  # a record renamed, checkers.py not
    ("README.md", r"\| \[", "| [Old] ["),  # a notebook retitled, the README table not
    ("docs/exercises.md", r"\| all \| (\d+) \|", "| all | 1000 |"),  # an item added, the totals not recounted
    ("docs/exercises.zh-CN.md", r"\*\*迁移比例：", "**迁移比例：1"),
    ("docs/exercises.md", r"\| auto \(\d+\) \|", "| auto (9) |"),  # a checker's points changed, the map not
    ("docs/exercises.zh-CN.md", r"\| 自动（\d+） \|", "| 自动（9） |"),
    ("docs/checks.md", r"\d+ pt, `check_", "9 pt, `check_"),  # the same, on the checks page
    ("docs/checks.zh-CN.md", r"\d+ 分，`check_", "9 分，`check_"),
]


@pytest.mark.parametrize(("name", "pattern", "new"), PLANTS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(PLANTS)])
def test_a_stale_derived_file_is_named(tmp_path, name, pattern, new):
    root = copy_of(tmp_path, regenerate.derivations())
    text = (root / name).read_text(encoding="utf-8")
    planted = re.sub(pattern, lambda _: new, text, count=1)
    assert planted != text, f"{name} holds no {pattern!r}"
    (root / name).write_text(planted, encoding="utf-8")
    found = regenerate.stale(root)
    assert list(found) == [name]
    assert found[name] == text  # and regenerating gives back the current file


def test_the_points_follow_the_records(monkeypatch):
    """A checker worth one point more: its row in the checks page and its item in the map say so after
    regenerating, and the other items keep theirs."""
    name = "window_weights"  # 00 Exercise 2
    before = {page: regenerate.derivations()[page]((ROOT / page).read_text(encoding="utf-8")) for page in PAGES}
    points = regenerate._points(name)
    monkeypatch.setattr(regenerate, "_points", lambda n, p=regenerate._points: p(n) + (n == name))
    after = {page: regenerate.derivations()[page](before[page]) for page in PAGES}
    assert f"{points + 1} pt, `check_{name}`" in after["docs/checks.md"]
    assert f"{points + 1} 分，`check_{name}`" in after["docs/checks.zh-CN.md"]
    for page in ("docs/exercises.md", "docs/exercises.zh-CN.md"):
        section = after[page].split("\n## 00 · ", 1)[1].split("\n## ", 1)[0]
        changed = [(b, a) for b, a in zip(before[page].splitlines(), after[page].splitlines(), strict=True) if a != b]
        assert len(changed) == 1 and changed[0][1] in section and changed[0][1].startswith("| 2 |"), changed
        assert f"({points + 1})" in changed[0][1] or f"（{points + 1}）" in changed[0][1], changed


def test_the_totals_follow_the_rows():
    """One item row turned from transfer to practice: the recount moves one item from transfer to practice."""
    words = regenerate.MAP["docs/exercises.md"]
    text = (ROOT / "docs/exercises.md").read_text(encoding="utf-8")
    changed = text.replace("| yes |", "| practice |", 1)
    before, after = (regenerate.exercise_map(t, words).split(words["totals"])[1] for t in (text, changed))
    row = next(line for line in before.splitlines() if line.startswith("| all |"))
    items, transfer, practice = (int(c) for c in row.strip("|").split("|")[1:])
    assert f"| all | {items} | {transfer - 1} | {practice + 1} |" in after
    assert f"Transfer fraction: {transfer - 1} of {items} items" in after


def test_make_regenerate_runs_it_and_executes_only_when_asked():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = text.split("\nregenerate:", 1)[1].split("\n\n", 1)[0]
    assert "tools.authoring.regenerate" in rule and "$(if $(filter 1,$(EXECUTE)),--execute" in rule
