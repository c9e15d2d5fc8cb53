"""``make regenerate`` (tools/authoring/regenerate.py): every derived file is current, and a stale one is named."""

from __future__ import annotations

import shutil

import pytest

from tools.authoring import regenerate

ROOT = regenerate.ROOT


def test_every_derived_file_is_current():
    assert regenerate.stale() == {}, "stale derived files: run make regenerate"


def copy_of(tmp_path, names):
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("llm_lab/exercises/checkers.py", "def check_", "def check_old_"),  # a record renamed, checkers.py not
        ("README.md", "| [", "| [Old] ["),  # a notebook retitled, the README table not
        ("docs/exercises.md", "| all | 34 |", "| all | 33 |"),  # an item added, the totals not recounted
        ("docs/exercises.zh-CN.md", "**迁移比例：", "**迁移比例：1"),
    ],
)
def test_a_stale_derived_file_is_named(tmp_path, name, old, new):
    root = copy_of(tmp_path, regenerate.derivations())
    text = (root / name).read_text(encoding="utf-8")
    if old not in text:
        pytest.skip(f"{name} no longer holds {old!r}")  # the totals change as items are added
    (root / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    found = regenerate.stale(root)
    assert list(found) == [name]
    assert found[name] == text  # and regenerating gives back the current file


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
