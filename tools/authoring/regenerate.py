"""Regenerate every derived file of the repository, or (``--check``) name the ones that are stale.

    python -m tools.authoring.regenerate            # make regenerate: write what is stale
    python -m tools.authoring.regenerate --check    # exit 1 naming each stale file
    python -m tools.authoring.regenerate --execute [--only 08]   # make regenerate EXECUTE=1: the notebooks too

What is derived, and from what (docs/architecture.md, "Add an exercise"):

- ``llm_lab/exercises/checkers.py``: one ``check_<name>`` per exercise record (``tools.authoring.checker_defs``).
- the series tables of ``README.md`` and ``README.zh-CN.md`` (``nbtool readme``), from the notebook sources.
- the exercise map, ``docs/exercises.md`` and its Chinese twin: each autograded item's points, ``auto (N)``, the
  sum of the points of the checkers its part of the notebook source calls, and the Totals, the item rows above
  them counted (per kind, in all, and the transfer fraction); the rest of each row is written by hand.
- the points of each checker's row in the checks page, ``docs/checks.md`` and its twin (``2 pt, `check_<name>```),
  from the exercise records; the row's text is written by hand.
- the stored notebooks: from ``notebooks/src`` by ``nbtool execute``, which runs them (minutes), so only with
  ``--execute``; ``--check`` reports them through ``nbtool check`` (their code and text equal to the sources).

Everything else an exercise needs is read at run time from its record and its cell tags (``__all__``, points,
nbgrader metadata, hidden tests, the student copy, the grader's matching): nothing to regenerate.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "notebooks" / "src"

# The exercise map's words per language: the totals' row labels are found by their start, the columns by header.
MAP = {
    "docs/exercises.md": {
        "totals": "## Totals",
        "graded": "graded",
        "transfer": "transfer?",
        "auto": "auto",
        "points": (r"\| auto \((\d+)\) \|", "| auto ({p}) |"),
        "yes": "yes",
        "rows": ("Predict / Explain", "Implement / Find the bug", "all"),
        "fraction": (
            r"\*\*Transfer fraction: \d+ of \d+ items, \d+ %\.\*\*",
            "**Transfer fraction: {t} of {n} items, {p} %.**",
        ),
    },
    "docs/exercises.zh-CN.md": {
        "totals": "## 合计",
        "graded": "评分",
        "transfer": "迁移？",
        "auto": "自动",
        "points": (r"\| 自动（(\d+)） \|", "| 自动（{p}） |"),
        "yes": "是",
        "rows": ("预测 / 解释", "实现 / 找错误", "全部"),
        "fraction": (r"\*\*迁移比例：\d+ 道题中 \d+ 道，\d+%。\*\*", "**迁移比例：{n} 道题中 {t} 道，{p}%。**"),
    },
}


# The checks page's words per language: a checker's points beside its name, in the head of its row.
CHECKS = {
    "docs/checks.md": (r"(\d+) pt, `check_(\w+)`", "{p} pt, `check_{name}`"),
    "docs/checks.zh-CN.md": (r"(\d+) 分，`check_(\w+)`", "{p} 分，`check_{name}`"),
}


def _points(name: str) -> int:
    from llm_lab import exercises

    return exercises.points(name)


def item_points(src: Path) -> dict[int, int]:
    """Per exercise number of one ``NN_*.exercises.nbsrc``: the points of the checkers its part calls (0: none)."""
    parts = re.split(r"(?m)^%% md\n(?=### Exercise \d+ · )", src.read_text(encoding="utf-8"))[1:]
    out = {}
    for part in parts:
        number = int(re.match(r"### Exercise (\d+) · ", part)[1])
        cells = re.findall(r"(?ms)^%% code tags=checker\n(.*?)(?=^%% |\Z)", part)
        out[number] = sum(_points(name) for cell in cells for name in re.findall(r"\bcheck_(\w+)\(", cell))
    return out


def notebook_points(nn: str) -> dict[int, int]:
    """:func:`item_points` of notebook ``nn``'s exercises source ({} when it has none)."""
    return {n: p for src in sorted(SOURCES.glob(f"{nn}_*.exercises.nbsrc")) for n, p in item_points(src).items()}


def checks_page(text: str, pattern: str, form: str) -> str:
    """``text`` (a checks page) with each checker's points as its record has them."""
    return re.sub(pattern, lambda m: form.format(p=_points(m[2]), name=m[2]), text)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def exercise_map(text: str, words: dict) -> str:
    """``text`` (an exercise map page) with each autograded item's points taken from its notebook's source and
    the Totals recounted from the item rows above them."""
    body, totals = text.split(words["totals"], 1)
    items, header, points, lines = [], None, {}, body.split("\n")
    pattern, form = words["points"]
    for k, line in enumerate(lines):
        section = re.match(r"## (\d\d) · ", line)
        if section:
            points = notebook_points(section[1])
        if line.startswith("| # |"):
            header = _cells(line)
        elif header and re.match(r"\| \d+ \|", line):
            if points.get(int(_cells(line)[0])):
                written = form.format(p=points[int(_cells(line)[0])])
                line = lines[k] = re.sub(pattern, lambda _, w=written: w, line, count=1)
            row = dict(zip(header, _cells(line), strict=False))
            items.append((row[words["graded"]].startswith(words["auto"]), row[words["transfer"]] == words["yes"]))
    body = "\n".join(lines)
    groups = ([i for i in items if not i[0]], [i for i in items if i[0]], items)
    lines = totals.split("\n")
    for k, line in enumerate(lines):
        for label, group in zip(words["rows"], groups, strict=True):
            if line.startswith(f"| {label}") and not line.startswith("| ---"):
                first = _cells(line)[0]
                if first.split("（")[0].split(" (")[0] == label:
                    transfer = sum(t for _, t in group)
                    lines[k] = f"| {first} | {len(group)} | {transfer} | {len(group) - transfer} |"
    pattern, form = words["fraction"]
    transfer = sum(t for _, t in items)
    fraction = form.format(t=transfer, n=len(items), p=round(100 * transfer / len(items)) if items else 0)
    return body + words["totals"] + re.sub(pattern, lambda _: fraction, "\n".join(lines), count=1)


def _checkers() -> str:
    from tools.authoring import checker_defs

    return checker_defs.render()


def _readme(name: str) -> Callable[[str], str]:
    def render(text: str) -> str:
        from tools.authoring import nbtool

        repo, ref = nbtool.colab_config()
        return nbtool.render_readme(text, nbtool.README_LANG[name], repo, ref)

    return render


def derivations() -> dict[str, Callable[[str], str]]:
    """Each derived file (relative to the root) and the function from its current text to what it should be."""
    from tools.authoring import nbtool

    out: dict[str, Callable[[str], str]] = {"llm_lab/exercises/checkers.py": lambda _text: _checkers()}
    out.update({name: _readme(name) for name in nbtool.README_LANG})
    out.update({name: (lambda text, w=words: exercise_map(text, w)) for name, words in MAP.items()})
    out.update({name: (lambda text, c=c: checks_page(text, *c)) for name, c in CHECKS.items()})
    return out


def stale(root: Path = ROOT) -> dict[str, str]:
    """The derived files whose text differs from their derivation: {relative path: the text it should have}."""
    found = {}
    for name, derive in derivations().items():
        path = root / name
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        want = derive(text)
        if want != text:
            found[name] = want
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 naming each stale file; write nothing")
    ap.add_argument("--execute", action="store_true", help="also rebuild and run the notebooks (nbtool execute)")
    ap.add_argument("--only", help="with --execute: the notebooks, e.g. 01,08")
    args = ap.parse_args(argv)
    from tools.authoring import nbtool

    found = stale()
    if args.check:
        for name in found:
            print(f"{name} is stale: run make regenerate", file=sys.stderr)
        notebooks = nbtool.main(["check"])
        return 1 if found or notebooks else 0
    for name, text in found.items():
        (ROOT / name).write_text(text, encoding="utf-8")
        print(f"wrote {name}")
    if args.execute:
        return nbtool.main(["execute", *(["--only", args.only] if args.only else [])]) or nbtool.main(["readme"])
    print("derived files current" if not found else f"{len(found)} derived file(s) rewritten", end="")
    print("; notebooks not executed (make regenerate EXECUTE=1 runs them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
