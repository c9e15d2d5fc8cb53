"""The bug-report helper: ``python -m llm_lab.dev.env`` (old name ``llm_lab.env``) / ``llm_lab.show_versions()``."""

import platform
import shutil
import subprocess
import sys
import types
from importlib import metadata
from pathlib import Path

import pytest
import torch

import llm_lab
from llm_lab import resources
from llm_lab.dev import env

ROOT = Path(__file__).resolve().parents[2]


def installed(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def rows() -> dict[str, str]:
    return dict(env.collect())


def test_report_holds_every_fact_a_maintainer_asks_for():
    facts = rows()
    assert facts["llm_lab"] == f"{llm_lab.__version__} ({env._short(Path(llm_lab.__file__).resolve().parent)})"
    assert facts["python"] == sys.version.replace("\n", " ")
    assert facts["platform"] == platform.platform()
    assert facts["colab"] == ("yes" if "google.colab" in sys.modules else "no")
    for label, dist in env.PACKAGES:
        assert facts[label] == installed(dist)
    torch_line = facts["torch"]
    assert torch_line.startswith(torch.__version__ + ";")
    assert ("CUDA yes" in torch_line) == torch.cuda.is_available()
    assert f"llm_lab device: {llm_lab.get_device()}" in torch_line
    if torch.cuda.is_available():
        assert torch.cuda.get_device_name(0) in torch_line
    # Every checksummed file of resources.py is checked, and the real ones pass.
    for filename, _ in [*resources.TEXTS.values(), resources.GPT2_BPE]:
        assert facts[f"data {filename}"].startswith("ok ("), facts


def test_report_is_one_aligned_block_that_show_versions_prints(capsys):
    text = env.report()
    lines = text.splitlines()
    assert lines[0] == env.HEADER
    assert len(lines) == 1 + len(env.collect())
    # Values start in one column, so the block reads as a table when pasted.
    starts = {len(line) - len(line.split("  ", 1)[1].lstrip()) for line in lines[1:]}
    assert len(starts) == 1
    llm_lab.show_versions()
    assert capsys.readouterr().out == text + "\n"


@pytest.mark.parametrize("module", ["llm_lab.dev.env", "llm_lab.env"])  # the old name: issue templates, READMEs
def test_python_dash_m_prints_the_block_without_warnings(module):
    proc = subprocess.run(
        [sys.executable, "-m", module], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    # nothing else on stderr (runpy's "found in sys.modules" warning would land in the pasted report); the old
    # name's deprecation warning alone (tests/repo/test_old_paths.py)
    said = [line.split(": ", 1)[1] for line in proc.stderr.splitlines() if not line.startswith("  ")]
    new = "llm_lab.dev.env"
    assert said == (
        [] if module == new else [f"DeprecationWarning: {module} is deprecated and removed in 0.3.0: use {new}"]
    )
    assert proc.stdout.splitlines()[0] == env.HEADER
    assert "data the-verdict.txt" in proc.stdout


def test_a_data_file_with_a_wrong_checksum_is_reported_not_raised(tmp_path, monkeypatch):
    filename, sha256 = resources.TEXTS["the-verdict"]
    (tmp_path / filename).write_text("not the verdict\n", encoding="utf-8")
    monkeypatch.setenv("LLM_LAB_DATA", str(tmp_path))  # searched first, so this copy is the one checked

    facts = rows()

    verdict = facts[f"data {filename}"]
    assert verdict.startswith("CHECKSUM FAILED")
    assert sha256 in verdict and str(tmp_path / filename) in verdict
    # The other file is still found in the real data folder and passes.
    assert facts[f"data {resources.GPT2_BPE[0]}"].startswith("ok (")
    # And the rest of the report is still there.
    assert facts["torch"].startswith(torch.__version__)


def test_a_missing_data_file_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "data_dirs", lambda: [tmp_path])
    good = resources.GPT2_BPE[0]
    shutil.copy(ROOT / "data" / good, tmp_path / good)

    facts = rows()

    assert facts[f"data {good}"] == f"ok ({tmp_path / good})"
    missing = facts["data the-verdict.txt"]
    assert missing.startswith("MISSING") and str(tmp_path) in missing


def test_a_missing_package_says_not_installed(monkeypatch):
    real_version = metadata.version

    def version(dist):
        if dist == "ipywidgets":
            raise metadata.PackageNotFoundError(dist)
        return real_version(dist)

    monkeypatch.setattr(env.metadata, "version", version)
    facts = rows()
    assert facts["ipywidgets"] == "not installed"
    assert facts["numpy"] == real_version("numpy")


def test_a_broken_device_query_is_reported_not_raised(monkeypatch):
    def broken():
        raise RuntimeError("CUDA driver initialization failed")

    monkeypatch.setattr(torch.cuda, "is_available", broken)
    line = rows()["torch"]
    assert line.startswith(metadata.version("torch"))
    assert "RuntimeError: CUDA driver initialization failed" in line


def test_colab_is_detected(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert rows()["colab"] == "yes"


def test_the_home_folder_is_shortened(monkeypatch, tmp_path):
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))
    assert env._short(tmp_path / "llm-lab" / "data") == str(Path("~") / "llm-lab" / "data")
    assert env._short("/elsewhere/data") == "/elsewhere/data"
