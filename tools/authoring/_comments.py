"""Twins of code comments and of code lines: the code of a notebook cell is shared, its words are not.

A comment may carry a twin in each other language of ``tools.course.LANGS`` (today Chinese, ``# zh:``), which
replaces it in that language's notebook and is dropped from the others.
Two forms (documented for authors in docs/authoring.md and in tools/authoring/nbtool.py's docstring):

    x = f(y)  # English comment  # zh: 中文注释          (inline: the twin ends the same comment)
    # English comment line 1
    # English comment line 2
    # zh: 中文第 1 行                                    (a run of k twin lines replaces the k comments above it)
    # zh: 中文第 2 行

A code line whose strings are words (a figure's title, an axis label) may carry a code twin, ``# zh> ...`` on the
line right under it: in the zh notebook it replaces the code of that line (the line's own comment stays), in the
others it is dropped. The twin may differ from its line only in string literals, so every language runs the same
code on the same values (``code_and_strings`` splits code into the two):

    ax.set_xlabel("key", fontsize=8)
    # zh> ax.set_xlabel("键", fontsize=8)

Comments are found with ``tokenize``, so a ``#`` inside a string is code, never a comment. Code twins are resolved
first (``localize_code``), comment twins then (``localize_comments``).
"""

from __future__ import annotations

import io
import re
import tokenize

from tools.course import LANGS

TWINS = LANGS[1:]  # the languages a comment may have a twin in, after the English it replaces


def twin_patterns(twins) -> tuple[re.Pattern, re.Pattern]:
    """A whole-line twin (``# zh: ...``) and the separator of an inline one, for the languages ``twins``."""
    codes = "|".join(map(re.escape, twins))
    return re.compile(rf"^# ?({codes}): ?(.*)$"), re.compile(rf"\s+# ?({codes}): ?")


TWIN_LINE, TWIN_INLINE = twin_patterns(TWINS)
CODE_TWIN = re.compile(rf"^# ?({'|'.join(map(re.escape, TWINS))})> ?(.*)$")  # '# zh> code' under the line it translates
# Comments that are markers or code-like, never prose to translate.
NOT_PROSE = re.compile(r"^#\s*(NBVAL_\w+|noqa\b|type: ?ignore|### (BEGIN|END) SOLUTION|%%|fmt: )")
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _comment_tokens(code: str) -> dict[int, tuple[int, str]]:
    """{row (1-based): (column, comment text)} for every comment token of ``code``."""
    found = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.start[0]] = (tok.start[1], tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError) as err:
        raise ValueError(f"cannot read the comments of this code: {err}") from err
    return found


def comment_twins(code: str, at: str = "code") -> tuple[list[str], dict[int, tuple[int, str, dict[str, str]]]]:
    """Parse the comment twins of a code cell.

    Returns (lines, comments): ``lines`` the cell's lines, ``comments`` {row: (column, English, {lang: twin})} for
    every comment that stays in the notebook; twin-only lines are ``None`` in ``lines`` (they are dropped).
    """
    lines: list[str | None] = code.split("\n")
    tokens = _comment_tokens(code)
    comments: dict[int, tuple[int, str, dict[str, str]]] = {}
    run: list[int] = []  # rows of the current run of twin lines ("# zh: ...")

    def close_run() -> None:
        by_lang: dict[str, list[int]] = {}
        for r in run:
            by_lang.setdefault(TWIN_LINE.match(tokens[r][1])[1], []).append(r)
        k = len(next(iter(by_lang.values())))
        targets = [r for r in range(run[0] - k, run[0]) if r >= 1]
        if (
            len(targets) != k
            or any(len(rows) != k for rows in by_lang.values())
            or any(r not in comments or comments[r][2] for r in targets)
        ):
            raise ValueError(
                f"{at}: line {run[0]}: {k} twin line(s) per language need as many English comments "
                "right above them (each without a twin yet)"
            )
        if k > 1 and any(lines[r - 1][: comments[r][0]].strip() for r in targets):
            raise ValueError(f"{at}: line {run[0]}: several twin lines translate whole-line comments only")
        for lang, rows in by_lang.items():
            for r, twin in zip(targets, rows, strict=True):
                comments[r][2][lang] = TWIN_LINE.match(tokens[twin][1])[2]
                lines[twin - 1] = None
        run.clear()

    for row in sorted(tokens):
        col, text = tokens[row]
        if run and row != run[-1] + 1:
            close_run()
        if TWIN_LINE.match(text):
            if lines[row - 1][:col].strip():
                lang = TWIN_LINE.match(text)[1]
                raise ValueError(f"{at}: line {row}: a '# {lang}:' twin after code must end an English comment")
            run.append(row)
            continue
        parts = TWIN_INLINE.split(text)  # "# English  # zh: 中文" -> ["# English", "zh", "中文"]
        comments[row] = (col, parts[0], dict(zip(parts[1::2], parts[2::2], strict=True)))
    if run:
        close_run()
    return lines, comments


def localize_comments(code: str, lang: str, at: str = "code") -> str:
    """The cell's code with its comments in ``lang``: the English ones, or their twins in ``lang`` where given."""
    lines, comments = comment_twins(code, at)
    out = []
    for row, line in enumerate(lines, 1):
        if line is None:
            continue
        if row in comments:
            col, en, twins = comments[row]
            line = line[:col] + (f"# {twins[lang]}" if lang in twins else en)
        out.append(line)
    return "\n".join(out)


def strip_comments(code: str) -> str:
    """The code without its comments (and without the spaces before them): what en and zh must share."""
    lines = code.split("\n")
    for row, (col, _) in _comment_tokens(code).items():
        lines[row - 1] = lines[row - 1][:col].rstrip()
    return "\n".join(lines)


def needs_twin(comment: str) -> bool:
    """True for an English prose comment without a Chinese twin (shape comments, markers and names are not prose)."""
    if NOT_PROSE.match(comment) or CJK.search(comment):
        return False
    text = re.sub(r"^\s*\([^()]*\)", "", comment.lstrip("#"))  # a leading shape such as (B, nh, rows, cols)
    words = [w for w in re.split(r"[\s,;:()\[\]{}=<>+*/|'\"`-]+", text) if w]
    # identifiers, numbers and shape letters are code, not English
    prose = [w for w in words if re.fullmatch(r"[A-Za-z][a-z]{2,}[.!?]?", w) and w.lower() not in CODE_WORDS]
    return len(prose) >= 1


CODE_WORDS = {
    "torch",
    "numpy",
    "true",
    "false",
    "none",
    "inf",
    "nan",
    "cpu",
    "cuda",
    "mps",
    "float",
    "int",
    "bool",
    "your",
    "journey",
    "starts",
    "with",
    "one",
    "step",
    "the",
}


def code_twins(code: str, at: str = "code") -> tuple[list[str], dict[int, dict[str, str]], set[int]]:
    """Parse the code twins (``# zh> ...``) of a cell.

    Returns (lines, twins, twin_rows): the cell's lines, {row of a code line: {lang: the twin's code}} and the rows
    (1-based) of the twin lines themselves. Each twin must differ from its line only in string literals.
    """
    lines = code.split("\n")
    tokens = _comment_tokens(code)
    found = {row: CODE_TWIN.match(text) for row, (_, text) in tokens.items() if CODE_TWIN.match(text)}
    twins: dict[int, dict[str, str]] = {}
    for row, m in sorted(found.items()):
        if lines[row - 1][: tokens[row][0]].strip():
            raise ValueError(
                f"{at}: line {row}: a '# {m[1]}>' code twin stands on a line of its own, right under "
                "the code line it translates"
            )
        target = row - 1
        while target in found:  # the twins of one line in several languages follow each other
            target -= 1
        code_part = _code_part(lines, tokens, target)
        if not code_part.strip():
            raise ValueError(
                f"{at}: line {row}: a '# {m[1]}>' code twin must come right under the code line it "
                "translates, not under a comment or a blank line"
            )
        if m[1] in twins.get(target, {}):
            raise ValueError(f"{at}: line {row}: line {target} already has a '# {m[1]}>' twin")
        twins.setdefault(target, {})[m[1]] = m[2].strip()
    for lang in sorted({lang for by_lang in twins.values() for lang in by_lang}):
        try:
            en_parts, lang_parts = (code_and_strings(_apply(lines, twins, set(found), x)) for x in ("en", lang))
        except ValueError as err:
            raise ValueError(f"{at}: with its '# {lang}>' code twins: {err}") from err
        if en_parts[0] != lang_parts[0]:
            row = next((a[0] for a, b in zip(en_parts[0], lang_parts[0], strict=False) if a != b), len(lines))
            raise ValueError(
                f"{at}: line {row}: a '# {lang}>' code twin may change only the strings of its line "
                "(the code must stay the same in every language)"
            )
    return lines, twins, set(found)


def _code_part(lines: list[str], tokens: dict[int, tuple[int, str]], row: int) -> str:
    """The code of line ``row`` without its comment ('' for a row before the first line)."""
    if row < 1:
        return ""
    return lines[row - 1][: tokens[row][0]] if row in tokens else lines[row - 1]


def _apply(lines: list[str], twins: dict[int, dict[str, str]], twin_rows: set[int], lang: str) -> str:
    tokens = _comment_tokens("\n".join(lines))
    out = []
    for row, line in enumerate(lines, 1):
        if row in twin_rows:
            continue
        if lang in twins.get(row, {}):
            code_part = _code_part(lines, tokens, row)
            indent = code_part[: len(code_part) - len(code_part.lstrip())]
            line = indent + twins[row][lang] + line[len(code_part.rstrip()) :]  # the line's comment stays
        out.append(line)
    return "\n".join(out)


def localize_code(code: str, lang: str, at: str = "code") -> str:
    """The cell's code in ``lang``: each line with a ``# lang>`` twin replaced by it, every twin line dropped."""
    lines, twins, twin_rows = code_twins(code, at)
    return _apply(lines, twins, twin_rows, lang) if twin_rows else code


_STRING_STARTS = {getattr(tokenize, name) for name in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, name)}
_STRING_ENDS = {getattr(tokenize, name) for name in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, name)}
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER}


def code_and_strings(code: str) -> tuple[list[tuple[int, str]], list[str]]:
    """Split code into its skeleton and its string literals.

    The skeleton is (row, token) for every token, each string literal (f-strings too, on every Python) standing as
    ``'<str>'``, comments and blank lines left out; the literals are the strings' source text, in order. Two cells
    with the same skeleton run the same code, apart from the values of their strings.
    """
    skeleton: list[tuple[int, str]] = []
    strings: list[str] = []
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in _STRING_STARTS:
                depth += 1
                if depth == 1:
                    skeleton.append((tok.start[0], "<str>"))
                    strings.append("")
            if depth:
                strings[-1] += tok.string
                depth -= tok.type in _STRING_ENDS
            elif tok.type == tokenize.STRING:
                skeleton.append((tok.start[0], "<str>"))
                strings.append(tok.string)
            elif tok.type not in _SKIPPED:
                text = (
                    tokenize.tok_name[tok.type]
                    if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
                    else tok.string
                )
                skeleton.append((tok.start[0], text))
    except (tokenize.TokenError, SyntaxError, IndentationError) as err:
        raise ValueError(f"cannot read this code: {err}") from err
    return skeleton, strings
