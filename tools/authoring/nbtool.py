"""Build, execute and re-point the notebook series.

Each notebook has one source, ``notebooks/src/NN_slug.nbsrc``, holding its code once and its prose in
English and Chinese. ``build`` writes two versions of it per language: the instructor version
``notebooks/instructor/<lang>/NN_slug.ipynb`` (solutions, model answers, hidden tests) and the learner version
``notebooks/<lang>/NN_slug.ipynb`` derived from it by tools/authoring/learner.py (exercises to write, each solution
folded; what Colab badges and `make lab` open). ``execute`` runs both with nbclient so every stored output
comes from a real run; ``set-repo`` re-points every Colab badge and setup cell at another GitHub repository/ref
without re-running anything.

Source format: blocks start with a marker line.

    %% title            English title (the builder adds the heading, the Colab badge and the setup cell)
    %% title zh         Chinese title
    %% md               an English markdown cell ...
    %% md zh            ... immediately followed by its Chinese twin
    %% code            a code cell shared by both languages; {{LANG}} becomes "en" or "zh"
    %% code tags=a,b    the same, with cell tags:
                          solution  an exercise solution between ### BEGIN SOLUTION / ### END SOLUTION
                                    (gets nbgrader metadata; student copies replace it)
                          checker   calls an exercise checker: its output is in the notebook's language
                                    (nbgrader autograded test: points and hidden tests, see tools/course.py)
    %% md tags=answer   a Predict/Explain model answer (nbgrader manually graded; student copies clear it)

Code comments: the code is shared, a comment may have a Chinese twin that replaces it in the zh notebook
(and is dropped from the en one). Inline, the twin ends the comment; on its own line, a run of k
``# zh:`` lines replaces the k comments right above it:

    attn_scores = queries @ keys.T  # (T, T): row = query  # zh: (T, T)：行是查询
    # Why this line exists, in English.
    # zh: 用中文说明这一行为什么存在。

Code twins: a line whose strings are words shown to the learner (a figure's title, an axis label) may be followed
by its zh version, ``# zh> ...``, which replaces the line's code in the zh notebook; it may change only string
literals (the builder refuses anything else), so both languages run the same code:

    ax.set_xlabel("key")
    # zh> ax.set_xlabel("键")

``python -m tools.authoring.nbtool comments [--only NN]`` lists the English prose comments still without a twin.

An optional ``NN_slug.exercises.nbsrc`` (same format, no title) is appended: the exercises section. Its first
cell is the section's heading (tagged ``exercises`` by the builder); ``{{HOWTO}}`` in it becomes the how-to
paragraph of the version being built (tools/course.py HOWTO).

Usage: python -m tools.authoring.nbtool build|execute|check|readme|comments|set-repo [...]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from tools import course as _course
from tools.authoring import learner

# The Colab pieces of a notebook: its badge, its setup cell, the GPU check notebook.
from tools.authoring.colab import (
    BADGE_IMG,
    GPU_NOTEBOOK,
    SETUP_FAILED,  # noqa: F401  (tests read it as nbtool.SETUP_FAILED)
    SETUP_MARK,
    badge_markdown,
    badge_url,
    gpu_notebook,
    setup_code,
)

ROOT = _course.ROOT
SRC = ROOT / "notebooks" / "src"
LANGS = _course.LANGS


def colab_config() -> tuple[str, str]:
    # A regex, not tomllib: the tools also run on Python 3.10.
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.llm-lab]", 1)[1]
    return re.search(r'(?m)^repo = "(.*)"$', section)[1], re.search(r'(?m)^ref = "(.*)"$', section)[1]


MARKER = re.compile(r"^%% (title|md|code)(?: ([a-z]{2}))?(?: tags=([\w,-]+))?\s*$")
TWINS = LANGS[1:]  # the languages whose markdown follows each English cell, in this order ('%% md zh', ...)


def _blocks(path: Path) -> list[dict]:
    """The source's marker blocks: kind, language (None: English, or a code cell), tags, lines, where."""
    blocks, current = [], None
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("%% "):
            m = MARKER.match(line)
            if not m:
                raise ValueError(f"{path}:{lineno}: bad marker line {line!r}")
            if m[2] is not None and m[2] not in TWINS:
                raise ValueError(
                    f"{path}:{lineno}: unknown language {m[2]!r} in {line!r}; the languages are "
                    f"{', '.join(LANGS)} (English unmarked)"
                )
            current = {
                "kind": m[1],
                "lang": m[2],
                "tags": m[3].split(",") if m[3] else [],
                "lines": [],
                "at": f"{path.name}:{lineno}",
            }
            blocks.append(current)
        elif current is None:
            if line.strip():
                raise ValueError(f"{path}:{lineno}: text before the first marker")
        else:
            current["lines"].append(line)
    return blocks


def parse(path: Path, need_title: bool = True) -> dict:
    """Parse a source into {'title': {lang: str}, 'cells': [...]}: a markdown cell is {lang: text} for every
    language (the English block, then one twin per other language, in ``LANGS`` order)."""
    blocks = _blocks(path)
    title, cells, i = {}, [], 0
    while i < len(blocks):
        b = blocks[i]
        text = "\n".join(b["lines"]).strip("\n")
        if b["kind"] == "title":
            title[b["lang"] or "en"] = text.strip()
        elif b["kind"] == "code":
            if b["lang"]:
                raise ValueError(f"{b['at']}: code is shared by all languages; use {{{{LANG}}}} for the language")
            cells.append({"type": "code", "source": text, "tags": b["tags"], "at": b["at"]})
        elif b["lang"]:
            raise ValueError(f"{b['at']}: '%% md {b['lang']}' must follow an English '%% md' cell")
        else:
            twins = blocks[i + 1 : i + 1 + len(TWINS)]
            if [(t["kind"], t["lang"]) for t in twins] != [("md", lang) for lang in TWINS]:
                want = " then ".join(f"'%% md {lang}'" for lang in TWINS)
                raise ValueError(f"{b['at']}: an English markdown cell must be followed by {want}")
            cells.append(
                {
                    "type": "md",
                    "en": text,
                    "tags": b["tags"],
                    **{t["lang"]: "\n".join(t["lines"]).strip("\n") for t in twins},
                }
            )
            i += len(TWINS)
        i += 1
    if need_title and set(title) != set(LANGS):
        raise ValueError(f"{path}: needs '%% title' and " + ", ".join(f"'%% title {lang}'" for lang in TWINS))
    return {"title": title, "cells": cells}


# Chinese twins of code comments ('# zh:') and of code lines ('# zh>'): parsing and the prose heuristic live in
# tools/authoring/_comments.py.
from tools.authoring._comments import (  # noqa: E402,F401
    CJK,
    code_and_strings,
    code_twins,
    comment_twins,
    localize_code,
    localize_comments,
    needs_twin,
    strip_comments,
)


def untranslated(src: Path) -> list[str]:
    """'file:line: comment' for every English prose comment in ``src``'s code cells that has no Chinese twin."""
    found = []
    for cell in parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))["cells"]:
        if cell["type"] != "code":
            continue
        code = localize_code(cell["source"], "en", cell.get("at", src.name))  # a code twin is code, not a comment
        lines, comments = comment_twins(code, cell.get("at", src.name))
        for row, (_, en, twins) in sorted(comments.items()):
            if set(twins) != set(TWINS) and needs_twin(en):
                found.append(f"{cell.get('at', src.name)}+{row}: {lines[row - 1].strip()}")
    return found


def cmd_comments(args) -> int:
    """List the code comments that still lack a Chinese twin (exit 1 if there are any)."""
    missing = []
    for src in sources(args.only):
        for path in (src, src.with_name(src.name.removesuffix(".nbsrc") + ".exercises.nbsrc")):
            if path.exists():
                missing += untranslated(path)
    for line in missing:
        print(line)
    return 1 if missing else 0


def notebook_name(src: Path) -> str:
    return src.name.removesuffix(".nbsrc") + ".ipynb"


def build_one(
    src: Path, lang: str, repo: str, ref: str, version: str = _course.INSTRUCTOR_VERSION
) -> nbformat.NotebookNode:
    """One notebook, unexecuted: the instructor version, or (``version="learner"``) the learner version."""
    if version not in _course.VERSIONS:
        raise ValueError(f"unknown notebook version {version!r}: use one of {', '.join(_course.VERSIONS)}")
    spec = parse(src)
    exercises = src.with_name(src.name.removesuffix(".nbsrc") + ".exercises.nbsrc")
    first_exercise = len(spec["cells"])
    if exercises.exists():
        spec["cells"] += parse(exercises, need_title=False)["cells"]
        spec["cells"][first_exercise]["tags"] = [*spec["cells"][first_exercise]["tags"], _course.EXERCISES_TAG]
    name = notebook_name(src)
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
    header = f"# {spec['title'][lang]}\n\n{badge_markdown(repo, ref, lang, name)}"
    cells = [nbformat.v4.new_markdown_cell(header), nbformat.v4.new_code_cell(setup_code(repo, ref, lang))]
    howto = _course.HOWTO[_course.INSTRUCTOR_VERSION][lang]
    for c in spec["cells"]:
        if c["type"] == "md":
            cells.append(nbformat.v4.new_markdown_cell(c[lang].replace("{{HOWTO}}", howto)))
            if c.get("tags"):  # e.g. answer: a Predict/Explain model answer, graded by hand under nbgrader
                cells[-1].metadata["tags"] = c["tags"]
        else:
            code = localize_code(c["source"], lang, c.get("at", src.name))  # '# zh>' lines: figure text
            code = localize_comments(code, lang, c.get("at", src.name))
            cell = nbformat.v4.new_code_cell(code.replace("{{LANG}}", f'"{lang}"'))
            if c["tags"]:
                cell.metadata["tags"] = c["tags"]
            cells.append(cell)
    for i, cell in enumerate(cells):
        cell["id"] = f"{lang}-{name[:2]}-{i:03d}"  # stable ids keep diffs small
    _course.nbgrader_metadata(cells, name[:2])  # points, hidden tests, answer cells: from the tags
    nb.cells = cells
    if version == _course.LEARNER:
        return learner.learner_version(nb, lang)  # keeps the header's badge: it opens this very version
    cells[0].source = f"# {spec['title'][lang]}\n\n{_course.INSTRUCTOR_NOTE[lang].format(name=name)}"
    return nb


def sources(only: str | None = None) -> list[Path]:
    found = sorted(p for p in SRC.glob("[0-9][0-9]_*.nbsrc") if not p.name.endswith(".exercises.nbsrc"))
    wanted = _course.parse_only(only)  # "3,06" -> ("03", "06"): notebook numbers, one meaning everywhere
    return [p for p in found if wanted is None or p.name[:2] in wanted]


def out_path(src: Path, lang: str, version: str = _course.INSTRUCTOR_VERSION) -> Path:
    return _course.version_dir(version, ROOT / "notebooks") / lang / notebook_name(src)


def write(nb, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def execute(nb, path: Path, timeout: int = 600) -> None:
    from nbclient import NotebookClient

    resources = {"metadata": {"path": str(path.parent)}}
    # coalesce_streams: one print may arrive in several chunks on a busy machine; store it as one output
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources, coalesce_streams=True).execute()
    for cell in nb.cells:  # nbclient records timings; they would churn every diff
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)


def cmd_build(args) -> None:
    repo, ref = colab_config()
    for src in sources(args.only):
        for lang in LANGS:
            for version in args.versions.split(",") if getattr(args, "versions", None) else _course.VERSIONS:
                nb = build_one(src, lang, repo, ref, version)
                path = out_path(src, lang, version)
                if args.execute:
                    print(f"executing {path.relative_to(ROOT)}", flush=True)
                    execute(nb, path)
                    if version == _course.LEARNER:
                        learner.clear_exercise_outputs(nb)
                write(nb, path)
    write(gpu_notebook(repo, ref), ROOT / GPU_NOTEBOOK)  # no outputs: it only runs on a GPU runtime


README_LANG = {"README.md": "en", "README.zh-CN.md": "zh"}
TABLE_BEGIN, TABLE_END = "<!-- series:begin -->", "<!-- series:end -->"


NOTEBOOK_COLUMN = {"en": "Notebook", "zh": "笔记本"}  # the heading of the README table's title column


def series_table(lang: str, repo: str, ref: str) -> str:
    """The README's table of notebooks, titles in ``lang``, a Colab badge per language (each language's column
    headed by its name in the site's language switch)."""
    names = [_course.site_module().lang(lg).name for lg in LANGS]
    rows = [f"| # | {NOTEBOOK_COLUMN[lang]} | " + " | ".join(names) + " |", "| --- " * (2 + len(LANGS)) + "|"]
    for src in sources():
        name = notebook_name(src)
        title = parse(src)["title"][lang].split("·", 1)[-1].strip()
        links = [
            f"[![Open In Colab]({BADGE_IMG})]({badge_url(repo, ref, lg, name)}) [{lg}](notebooks/{lg}/{name})"
            for lg in LANGS
        ]
        rows.append(f"| {name[:2]} | {title} | " + " | ".join(links) + " |")
    return "\n".join(rows)


def render_readme(text: str, lang: str, repo: str, ref: str) -> str:
    before, rest = text.split(TABLE_BEGIN, 1)
    _, after = rest.split(TABLE_END, 1)
    return f"{before}{TABLE_BEGIN}\n{series_table(lang, repo, ref)}\n{TABLE_END}{after}"


def cmd_readme(args) -> int:
    """Rewrite (or with --check, verify) the series tables in README.md and README.zh-CN.md."""
    repo, ref = colab_config()
    stale = []
    for filename, lang in README_LANG.items():
        path = ROOT / filename
        text = path.read_text(encoding="utf-8")
        new = render_readme(text, lang, repo, ref)
        if new != text:
            if args.check:
                stale.append(f"{filename}: series table out of date: run python -m tools.authoring.nbtool readme")
            else:
                path.write_text(new, encoding="utf-8")
    for line in stale:
        print(line)
    return 1 if stale else 0


def cmd_check(args) -> int:
    """Stored notebooks must hold exactly the cells their sources build (outputs aside)."""
    repo, ref = colab_config()
    problems = []
    for src in sources(args.only):
        for lang in LANGS:
            for version in _course.VERSIONS:
                path = out_path(src, lang, version)
                if not path.exists():
                    problems.append(f"{path} missing: run make execute")
                    continue
                want = build_one(src, lang, repo, ref, version)
                have = nbformat.read(str(path), as_version=4)
                w = [(c.cell_type, c.source) for c in want.cells]
                h = [(c.cell_type, c.source) for c in have.cells]
                if w != h:
                    problems.append(f"{path} differs from {src.name}: run make execute NB={src.name[:2]}")
    gpu = ROOT / GPU_NOTEBOOK
    if not gpu.exists() or [c.source for c in nbformat.read(str(gpu), as_version=4).cells] != [
        c.source for c in gpu_notebook(repo, ref).cells
    ]:
        problems.append(f"{gpu} is missing or stale: run python -m tools.authoring.nbtool build")
    for p in problems:
        print(p)
    return 1 if problems else 0


def cmd_set_repo(args) -> None:
    """Rewrite pyproject's [tool.llm-lab] and every badge/setup cell in place (outputs are unaffected)."""
    old_repo, old_ref = colab_config()
    ref = args.ref or old_ref
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", args.repo):
        raise SystemExit(f"repo must look like owner/name, got {args.repo!r}")
    pp = ROOT / "pyproject.toml"
    text = pp.read_text()
    text = re.sub(r'(?m)^repo = ".*"$', f'repo = "{args.repo}"', text, count=1)
    text = re.sub(r'(?m)^ref = ".*"$', f'ref = "{ref}"', text, count=1)
    pp.write_text(text)
    for version in _course.VERSIONS:
        for lang in LANGS:
            for path in sorted((_course.version_dir(version, ROOT / "notebooks") / lang).glob(_course.PATTERN)):
                nb = nbformat.read(str(path), as_version=4)
                for cell in nb.cells:
                    if cell.cell_type == "markdown" and BADGE_IMG in cell.source:
                        cell.source = cell.source.replace(
                            badge_url(old_repo, old_ref, lang, path.name), badge_url(args.repo, ref, lang, path.name)
                        )
                    elif cell.cell_type == "code" and cell.source.startswith(SETUP_MARK):
                        cell.source = setup_code(args.repo, ref, lang)
                write(nb, path)
    write(gpu_notebook(args.repo, ref), ROOT / GPU_NOTEBOOK)
    for filename, lang in README_LANG.items():
        readme = ROOT / filename
        if readme.exists():
            text = readme.read_text(encoding="utf-8")
            text = text.replace(f"github.com/{old_repo}@{old_ref}", f"github.com/{args.repo}@{ref}")
            text = text.replace(f"github/{old_repo}/blob/{old_ref}/", f"github/{args.repo}/blob/{ref}/")
            if TABLE_BEGIN in text:
                text = render_readme(text, lang, args.repo, ref)
            readme.write_text(text, encoding="utf-8")
    print(f"Colab links now point at {args.repo}@{ref}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write notebooks from sources (without outputs)")
    b.add_argument("--only", help="comma-separated number prefixes, e.g. 01,03")
    b.add_argument("--versions", help="learner, instructor or both (default: both)")
    b.set_defaults(func=cmd_build, execute=False)
    e = sub.add_parser("execute", help="build and run every notebook, storing the outputs")
    e.add_argument("--only")
    e.add_argument("--versions", help="learner, instructor or both (default: both)")
    e.set_defaults(func=cmd_build, execute=True)
    c = sub.add_parser("check", help="fail if a stored notebook no longer matches its source")
    c.add_argument("--only")
    c.set_defaults(func=cmd_check)
    r = sub.add_parser("readme", help="rewrite the series tables in the READMEs")
    r.add_argument("--check", action="store_true", help="only report whether they are up to date")
    r.set_defaults(func=cmd_readme)
    t = sub.add_parser("comments", help="list code comments that lack a Chinese twin ('# zh: ...')")
    t.add_argument("--only")
    t.set_defaults(func=cmd_comments)
    s = sub.add_parser("set-repo", help="point badges and Colab setup cells at owner/name (and a ref)")
    s.add_argument("repo")
    s.add_argument("--ref")
    s.set_defaults(func=cmd_set_repo)
    args = ap.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
