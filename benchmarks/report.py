"""docs/benchmarks.md has several writers; each owns one section between its ``<!-- name:begin -->`` and
``<!-- name:end -->`` markers and rewrites only that one."""

from __future__ import annotations

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
