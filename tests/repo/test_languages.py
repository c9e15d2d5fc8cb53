"""Languages are data: one list, and every user-facing string in every one of them.

``tools.course.LANGS`` is the course's list (notebooks, copies, the site); ``llm_lab.exercises``' ``LANGUAGES`` the
checkers' (the package cannot import the tools). Every per-language table in the code, a dict literal whose keys
are language codes (``{"en": ..., "zh": ...}``: messages, notes, stubs, summaries), must have exactly those keys:
adding a language, the failures list every string still to translate. And nothing else names the languages: no
tuple, list or set of language codes, ``en|zh`` alternation, ``{en,zh}`` brace list or one language's notebook folder
outside the two lists (the code, the Makefile, CI, the hooks), and no message written in two languages at once.
tests/tools/teaching/grader/test_third_language.py grades a fake third language to show the grader needs nothing more.
"""

import ast
import re
import shutil
from pathlib import Path

import pytest
from _make import make

from llm_lab.exercises import _messages
from tools import course

ROOT = Path(__file__).resolve().parents[2]
CODE = sorted(p for top in ("llm_lab", "tools") for p in (ROOT / top).rglob("*.py"))
KNOWN_CODES = {"en", "zh", "ja", "ko", "fr", "de", "es", "pt", "ru", "it", "vi"}


def test_one_language_list():
    assert tuple(_messages.LANGUAGES) == tuple(course.LANGS)
    # the site's per-language records (its title, its switch's names, which also head the README's columns)
    assert tuple(lang.code for lang in course.site_module().LANGS) == tuple(course.LANGS)
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


# --- no language list but the two ------------------------------------------------------------------------------

# Where the languages may be spelt out: the two lists themselves (module-level assignments).
LISTS = {"tools/course.py": "LANGS", "llm_lab/exercises/_messages.py": "LANGUAGES"}
SCANNED = sorted(
    p
    for top in ("llm_lab", "tools", "benchmarks", "site", ".github/scripts")
    for p in (ROOT / top).rglob("*.py")
    if "node_modules" not in p.parts
)
_CODE = "|".join(sorted(KNOWN_CODES))
# en|zh (a regex or shell alternation), {en,zh} (a brace list), notebooks/en (one language's folder by name)
ALTERNATION = re.compile(rf"(?<![\w-])(?:{_CODE})(?:\s*\|\s*(?:{_CODE}))+(?![\w-])")
BRACES = re.compile(rf"\{{\s*(?:{_CODE})(?:\s*,\s*(?:{_CODE}))+\s*\}}")
FOLDER = re.compile(rf"\bnotebooks/(?:instructor/)?(?:{_CODE})\b")
# Text the tools run that is not Python: the Makefile, CI, the hooks, the hub's image.
TEXT = [
    ROOT / "Makefile",
    ROOT / ".ci" / "run",
    ROOT / ".pre-commit-config.yaml",
    *sorted((ROOT / ".github" / "workflows").glob("*.yml")),
    *sorted((ROOT / "tools").rglob("*.sh")),
    *sorted((ROOT / "tools").rglob("Dockerfile")),
]
# A string that joins two languages with a slash ("0 points / 0 分") says it twice instead of once per reader:
# English, " / ", then the other language's script (maybe after a number or a `code` span). A division in a code
# hint (`x / n`) is not.
BILINGUAL = re.compile(r"[A-Za-z][^/\n]* / (?:\d+ |`[^`\n]*` ?)?[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
BILINGUAL_ALLOWED: dict[str, int] = {}  # path -> how many strings may be in two languages at once (none)


def language_lists(path: Path):
    """(line, codes) of every tuple, list or set literal of two or more language codes, but the allowed list."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = {
        id(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [LISTS.get(rel(path))]
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2 and id(node) not in allowed:
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if all(isinstance(v, str) and v in KNOWN_CODES for v in values):
                yield node.lineno, values


def strings(path: Path):
    """(line, text) of every string constant, docstrings too; an f-string as one text, ``{}`` for each field."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            yield node.lineno, node.value


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", SCANNED, ids=rel)
def test_no_language_list_in_the_code(path):
    """``("en", "zh")``, ``{"en", "zh"}``, ``["en", "zh"]`` or ``en|zh`` outside the two lists: a place that a new
    language would have to be added to by hand. Iterate ``tools.course.LANGS`` (or ``LANGUAGES``) instead."""
    found = [f"line {line}: {codes}" for line, codes in language_lists(path)]
    found += [
        f"line {line}: {m[0]!r}"
        for line, text in strings(path)
        for pattern in (ALTERNATION, BRACES)
        for m in pattern.finditer(text)
    ]
    assert not found, "languages spelt out instead of read from tools.course.LANGS: " + "; ".join(found)


@pytest.mark.parametrize("path", SCANNED, ids=rel)
def test_no_string_in_two_languages_at_once(path):
    """A message is chosen in the reader's language (a table keyed by LANGS), not written in both with a slash."""
    found = [f"line {line}: {text[:80]!r}" for line, text in strings(path) if BILINGUAL.search(text)]
    assert len(found) == BILINGUAL_ALLOWED.get(rel(path), 0), "; ".join(found)


@pytest.mark.parametrize("path", [p for p in TEXT if p.is_file()], ids=rel)
def test_no_language_list_in_the_makefile_ci_or_hooks(path):
    text = path.read_text(encoding="utf-8")
    found = [m[0] for pattern in (ALTERNATION, BRACES, FOLDER) for m in pattern.finditer(text)]
    assert not found, f"{rel(path)} names languages: {found}"


def test_the_scan_catches_each_kind():
    """The control: each way of spelling the languages out is caught."""
    sample = 'A = ("en", "zh")\nB = {"en", "zh"}\nC = ["zh", "en"]\nD = r"^(en|zh)-"\nE = "notebooks/{en,zh}/"\n'
    path = ROOT / "build" / "test_languages_sample.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(sample + 'F = f"no {key} / 没有 {key}"\nG = "`x / n` 是除法"\n', encoding="utf-8")
    try:
        assert [line for line, _ in language_lists(path)] == [1, 2, 3]
        hits = [m[0] for _, text in strings(path) for p in (ALTERNATION, BRACES) for m in p.finditer(text)]
        assert hits == ["en|zh", "{en,zh}"]
        assert [line for line, text in strings(path) if BILINGUAL.search(text)] == [6]
    finally:
        path.unlink()
    assert FOLDER.findall("x: notebooks/en notebooks/instructor/zh notebooks/src") == [
        "notebooks/en",
        "notebooks/instructor/zh",
    ]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_makefiles_notebook_folders_come_from_langs():
    """make's ALL_NOTEBOOKS is read from tools/course.py: both versions in every language, and nothing else."""

    def folders(*args):
        out = make("-n", "-s", "test-gpu", *args)
        line = next(ln for ln in out.splitlines() if "gpu_check" in ln)
        return line.split("gpu_check", 1)[1].split()

    want = [f"notebooks/{lang}" for lang in course.LANGS] + [f"notebooks/instructor/{lang}" for lang in course.LANGS]
    assert folders() == want
    assert folders("LANGS=en zh ja")[-1] == "notebooks/instructor/ja"  # one variable drives every list


def test_the_issue_forms_offer_every_language():
    """GitHub's issue forms are static: their language dropdown is the one list that cannot be read from LANGS,
    so a new language fails here until each form offers it."""
    import yaml

    for path in sorted((ROOT / ".github" / "ISSUE_TEMPLATE").glob("*.yml")):
        form = yaml.safe_load(path.read_text(encoding="utf-8"))
        dropdowns = [
            item
            for item in form.get("body", [])
            if item.get("type") == "dropdown" and "language" in item["attributes"]["label"].lower()
        ]
        for dropdown in dropdowns:
            options = " ".join(dropdown["attributes"]["options"])
            assert all(f"(notebooks/{lang})" in options for lang in course.LANGS), (path.name, options)
