"""What a Colab learner meets: the setup cell (one clear sentence when the install fails, silence elsewhere),
and notebook text that never sends them to make targets or .venv paths without the Colab way."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.authoring import nbtool

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[a-z][a-z]/[0-9][0-9]_*.ipynb"))


def setup_cell(lang: str) -> str:
    path = next(p for p in NOTEBOOKS if p.parent.name == lang)
    cell = json.loads(path.read_text(encoding="utf-8"))["cells"][1]
    return "".join(cell["source"])


def run_as_colab(code: str) -> subprocess.CompletedProcess:
    """Run a cell's code in a fresh Python that looks like Colab (a google.colab module is imported)."""
    prelude = "import sys, types\nsys.modules['google.colab'] = types.ModuleType('google.colab')\n"
    # git may only use file://, so cloning from GitHub fails at once, online or offline: a missing release
    env = dict(os.environ, GIT_ALLOW_PROTOCOL="file", PIP_DISABLE_PIP_VERSION_CHECK="1", GIT_TERMINAL_PROMPT="0")
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("lang", nbtool.LANGS)
def test_failed_install_prints_one_sentence_in_the_notebooks_language(lang):
    repo, ref = nbtool.colab_config()
    code = setup_cell(lang)
    assert code == nbtool.setup_code(repo, ref, lang)
    result = run_as_colab(code)
    assert result.returncode == 0, result.stderr  # no traceback
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines == [nbtool.SETUP_FAILED[lang].format(repo=repo, ref=ref)], result.stdout
    assert ref in lines[0] and repo in lines[0]
    if lang == "zh":
        assert re.search(r"[\u4e00-\u9fff]", lines[0])


def test_setup_cell_is_short_and_does_nothing_outside_colab():
    for lang in nbtool.LANGS:
        code = setup_cell(lang)
        assert len(code.splitlines()) <= 10
        probe = textwrap.dedent("""
            import subprocess
            def refuse(*a, **k):
                raise AssertionError("the setup cell ran a command outside Colab")
            subprocess.run = refuse
        """)
        result = subprocess.run([sys.executable, "-c", probe + code], capture_output=True, text=True, timeout=60)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


MAKE_OR_VENV = re.compile(r"`make [\w-]+|\.venv\b")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_make_or_venv_without_the_colab_way(path):
    """A cell that names a make target or .venv must also give the command that works on Colab."""
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        text = "".join(cell["source"])
        if MAKE_OR_VENV.search(text):
            assert "python -m llm_lab." in text, f"cell {i} sends learners to make/.venv only: {text[:200]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_data_is_not_said_to_come_from_the_repository_only(path):
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"repository's `data/`|仓库的 `data/`", text):
            assert re.search(r"package|Colab|软件包", text), f"cell {i}: data said to live in the repository only"
