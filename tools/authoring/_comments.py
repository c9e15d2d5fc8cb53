"""Twins of code comments: the code of a notebook cell is shared, its comments are not.

A comment may carry a twin in each other language of ``tools.course.LANGS`` (today Chinese, ``# zh:``), which
replaces it in that language's notebook and is dropped from the others.
Two forms (documented for authors in docs/authoring.md and in tools/authoring/nbtool.py's docstring):

    x = f(y)  # English comment  # zh: 中文注释          (inline: the twin ends the same comment)
    # English comment line 1
    # English comment line 2
    # zh: 中文第 1 行                                    (a run of k twin lines replaces the k comments above it)
    # zh: 中文第 2 行

Comments are found with ``tokenize``, so a ``#`` inside a string is code, never a comment.
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
        if (len(targets) != k or any(len(rows) != k for rows in by_lang.values())
                or any(r not in comments or comments[r][2] for r in targets)):
            raise ValueError(f"{at}: line {run[0]}: {k} twin line(s) per language need as many English comments "
                             "right above them (each without a twin yet)")
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


CODE_WORDS = {"torch", "numpy", "true", "false", "none", "inf", "nan", "cpu", "cuda", "mps", "float", "int", "bool",
              "your", "journey", "starts", "with", "one", "step", "the"}
