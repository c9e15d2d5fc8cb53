"""The wheel users install holds every module and every data file the code opens (issue: exercises once missing);
installed, it answers to every import path and ``python -m`` name the notebooks, docs and Colab cells use."""

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import llm_lab
import llm_lab.resources as resources

ROOT = Path(__file__).resolve().parents[2]

# The front door (llm_lab/README.md): the book's modules and the helpers they use stay at the top level ...
BOOK = ("example", "attention", "masks", "multihead", "tokenizer", "dataset", "kv_cache")
HELPERS = ("runtime", "resources", "_checks")
# ... the course's machinery lives in subpackages; each old module path is an alias of the moved module for one
# release (notebooks, Colab cells, tools/, the Makefile and the docs still use them).
SUBPACKAGES = {
    "explore": ("plotting", "widgets", "heads", "induction"),
    "bench": ("variants", "benchmark"),
    "dev": ("env", "gpu_check"),
}
NEW = {"explore": ("circuit",)}  # modules born in a subpackage: no old path, no shim
MOVED = {f"llm_lab.{name}": f"llm_lab.{sub}.{name}" for sub, names in SUBPACKAGES.items() for name in names}
MOVED_NAMES = tuple(old.split(".")[1] for old in MOVED)
SHIM_HELPER = "_old_path"  # what every shim calls: warn, then be the moved module
ENTRY_POINTS = ("env", "gpu_check", "benchmark")  # python -m llm_lab.<name>, and the same under the new path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    # Built from a copy of the package's sources: setuptools reuses the tree's build/lib, whose stale files (a
    # module since deleted, a README since dropped from package_data) would otherwise ship and pass these tests.
    src = tmp_path_factory.mktemp("src")
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("llm_lab", "data"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("llm_lab_course-*.whl")
    with zipfile.ZipFile(path) as zf:
        yield {
            "names": set(zf.namelist()),
            "path": path,
            "metadata": zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode(),
        }


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """The wheel installed (not editable) into a folder of its own; ``run(args)`` runs this Python there.

    ``python -S`` skips site-packages' ``.pth`` files, so the editable install of this tree is not found; the
    dependencies come from this venv's site-packages, after the installed wheel on ``PYTHONPATH``. The working
    folder is empty, so nothing of this repository is on ``sys.path``.
    """
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(wheel["path"]),
        ],
        check=True,
        capture_output=True,
    )
    env = {
        "PYTHONPATH": f"{target}:{sysconfig.get_paths()['purelib']}",
        "PATH": "/usr/bin:/bin",
        "MPLBACKEND": "Agg",
        "HOME": str(tmp_path_factory.mktemp("home")),
    }
    cwd = tmp_path_factory.mktemp("cwd")

    def run(args, timeout=120):
        return subprocess.run(
            [sys.executable, "-S", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    run.package = target / "llm_lab"
    return run


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


def test_the_subpackages_and_the_package_readme_are_in_the_wheel(wheel):
    expected = {"llm_lab/README.md", "llm_lab/__init__.py"}
    expected |= {f"llm_lab/{name}.py" for name in (*BOOK, *HELPERS, *MOVED_NAMES, SHIM_HELPER)}  # old paths: shims
    for sub, names in SUBPACKAGES.items():
        expected |= {f"llm_lab/{sub}/__init__.py", *(f"llm_lab/{sub}/{name}.py" for name in names)}
    expected |= {f"llm_lab/{sub}/{name}.py" for sub, names in NEW.items() for name in names}
    missing = sorted(expected - wheel["names"])
    assert not missing, f"missing from the wheel: {missing}"


def test_the_top_level_holds_the_book_its_helpers_and_the_shims_only():
    # a new module of course machinery goes into a subpackage, not next to masks.py
    top = {p.stem for p in (ROOT / "llm_lab").glob("*.py")} - {"__init__"}
    want = {*BOOK, *HELPERS, *MOVED_NAMES, SHIM_HELPER}
    assert top == want, sorted(top ^ want)
    for name in MOVED_NAMES:  # a shim holds no code of its own and says where the code went and when it goes
        text = (ROOT / "llm_lab" / f"{name}.py").read_text(encoding="utf-8")
        assert text.startswith(f'"""Moved to :mod:`{MOVED[f"llm_lab.{name}"]}`') and "removed in the next" in text
        assert "DeprecationWarning" in text and len(text.splitlines()) <= 22, name
    subs = {p.parent.name for p in (ROOT / "llm_lab").glob("*/__init__.py")}
    assert subs == {*SUBPACKAGES, "exercises"}


def test_the_package_readme_names_every_module_and_subpackage():
    text = (ROOT / "llm_lab" / "README.md").read_text(encoding="utf-8")
    for name in (*BOOK, *HELPERS):
        assert f"`{name}.py`" in text, name
    for sub, names in SUBPACKAGES.items():
        assert f"`{sub}/`" in text and all(f"`{name}`" in text for name in names + NEW.get(sub, ())), sub
    assert "`exercises/`" in text
    # the reading order: the book's modules are listed in the order the notebooks build them
    book_rows = [line for line in text.splitlines() if line.startswith("| [`")][: len(BOOK) - 1]
    assert [re.search(r"\[`(\w+)\.py`\]", row).group(1) for row in book_rows] == [
        "example",
        "attention",
        "masks",
        "multihead",
        "tokenizer",
        "kv_cache",
    ]


def test_every_old_path_imports_from_the_installed_wheel(installed):
    code = f"""if True:
        import importlib, json, sys
        import llm_lab
        loaded = sorted(m for m in sys.modules if m.startswith("llm_lab."))  # import llm_lab: the book only
        moved = {MOVED!r}
        same = {{}}
        for old, new in moved.items():  # the old name first, in a fresh interpreter, as a notebook does
            module = importlib.import_module(old)
            same[old] = [module is importlib.import_module(new), getattr(llm_lab, old.split(".")[1]) is module,
                         module.__name__, module.__file__]
        from llm_lab.heads import load_trained
        from llm_lab.plotting import heatmap
        from llm_lab.variants import CONTESTANTS
        from llm_lab.widgets import mask_explorer
        from llm_lab import benchmark, heads, induction
        import llm_lab.explore.heads, llm_lab.explore.plotting, llm_lab.bench.variants, llm_lab.explore.widgets
        names = [load_trained is llm_lab.explore.heads.load_trained, heatmap is llm_lab.explore.plotting.heatmap,
                 CONTESTANTS is llm_lab.bench.variants.CONTESTANTS,
                 mask_explorer is llm_lab.explore.widgets.mask_explorer,
                 benchmark.measure is llm_lab.bench.benchmark.measure, heads.TRAINED_HEADS[0],
                 induction.InductionConfig().vocab_size, heads.load_trained().model.training]
        top = {{m: importlib.import_module(f"llm_lab.{{m}}").__file__ for m in {(*BOOK, *HELPERS)!r}}}
        print(json.dumps({{"file": llm_lab.__file__, "loaded": loaded, "same": same, "names": names, "top": top}}))
    """
    proc = installed(["-c", code], timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    package = installed.package
    assert out["file"] == str(package / "__init__.py")  # the wheel's copy, not this tree
    assert not [m for m in out["loaded"] if m.split(".")[1] in {*SUBPACKAGES, *MOVED_NAMES}], out["loaded"]
    for old, (is_new, is_attribute, name, file) in out["same"].items():
        sub, leaf = MOVED[old].split(".")[1:]
        assert is_new and is_attribute and name == MOVED[old], old
        assert file == str(package / sub / f"{leaf}.py"), old
    assert out["names"] == [True, True, True, True, True, "heads-verdict.pt", 64, False]
    assert out["top"] == {m: str(package / f"{m}.py") for m in (*BOOK, *HELPERS)}
    # nothing on stderr but the old paths' DeprecationWarnings (each line and the source line echoed under it)
    lines = proc.stderr.splitlines()
    assert all("DeprecationWarning: llm_lab." in line or line.startswith("  ") for line in lines), proc.stderr


def test_the_installed_wheel_draws_chinese_figures_with_its_own_font(installed):
    """As on Colab, where no CJK font is installed: the wheel's font draws every Chinese glyph, with no warning."""
    code = """if True:
        import io, json, warnings
        import matplotlib.pyplot as plt
        import torch
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from llm_lab.explore.plotting import heatmap, tile_diagram, use_figure_font
            fig, (left, right) = plt.subplots(1, 2)
            heatmap(torch.eye(2), labels=["a", "b"], title="因果注意力权重", ax=left, lang="zh")
            tile_diagram(8, 4, ax=right, lang="zh")
            fig.savefig(io.BytesIO(), format="png")
        from matplotlib import font_manager
        fonts = font_manager.fontManager._find_fonts_by_props(font_manager.FontProperties())
        print(json.dumps({"warnings": [str(w.message) for w in caught], "family": use_figure_font(),
                          "fonts": [str(f) for f in fonts]}))
    """
    proc = installed(["-c", code], timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["warnings"] == [] and proc.stderr == "", (out["warnings"], proc.stderr)
    assert out["fonts"][-1] == str(installed.package / "_data" / resources.FIGURE_FONT[0])
    assert out["fonts"][0].endswith("DejaVuSans.ttf"), out["fonts"]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_python_dash_m_name_runs_from_the_installed_wheel(installed, name):
    sub = next(s for s, names in SUBPACKAGES.items() if name in names)
    shim = (ROOT / "llm_lab" / f"{name}.py").read_text(encoding="utf-8").splitlines()
    at = next(n for n, line in enumerate(shim, 1) if "_old_path.alias(" in line)  # the shim's own line warns
    for module in (f"llm_lab.{name}", f"llm_lab.{sub}.{name}"):  # the old name (docs, Makefile, Colab), the new
        args = ["-m", module] + ([] if name == "env" else ["--help"])
        proc = installed(args)
        # no runpy double-import warning; the old name says it is deprecated, naming the new one
        warned = f"DeprecationWarning: {module} is deprecated and removed in 0.3.0: use llm_lab.{sub}.{name}"
        assert proc.returncode == 0, (module, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if not line.startswith("  ")]  # the echoed source line
        assert lines == ([f"{installed.package / (name + '.py')}:{at}: {warned}"] if module.count(".") == 1 else [])
        if name == "env":
            assert re.search(
                rf"^llm_lab +{re.escape(llm_lab.__version__)} \({re.escape(str(installed.package))}\)$",
                proc.stdout,
                re.M,
            ), proc.stdout
            assert f"ok ({installed.package / '_data' / 'the-verdict.txt'})" in proc.stdout
        else:
            assert proc.stdout.startswith(f"usage: python -m llm_lab.{sub}.{name}"), (module, proc.stdout[:200])


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
    requires = [
        Requirement(line.split(":", 1)[1].strip())
        for line in wheel["metadata"].splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = {r.name: r for r in requires if not r.marker}
    assert {"torch", "numpy", "tiktoken", "matplotlib", "ipywidgets"} <= set(core)
    # Colab today: torch 2.11, ipywidgets 7.7.1; the wheel must not pin torch or demand ipywidgets 8
    assert core["torch"].specifier.contains("2.11.0") and core["torch"].specifier.contains("2.13.0")
    assert core["ipywidgets"].specifier.contains("7.7.1") and core["ipywidgets"].specifier.contains("8.1.9")
