"""Cut a release: one version everywhere, every Colab link pointing at its tag.

    python -m tools.release.release 0.1.1        # or: make release VERSION=0.1.1

Sets the version in pyproject.toml, ``llm_lab/__init__.py`` and CITATION.cff (when present), moves CHANGELOG.md's
"Unreleased" section under the new version (when present), points every Colab badge and setup cell, the
README install lines and tools/colab_nbval.ipynb at the tag ``v<version>`` (``nbtool.py set-repo``), then
prints the git commands that publish it. Colab installs from that tag, so it must be pushed: until it is,
the notebooks' setup cell says the release does not exist yet. Nothing is committed or pushed here.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from pathlib import Path

from tools.authoring import nbtool

VERSION = re.compile(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?")


def package_version(root: Path) -> str:
    """The version in pyproject.toml's [project] table."""
    project = (root / "pyproject.toml").read_text().split("[project]", 1)[1].split("\n[", 1)[0]
    return re.search(r'(?m)^version = "(.*)"$', project)[1]


def tag(version: str) -> str:
    return f"v{version}"


def set_version(root: Path, version: str, today: datetime.date) -> list[str]:
    """Write ``version`` into every file that states it; return the files changed."""
    changed = []

    def sub(path: Path, pattern: str, repl: str, count: int = 1) -> None:
        if not path.exists():
            return
        text = path.read_text(encoding="utf-8")
        new, n = re.subn(pattern, repl, text, count=count, flags=re.M)
        if n == 0:
            raise SystemExit(f"{path}: no line matching {pattern!r}")
        if new != text:
            path.write_text(new, encoding="utf-8")
            if str(path.relative_to(root)) not in changed:
                changed.append(str(path.relative_to(root)))

    sub(root / "pyproject.toml", r'^version = ".*"$', f'version = "{version}"')
    sub(root / "llm_lab" / "__init__.py", r'^__version__ = ".*"$', f'__version__ = "{version}"')
    sub(root / "CITATION.cff", r"^version: .*$", f'version: "{version}"')
    if (root / "CITATION.cff").exists() and "date-released:" in (root / "CITATION.cff").read_text():
        sub(root / "CITATION.cff", r"^date-released: .*$", f'date-released: "{today.isoformat()}"')
    changelog = root / "CHANGELOG.md"
    if changelog.exists() and re.search(r"(?m)^## \[?Unreleased\]?", changelog.read_text(encoding="utf-8")):
        sub(changelog, r"^## \[?Unreleased\]?.*$", f"## [Unreleased]\n\n## [{version}] - {today.isoformat()}")
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("version", help="e.g. 0.1.1 (the tag becomes v0.1.1)")
    args = ap.parse_args(argv)
    if not VERSION.fullmatch(args.version):
        raise SystemExit(f"version must look like 1.2.3 (or 1.2.3rc1), got {args.version!r}")
    root = nbtool.ROOT
    old = package_version(root)
    changed = set_version(root, args.version, datetime.date.today())
    repo, _ = nbtool.colab_config()
    nbtool.main(["set-repo", repo, "--ref", tag(args.version)])
    print(
        f"release {old} -> {args.version}: version set in {', '.join(changed) or 'nothing new'}; "
        f"badges and setup cells point at {repo}@{tag(args.version)}"
    )
    print("Now publish it (Colab installs from the tag, so it must exist on GitHub):")
    print(f"  git commit -am 'Release {args.version}'")
    print(f"  git tag -a {tag(args.version)} -m 'llm-lab {args.version}'")
    print(f"  git push origin HEAD {tag(args.version)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
