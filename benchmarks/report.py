"""docs/benchmarks.md has several writers; each owns one section between its ``<!-- name:begin -->`` and
``<!-- name:end -->`` markers and rewrites only that one."""

from __future__ import annotations

import argparse
from pathlib import Path


def replace_section(path: Path, begin: str, end: str, body: list[str]) -> None:
    """Put ``begin``, the ``body`` lines and ``end`` into the report at ``path``: in place of the section between
    those markers, or appended if the report has none yet."""
    section = "\n".join([begin, *body, end])
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in text and end in text.split(begin, 1)[1]:
        before, rest = text.split(begin, 1)
        text = before + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def run(argv, description: str, steps_help: str, measure, lines, write_section) -> int:
    """The command line of a benchmark that times training steps: ``--steps`` (at least 1; default the notebook's)
    and ``--out`` (a Markdown report whose section ``write_section`` rewrites); prints ``lines(measure(steps))``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--steps", type=int, help=steps_help)
    ap.add_argument("--out", type=Path, help="a Markdown report to put the lines into")
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    body = lines(measure(args.steps))
    print("\n".join(body))
    if args.out:
        write_section(args.out, body)
    return 0
