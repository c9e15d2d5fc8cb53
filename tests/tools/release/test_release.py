"""One version, one tag: every Colab badge and setup cell installs the package version's release tag."""

import json
import re
import shutil
from pathlib import Path

import pytest

import llm_lab
from tools.authoring import nbtool
from tools.release import release

ROOT = Path(__file__).resolve().parents[3]

NOTEBOOKS = (
    sorted((ROOT / "notebooks").glob("[a-z][a-z]/[0-9][0-9]_*.ipynb"))  # learner versions
    + sorted((ROOT / "notebooks" / "instructor").glob("[a-z][a-z]/[0-9][0-9]_*.ipynb"))
    + [ROOT / nbtool.GPU_NOTEBOOK]
)
COLAB_REF = re.compile(r"colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/blob/([^/\s)]+)/")
GIT_REF = re.compile(r"git\+https://github\.com/([\w.-]+/[\w.-]+)@([^\s\"')]+)")


def refs_in(text: str) -> set[tuple[str, str]]:
    found = {(m[1], m[2]) for m in COLAB_REF.finditer(text)} | {(m[1], m[2]) for m in GIT_REF.finditer(text)}
    found |= {(m[1], m[2]) for m in re.finditer(r'REPO, REF = "([\w.-]+/[\w.-]+)", "([^"]+)"', text)}
    return found


def nb_text(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])


def test_versions_agree():
    version = release.package_version(ROOT)
    assert llm_lab.__version__ == version
    assert nbtool.colab_config()[1] == release.tag(version), "pyproject [tool.llm-lab] ref must be v<version>"
    citation = ROOT / "CITATION.cff"
    if citation.exists():
        assert re.search(rf'(?m)^version: "?{re.escape(version)}"?$', citation.read_text())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_notebook_links_name_the_version_tag(path):
    repo, tag = nbtool.colab_config()[0], release.tag(release.package_version(ROOT))
    found = refs_in(nb_text(path))
    assert found, "no badge or install line found"
    assert found == {(repo, tag)}, f"links name {sorted(found)}, expected only {repo}@{tag}: run make release"


def test_readmes_name_the_version_tag():
    repo, tag = nbtool.colab_config()[0], release.tag(release.package_version(ROOT))
    for name in ("README.md", "README.zh-CN.md"):
        found = refs_in((ROOT / name).read_text(encoding="utf-8"))
        assert found == {(repo, tag)}, f"{name}: links name {sorted(found)}, expected only {repo}@{tag}"


def test_release_sets_version_and_repoints_everything(tmp_path, monkeypatch, capsys):
    for sub in ("notebooks/en", "notebooks/zh", "notebooks/instructor/en", "notebooks/instructor/zh", "llm_lab"):
        (tmp_path / sub).mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(ROOT / "llm_lab" / "__init__.py", tmp_path / "llm_lab" / "__init__.py")
    (tmp_path / "CITATION.cff").write_text('cff-version: 1.2.0\nversion: "0.1.0"\ndate-released: "2026-01-01"\n')
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n\n- new things\n\n## [0.1.0]\n")
    monkeypatch.setattr(nbtool, "ROOT", tmp_path)
    monkeypatch.setattr(release.nbtool, "ROOT", tmp_path)
    repo, ref = nbtool.colab_config()
    src = tmp_path / "01_demo.nbsrc"
    src.write_text("%% title\nA\n%% title zh\nB\n%% code\nprint(1)\n")
    for lang in nbtool.LANGS:
        for version in ("learner", "instructor"):
            nbtool.write(nbtool.build_one(src, lang, repo, ref, version), nbtool.out_path(src, lang, version))
    (tmp_path / "README.md").write_text(
        f"pip install 'x @ git+https://github.com/{repo}@{ref}'\n"
        f"[gpu](https://colab.research.google.com/github/{repo}/blob/{ref}/tools/x.ipynb)\n"
    )
    monkeypatch.setattr(nbtool, "SRC", tmp_path)

    assert release.main(["0.2.0"]) == 0
    out = capsys.readouterr().out
    assert "git tag -a v0.2.0" in out and "git push origin HEAD v0.2.0" in out
    assert release.package_version(tmp_path) == "0.2.0"
    assert '__version__ = "0.2.0"' in (tmp_path / "llm_lab" / "__init__.py").read_text()
    assert nbtool.colab_config() == (repo, "v0.2.0")
    assert 'version: "0.2.0"' in (tmp_path / "CITATION.cff").read_text()
    changelog = (tmp_path / "CHANGELOG.md").read_text()
    assert re.search(r"## \[Unreleased\]\n\n## \[0\.2\.0\] - \d{4}-\d\d-\d\d\n\n- new things", changelog)
    for lang in nbtool.LANGS:
        for folder in (tmp_path / "notebooks", tmp_path / "notebooks" / "instructor"):
            assert refs_in(nb_text(folder / lang / "01_demo.ipynb")) == {(repo, "v0.2.0")}
    assert refs_in(nb_text(tmp_path / nbtool.GPU_NOTEBOOK)) == {(repo, "v0.2.0")}
    assert refs_in((tmp_path / "README.md").read_text()) == {(repo, "v0.2.0")}


@pytest.mark.parametrize("bad", ["1.2", "v1.2.3", "1.2.3-beta", ""])
def test_release_rejects_a_malformed_version(bad):
    with pytest.raises(SystemExit, match="must look like 1.2.3"):
        release.main([bad])
