"""Chinese twins of code comments: the code of a notebook cell is shared, its comments are not.

A comment may carry its Chinese twin, which replaces it in the zh notebook and is dropped from the en one.
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

ZH_TWIN_LINE = re.compile(r"^# ?zh: ?(.*)$")
ZH_TWIN_INLINE = re.compile(r"^(#.*?)\s+# ?zh: ?(.*)$")
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


def comment_twins(code: str, at: str = "code") -> tuple[list[str], dict[int, tuple[int, str, str | None]]]:
    """Parse the comment twins of a code cell.

    Returns (lines, comments): ``lines`` the cell's lines, ``comments`` {row: (column, English, Chinese or None)}
    for every comment that stays in the notebook; twin-only lines are ``None`` in ``lines`` (they are dropped).
    """
    lines: list[str | None] = code.split("\n")
    tokens = _comment_tokens(code)
    comments: dict[int, tuple[int, str, str | None]] = {}
    run: list[int] = []  # rows of the current run of "# zh:" lines

    def close_run() -> None:
        targets = [r for r in range(run[0] - len(run), run[0]) if r >= 1]
        if len(targets) != len(run) or any(r not in comments or comments[r][2] is not None for r in targets):
            raise ValueError(f"{at}: line {run[0]}: {len(run)} '# zh:' line(s) need as many English comments "
                             "right above them (each without a twin yet)")
        if len(run) > 1 and any(lines[r - 1][: comments[r][0]].strip() for r in targets):
            raise ValueError(f"{at}: line {run[0]}: several '# zh:' lines translate whole-line comments only")
        for r, twin in zip(targets, run, strict=True):
            comments[r] = (comments[r][0], comments[r][1], ZH_TWIN_LINE.match(tokens[twin][1])[1])
            lines[twin - 1] = None
        run.clear()

    for row in sorted(tokens):
        col, text = tokens[row]
        if run and row != run[-1] + 1:
            close_run()
        if ZH_TWIN_LINE.match(text):
            if lines[row - 1][:col].strip():
                raise ValueError(f"{at}: line {row}: a '# zh:' twin after code must end an English comment")
            run.append(row)
            continue
        m = ZH_TWIN_INLINE.match(text)
        comments[row] = (col, m[1], m[2]) if m else (col, text, None)
    if run:
        close_run()
    return lines, comments


def localize_comments(code: str, lang: str, at: str = "code") -> str:
    """The cell's code with its comments in ``lang``: the English ones, or their Chinese twins where given."""
    lines, comments = comment_twins(code, at)
    out = []
    for row, line in enumerate(lines, 1):
        if line is None:
            continue
        if row in comments:
            col, en, zh = comments[row]
            line = line[:col] + (f"# {zh}" if lang == "zh" and zh is not None else en)
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
