"""Has Colab moved? Compare tests/colab-versions.txt with Colab's own published package list.

Colab publishes its runtime's `pip freeze` and Python version in the googlecolab/backend-info repository
(pip-freeze.txt, os-info.txt). The weekly canary downloads both and runs

    python .github/scripts/colab_versions.py --freeze pip-freeze.txt --os-info os-info.txt --out colab-now.txt

which writes ``colab-now.txt``: tests/colab-versions.txt with every pin that Colab also has replaced by
Colab's current version (the pins Colab lacks, like nbval, are kept), and prints a Markdown table of what
moved. With ``--github-output`` it also writes ``moved=true|false`` and ``python=X.Y`` for the next steps.
Standard library only: it runs on the runner's system Python before any venv exists.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;#]+)(?P<rest>.*)$")
PYTHON_LINE = re.compile(r"^#\s*python:\s*(?P<version>\d+\.\d+)\s*$")
# `torch @ https://.../torch-2.11.0%2Bcpu-cp313-...whl`: the version sits in the wheel's file name.
URL_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*@\s*\S*/(?P<file>[^/\s]+\.whl)\s*$")


def normalize(name: str) -> str:
    """PEP 503 name: ``jupyter_client`` and ``Jupyter-Client`` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def public(version: str) -> str:
    """``2.11.0+cpu`` -> ``2.11.0``: the recorded file keeps public versions (see its torch comment)."""
    return version.split("+", 1)[0]


def read_freeze(text: str) -> dict[str, str]:
    """{normalized name: public version} from `pip freeze` output (``==`` pins and wheel URLs)."""
    versions = {}
    for line in text.splitlines():
        line = line.strip()
        if match := PIN.match(line):
            versions[normalize(match["name"])] = public(match["version"])
        elif match := URL_PIN.match(line):
            version = match["file"].replace("%2B", "+").split("-")[1]
            versions[normalize(match["name"])] = public(version)
    return versions


def read_python(text: str) -> str:
    """``3.13`` from os-info.txt's ``Python 3.13.15`` line."""
    match = re.search(r"^Python (\d+\.\d+)", text, flags=re.MULTILINE)
    if not match:
        raise ValueError("no 'Python X.Y.Z' line in the os-info text")
    return match[1]


def recorded_python(text: str) -> str:
    """The ``# python: X.Y`` line of tests/colab-versions.txt."""
    for line in text.splitlines():
        if match := PYTHON_LINE.match(line.strip()):
            return match["version"]
    raise ValueError("tests/colab-versions.txt has no '# python: X.Y' line")


def update(recorded: str, colab: dict[str, str], python: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The recorded file with Colab's current versions, and the (name, recorded, now) rows that moved."""
    moved = []
    old_python = recorded_python(recorded)
    if old_python != python:
        moved.append(("python", old_python, python))
    lines = []
    for line in recorded.splitlines():
        if PYTHON_LINE.match(line.strip()):
            line = f"# python: {python}"
        elif (match := PIN.match(line.strip())) and normalize(match["name"]) in colab:
            now = colab[normalize(match["name"])]
            if now != match["version"]:
                moved.append((match["name"], match["version"], now))
                line = f"{match['name']}=={now}{match['rest']}"
        lines.append(line)
    return "\n".join(lines) + "\n", moved


def table(moved: list[tuple[str, str, str]]) -> str:
    if not moved:
        return "Colab's versions match tests/colab-versions.txt.\n"
    rows = "\n".join(f"| {name} | {old} | {new} |" for name, old, new in moved)
    return (
        "Colab has moved: update tests/colab-versions.txt (CONTRIBUTING.md, 'When Colab moves').\n\n"
        f"| package | tests/colab-versions.txt | Colab now |\n| --- | --- | --- |\n{rows}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorded", type=Path, default=Path("tests/colab-versions.txt"))
    parser.add_argument("--freeze", type=Path, required=True, help="Colab's pip-freeze.txt")
    parser.add_argument("--os-info", type=Path, required=True, help="Colab's os-info.txt")
    parser.add_argument("--out", type=Path, required=True, help="where to write the file with Colab's versions")
    parser.add_argument("--github-output", type=Path, help="append moved=... and python=... here")
    args = parser.parse_args(argv)

    colab = read_freeze(args.freeze.read_text(encoding="utf-8"))
    if "torch" not in colab:
        # A format change on Colab's side must not read as "nothing moved".
        raise SystemExit(f"{args.freeze}: no torch pin found; has the pip-freeze format changed?")
    python = read_python(args.os_info.read_text(encoding="utf-8"))
    text, moved = update(args.recorded.read_text(encoding="utf-8"), colab, python)
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(table(moved))
    if args.github_output:
        with args.github_output.open("a", encoding="utf-8") as out:
            out.write(f"moved={'true' if moved else 'false'}\npython={python}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
