"""Languages are data: one list, and every user-facing string in every one of them.

``tools.course.LANGS`` is the course's list (notebooks, copies, the site); ``llm_lab.exercises``' ``LANGUAGES`` the
checkers' (the package cannot import the tools). Every per-language table in the code, a dict literal whose keys
are language codes (``{"en": ..., "zh": ...}``: messages, notes, stubs, summaries), must have exactly those keys:
adding a language, the failures list every string still to translate.
"""

import ast
from pathlib import Path

import pytest

from llm_lab.exercises import _messages
from tools import course

ROOT = Path(__file__).resolve().parent.parent
CODE = sorted(p for top in ("llm_lab", "tools") for p in (ROOT / top).rglob("*.py"))
KNOWN_CODES = {"en", "zh", "ja", "ko", "fr", "de", "es", "pt", "ru", "it", "vi"}


def test_one_language_list():
    assert tuple(_messages.LANGUAGES) == tuple(course.LANGS)
    assert course.LANGS[0] == "en", "English first: the sources are written in it, the others are twins"


def language_tables(path: Path):
    """(line, keys) of every dict literal keyed by language codes, English among them."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict) and node.keys and all(isinstance(k, ast.Constant) for k in node.keys):
            keys = {k.value for k in node.keys}
            if "en" in keys and keys <= KNOWN_CODES:
                yield node.lineno, keys


@pytest.mark.parametrize("path", CODE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_table_speaks_every_language(path):
    wrong = [f"line {line}: {sorted(keys)}" for line, keys in language_tables(path) if keys != set(course.LANGS)]
    assert not wrong, f"tables without exactly {list(course.LANGS)}: " + "; ".join(wrong)


def test_the_tables_are_found():
    """The scan sees the tables it guards (so an empty pass is not a vacuous one)."""
    found = {p.relative_to(ROOT).as_posix(): len(list(language_tables(p))) for p in CODE}
    assert found["llm_lab/exercises/_messages.py"] > 50 and found["tools/course.py"] >= 5
    assert sum(found.values()) > 150
