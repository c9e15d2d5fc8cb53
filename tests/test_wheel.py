"""The wheel users install holds every module and every data file the code opens (issue: exercises once missing)."""

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import llm_lab.resources as resources

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(out), str(ROOT)], check=True, capture_output=True)
    (path,) = out.glob("llm_lab_course-*.whl")
    with zipfile.ZipFile(path) as zf:
        yield {"names": set(zf.namelist()), "metadata": zf.read(next(n for n in zf.namelist()
                                                                     if n.endswith(".dist-info/METADATA"))).decode()}


def registered_files(obj=None) -> set[str]:
    """File names of every (file, sha256) pair registered in llm_lab.resources, however nested."""
    found = set()
    # the registries are the module's UPPER_CASE constants
    items = [v for k, v in vars(resources).items() if k.isupper()] if obj is None else [obj]
    for value in items:
        if isinstance(value, dict):
            for v in value.values():
                found |= registered_files(v)
        elif isinstance(value, tuple | list):
            if len(value) == 2 and all(isinstance(v, str) for v in value) and re.fullmatch(r"[0-9a-f]{64}", value[1]):
                found.add(value[0])
            else:
                for v in value:
                    if isinstance(v, tuple | list | dict):
                        found |= registered_files(v)
    return found


def test_every_module_is_in_the_wheel(wheel):
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "llm_lab").rglob("*.py") if "__pycache__" not in p.parts}
    assert "llm_lab/exercises/__init__.py" in modules
    missing = sorted(modules - wheel["names"])
    assert not missing, f"modules missing from the wheel: {missing}"


def test_every_data_file_is_in_the_wheel(wheel):
    data = {f"llm_lab/_data/{p.name}" for p in (ROOT / "data").iterdir() if p.is_file()}
    missing = sorted(data - wheel["names"])
    assert not missing, f"data files missing from the wheel: {missing}"


def test_every_file_the_code_opens_is_shipped(wheel):
    opened = registered_files()
    assert {"the-verdict.txt", "gpt2.tiktoken"} <= opened, opened
    missing = sorted(f for f in opened if f"llm_lab/_data/{f}" not in wheel["names"])
    assert not missing, f"files llm_lab opens but the wheel lacks: {missing}"


def test_shipped_files_lists_every_registered_file():
    # the bug-report block (python -m llm_lab.env) checks resources.shipped_files(): it must miss none
    assert {f for f, _ in resources.shipped_files()} == registered_files()


def test_dependencies_fit_colab(wheel):
    requires = [Requirement(line.split(":", 1)[1].strip()) for line in wheel["metadata"].splitlines()
                if line.startswith("Requires-Dist:")]
    core = {r.name: r for r in requires if not r.marker}
    assert {"torch", "numpy", "tiktoken", "matplotlib", "ipywidgets"} <= set(core)
    # Colab today: torch 2.11, ipywidgets 7.7.1; the wheel must not pin torch or demand ipywidgets 8
    assert core["torch"].specifier.contains("2.11.0") and core["torch"].specifier.contains("2.13.0")
    assert core["ipywidgets"].specifier.contains("7.7.1") and core["ipywidgets"].specifier.contains("8.1.9")
