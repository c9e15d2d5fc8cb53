"""The Makefile describes itself: ``make help`` prints every target's ``## description``, and one ``.PHONY`` names them.

``make help`` is generated from the Makefile's own rule lines (``target: deps ## text``, under ``##@`` headings), so
a target is listed the day it is written, provided it has its description; this checks that each has one, that
``make help`` really prints each, and that the one ``.PHONY`` line names exactly the targets (a forgotten name is a
target that stops running once a file of that name exists).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from _make import make

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"
# A rule line: a name, one colon (not := or ::=), prerequisites, maybe a ## description.
RULE = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?![:=])([^#\n]*)(?:##\s*(.*))?$", re.M)
# The one file rule: the hub's proxy, installed by npm (a target made when its lock file is newer).
FILE_RULES = {"$(HUB_PROXY)"}

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def makefile() -> str:
    return MAKEFILE.read_text(encoding="utf-8")


def rules() -> dict[str, str | None]:
    """Every command target -> its ``##`` description (None when it has none)."""
    return {m[1]: m[3] for m in RULE.finditer(makefile()) if m[1] != ".PHONY"}


def logical_lines(text: str) -> list[str]:
    return text.replace("\\\n", " ").splitlines()


def test_the_rules_are_found():
    found = rules()
    assert {"help", "test", "lint", "unit", "test-hub", "grade", "hub", "clean"} <= set(found)
    assert len(found) > 30


def test_every_target_has_a_description():
    missing = sorted(name for name, text in rules().items() if not (text or "").strip())
    assert not missing, f"targets without a `## description` on their rule line: {missing}"


def test_the_only_other_rules_are_the_known_file_rules():
    """A rule whose target is not a plain name (a variable, a path) is a file; the only one is the hub's proxy."""
    other = {
        line.split(":", 1)[0].strip()
        for line in logical_lines(makefile())
        if line
        and not line.startswith(("\t", "#", " "))
        and re.match(r"^[^=]*[^:=]:(?![:=])", line)
        and not RULE.match(line)
    }
    assert other == FILE_RULES


def test_make_help_lists_every_target():
    out = make("-s", "help")
    listed = re.findall(r"^  (\S+) +(.+)$", out, re.M)
    assert sorted(name for name, _ in listed) == sorted(rules()), out
    assert dict(listed) == {name: text.strip() for name, text in rules().items()}  # the description as written
    assert out.splitlines()[0].startswith("llm-lab: make lab")


def test_make_without_a_target_prints_help():
    """A bare `make` installs or builds nothing: help is the first rule."""
    dry = make("-n")
    assert "awk" in dry and "pip" not in dry and "tools.envs" not in dry


def test_one_phony_line_naming_every_target():
    lines = [line for line in logical_lines(makefile()) if line.startswith(".PHONY")]
    assert len(lines) == 1, f"{len(lines)} .PHONY lines; keep one: {lines}"
    assert makefile().count(".PHONY") == 1
    names = lines[0].split(":", 1)[1].split()
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    assert set(names) == set(rules()), {
        "not phony": sorted(set(rules()) - set(names)),
        "phony but no rule": sorted(set(names) - set(rules())),
    }
