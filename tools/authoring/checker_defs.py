"""Write ``llm_lab/exercises/checkers.py``: one ``def check_<name>(obj)`` per exercise record, so that the learner's
checkers are plain functions an IDE, ``help()`` and a linter can see (not names made at import time).

Usage: ``python -m tools.authoring.checker_defs`` (writes the file), ``--check`` (exits 1 if it is out of date;
``tests/tools/authoring/test_checker_defs.py`` runs that). Run it after adding, renaming or re-describing an exercise.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

TARGET = Path(__file__).resolve().parents[2] / "llm_lab" / "exercises" / "checkers.py"

HEADER = '''"""The learner's checkers, one function per exercise: ``check_<name>(obj)`` prints the result line (and
what ``obj`` printed) and never raises.

Generated from the exercise records by ``python -m tools.authoring.checker_defs``; do not edit by hand
(``tests/tools/authoring/test_checker_defs.py`` fails when this file and the records differ). ``llm_lab.exercises``
exports them all.
"""

from __future__ import annotations

import sys

_package = sys.modules[__package__]  # the llm_lab.exercises this file belongs to (a fresh() copy has its own)

__all__ = [
{names}
]
'''

FUNCTION = """

def check_{name}(obj) -> None:
{doc}
    _package.check("{name}", obj)
"""


def render() -> str:
    from llm_lab.exercises import REGISTRY

    names = "\n".join(f'    "check_{name}",' for name in REGISTRY)
    parts = [HEADER.format(names=names)]
    for name, record in REGISTRY.items():
        body = (
            f"Notebook {record.notebook}, {record.points} point{'s' if record.points != 1 else ''}: {record.signature}"
        )
        lines = textwrap.wrap(body, width=112, break_on_hyphens=False)
        doc = '    """' + "\n    ".join(lines) + '"""'
        parts.append(FUNCTION.format(name=name, doc=doc))
    return "".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is out of date instead of writing it")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print(
                f"{TARGET.relative_to(TARGET.parents[2])} is out of date: run python -m tools.authoring.checker_defs",
                file=sys.stderr,
            )
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(TARGET.parents[2])} ({text.count('def check_')} checkers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
