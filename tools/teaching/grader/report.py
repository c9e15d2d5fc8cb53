"""What the grader writes: the gradebook (grades.csv), one HTML feedback file per submission, the class report.

Student ids, file names and messages come from the class (a file name, what a kernel printed), so none of them
can forge what the instructor reads: every one is written through ``visible`` (control and bidirectional
override characters shown as ``<U+202E>``), and then ``csv_cell`` (no cell a spreadsheet reads as a formula),
``md_text``/``md_code`` (no Markdown or HTML in report.md) or ``html.escape``; feedback file names are unique
per student (``feedback_names``).
"""

from __future__ import annotations

import csv
import hashlib
import html
import re
import unicodedata
from collections import Counter
from pathlib import Path

from tools.course import LANGS

# shown, never obeyed: bidi embeddings, overrides and isolates, the directional marks, line separators
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")
FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")  # and full-width twins
_MD_SPECIAL = re.compile(r"([\\`*_~\[\]<>&|@#!])")
_MD_LINK = re.compile(r"(?i)(www)\.|:(?=//)")
_NAME_OK = re.compile(r"[A-Za-z0-9_.-]")
MAX_NAME = 120  # characters of a feedback file name before its hash

ICON = {
    "pass": "✅",
    "todo": "🚧",
    "fail": "❌",
    "error": "❌",
    "timeout": "⏰",
    "reference": "⚠️",
    "tampered": "⚠️",
    "missing": "❓",
}
STATUS = {
    "pass": {"en": "passed", "zh": "通过"},
    "todo": {"en": "not written yet", "zh": "还没有写"},
    "fail": {"en": "wrong result", "zh": "结果不对"},
    "error": {"en": "error", "zh": "出错"},
    "timeout": {"en": "ran past the time limit", "zh": "超时"},
    "reference": {"en": "llm_lab's own implementation handed in: 0 points", "zh": "交的是 llm_lab 自带的实现：0 分"},
    "tampered": {"en": "the checkers were redefined or patched: 0 points", "zh": "检查器被重新定义或修改：0 分"},
    "missing": {
        "en": "not found (the cell defining it was deleted or failed)",
        "zh": "找不到（定义它的单元被删除或出错）",
    },
}
HTML_LANG = {"en": "en", "zh": "zh-CN"}  # the feedback page's <html lang>, per course language
WORDS = {
    "title": {"en": "Feedback", "zh": "反馈"},
    "exercise": {"en": "Exercise", "zh": "练习"},
    "verdict": {"en": "Verdict", "zh": "结果"},
    "points": {"en": "Points", "zh": "得分"},
    "hint": {"en": "Hint", "zh": "提示"},
    "total": {"en": "Total (autograded)", "zh": "总分（自动评分）"},
    "notes": {"en": "Notes", "zh": "说明"},
    "manual": {
        "en": "Your written answers (Predict, Explain) are graded separately by your instructor.",
        "zh": "你的文字作答（预测题、解释题）由老师另行批改。",
    },
    "problem": {"en": "This submission could not be graded", "zh": "这份作业无法评分"},
}


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def columns(course, expected) -> list[tuple[str, str, str]]:
    """The gradebook's exercise columns, (column, notebook number, exercise key): those of each assigned notebook
    (any language: the same keys), named ``key`` for one notebook and ``NN:key`` for several."""
    lang, nns = expected[0], expected[1] or ()
    cols = []
    for nn in nns:
        for (_lg, n), course_nb in sorted(course.items(), key=lambda kv: (kv[0][0] != lang, kv[0])):
            if n == nn:
                cols += [(ex.key if len(nns) == 1 else f"{nn}:{ex.key}", nn, ex.key) for ex in course_nb.exercises]
                break
    return cols


def max_points(course, expected, nn: str | None = None) -> int:
    """The autograded points of notebook ``nn`` (default: the assignment's only or first notebook)."""
    nn = nn or next(iter(expected[1] or ()), None)
    course_nb = next((course_nb for (lg, n), course_nb in course.items() if n == nn), None)
    return (
        sum(int(course_nb.nb.cells[ex.checker].metadata["nbgrader"]["points"]) for ex in course_nb.exercises)
        if course_nb
        else 0
    )


def notebook_of(submission, expected) -> str:
    """The assigned notebook number ``submission`` is (its own when graded, else the assignment's first)."""
    nns = expected[1] or ("",)
    nn = (submission.notebook or "")[:2]
    return nn if nn in nns else nns[0]


def one_line(text, limit: int = 200) -> str:
    """``text`` on one line, runs of whitespace as one space, cut to ``limit`` characters with "..."."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def visible(text, *, lines: bool = False) -> str:
    """``text`` with every control character (newlines kept when ``lines``), bidirectional override and
    isolate, and lone surrogate (which no UTF-8 file can hold) shown as ``<U+XXXX>``: nothing in a name or message
    can reorder or hide what is around it, or stop the report from being written."""
    return "".join(
        f"<U+{ord(ch):04X}>"
        if ch in BIDI
        or unicodedata.category(ch) == "Cs"
        or (unicodedata.category(ch) == "Cc" and not (lines and ch in "\n\t"))
        else ch
        for ch in str(text)
    )


def csv_cell(value) -> object:
    """A CSV cell no spreadsheet runs: text starting with = + - @ (or a tab, CR) gets a leading apostrophe."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    return "'" + text if text.startswith(FORMULA) else text


def md_text(text) -> str:
    """``text`` as literal Markdown on one line: no HTML, link, image, emphasis, code or table syntax survives."""
    one = " ".join(visible(text, lines=True).split())
    return _MD_LINK.sub(lambda m: m.group(1) + "\\." if m.group(1) else "\\:", _MD_SPECIAL.sub(r"\\\1", one))


def md_code(text) -> str:
    """``text`` as a Markdown code span (nothing inside is interpreted), fenced by more backticks than it holds."""
    one = " ".join(visible(text, lines=True).split())
    fence = "`" * (max((len(run) for run in re.findall("`+", one)), default=0) + 1)
    pad = " " if one.startswith("`") or one.endswith("`") else ""
    return f"{fence}{pad}{one}{pad}{fence}"


def write_csv(results, cols, maxima: dict[str, int], expected, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        w = csv.writer(f)
        w.writerow(["student", "notebook", *(column for column, _nn, _key in cols), "total", "max"])
        for submission in results:
            if submission.not_counted:
                continue  # its student's row counts another file of the notebook (and names this one)
            nn = notebook_of(submission, expected)
            pts = {verdict.key: verdict.points for verdict in submission.verdicts}
            w.writerow(
                [
                    csv_cell(submission.student),
                    csv_cell(submission.notebook or submission.path.name),
                    *(pts.get(key, 0) if n == nn else "" for _column, n, key in cols),
                    submission.total,
                    maxima.get(nn, 0),
                ]
            )


def _safe_name(text: str) -> str:
    """An injective file-name spelling: letters, digits and ``_.-`` kept, anything else as ``~XXXXXX``."""
    name = "".join(ch if _NAME_OK.fullmatch(ch) else f"~{ord(ch):06x}" for ch in text)
    if len(name) > MAX_NAME or name.startswith("."):  # a long id: cut, made unique by a hash of the whole
        name = name[:MAX_NAME].lstrip(".") + "~" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    return name


def feedback_names(results) -> dict[int, str]:
    """id(submission) -> its feedback file: ``alice.html``, or ``alice--04_x.html`` when alice handed in several
    files. Different students never share a file, not even on a case-insensitive disk ("twin~a", "twin_a"
    and "Twin_A" get three)."""
    files = Counter(submission.student for submission in results)
    names, taken = {}, set()
    for submission in results:
        stem = _safe_name(submission.student) + (
            "" if files[submission.student] == 1 else "--" + _safe_name(submission.path.stem)
        )
        name, n = stem, 1
        while name.casefold() in taken:
            n += 1
            name = f"{stem}~{n}"
        taken.add(name.casefold())
        names[id(submission)] = name + ".html"
    return names


def feedback_html(submission, lang: str, maximum: int) -> str:
    t = {k: words[lang] for k, words in WORDS.items()}

    def e(text) -> str:
        return html.escape(visible(text, lines=True))

    rows = "".join(
        f"<tr><td><code>{e(v.key)}</code></td><td>{ICON.get(v.status, '❌')} "
        f"{e(STATUS.get(v.status, {}).get(lang, v.status))}</td><td>{v.points} / {v.max_points}</td>"
        f"<td>{e(v.message)}</td></tr>"
        for v in submission.verdicts
    )
    body = [
        f"<h1>{t['title']}: {e(submission.student)}</h1>",
        f"<p><code>{e(submission.notebook or submission.path.name)}</code></p>",
    ]
    if submission.problem:
        body.append(f"<p><strong>{t['problem']}:</strong> {e(submission.problem)}</p>")
    else:
        body.append(
            f"<table><tr><th>{t['exercise']}</th><th>{t['verdict']}</th><th>{t['points']}</th>"
            f"<th>{t['hint']}</th></tr>{rows}</table>"
        )
    body.append(f"<p><strong>{t['total']}: {submission.total} / {maximum}</strong></p>")
    if submission.notes:
        body.append(f"<h2>{t['notes']}</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in submission.notes) + "</ul>")
    body.append(f"<p>{t['manual']}</p>")
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{HTML_LANG.get(lang, lang)}"><head><meta charset="utf-8">'
        f"<title>{t['title']}: {e(submission.student)}</title><style>{style}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def class_report(results, cols, maxima: dict[str, int]) -> str:
    rows = [s for s in results if not s.not_counted]  # a student's second file of a notebook is not a row
    graded = [s for s in rows if not s.problem]
    mean = sum(s.total for s in rows) / max(1, len(rows))
    maximum = " + ".join(str(m) for m in maxima.values()) or "0"
    lines = [
        "# Class report",
        "",
        f"{len(rows)} submission(s), {len(graded)} graded, {len(rows) - len(graded)} not gradable. "
        f"Autograded points: mean {mean:.1f} of {maximum}.",
        "",
        "## Per exercise: what to teach again",
        "",
        "| exercise | passed | most common mistakes (count) |",
        "| --- | --- | --- |",
    ]
    for column, nn, key in cols:
        verdicts = [v for s in graded if s.notebook[:2] == nn for v in s.verdicts if v.key == key]
        passed = sum(v.status == "pass" for v in verdicts)
        mistakes = Counter(v.mistake or v.status for v in verdicts if v.status != "pass")
        common = ", ".join(f"`{m}` ({n})" for m, n in mistakes.most_common(4)) or "none"
        lines.append(f"| `{column}` | {passed} / {len(verdicts)} | {common} |")
    examples = {}
    for submission in graded:
        for verdict in submission.verdicts:
            # an example in the report's language (the course's first) when there is one
            wanted = submission.lang == LANGS[0] or (verdict.key, verdict.mistake) not in examples
            if verdict.status != "pass" and verdict.mistake and verdict.message and wanted:
                examples[(verdict.key, verdict.mistake)] = verdict.message
    if examples:
        lines += ["", "### What the named mistakes mean (one example hint each)", ""]
        lines += [f"- `{k}` / `{m}`: {md_text(msg)}" for (k, m), msg in sorted(examples.items())]
    problems = [s for s in results if s.problem]
    noted = [s for s in results if not s.problem and s.notes]
    lines += ["", "## Submissions that need a look", ""]
    if not problems and not noted:
        lines.append("None: every submission was graded normally.")
    lines += [
        f"- **{md_text(s.student)}** ({md_code(s.path.name)}): not graded: {md_text(s.problem)}" for s in problems
    ]
    lines += [f"- **{md_text(s.student)}** ({md_code(s.path.name)}): {md_text('; '.join(s.notes))}" for s in noted]
    lines += [
        "",
        "Written answers (Predict, Explain) are not autograded: read them in the submitted notebooks "
        "(cells that said YOUR ANSWER HERE).",
        "",
    ]
    return "\n".join(lines)


# how every file is written: UTF-8, and a character no UTF-8 file can hold (a lone surrogate in a learner's text)
# escaped, never an error that stops the class's report
WRITE = {"encoding": "utf-8", "errors": "backslashreplace"}


def write_all(results, course, expected, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cols = columns(course, expected)
    maxima = {nn: max_points(course, expected, nn) for nn in expected[1] or ()}
    write_csv(results, cols, maxima, expected, out / "grades.csv")
    (out / "feedback").mkdir(exist_ok=True)
    names = feedback_names(results)
    for submission in results:
        lang = submission.lang or expected[0] or "en"
        (out / "feedback" / names[id(submission)]).write_text(
            feedback_html(submission, lang, maxima.get(notebook_of(submission, expected), 0)), **WRITE
        )
    (out / "report.md").write_text(class_report(results, cols, maxima), **WRITE)
