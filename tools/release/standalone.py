"""Run every notebook the way a Colab learner meets it: the installed wheel, each notebook alone in an empty folder.

    python -m tools.release.standalone                       # wheel into .venv-wheel (deps reused from .venv), nbval
    python -m tools.release.standalone --perturb --langs en   # the same, float32 results nudged (float_nudge.py)
    python -m tools.release.standalone --perturb --signs 1,-1 --langs en   # each notebook nudged both ways
    python -m tools.release.standalone --perturb --signs 1,-1 --signs-by-lang   # en up, zh down (test-perturbed)
    python -m tools.release.standalone --reqs tests/colab-versions.txt --python python3.13   # another set of versions

Steps: build the wheel from this tree (``build/dist``); install it, not editable, into a venv of its own; check
that ``import llm_lab`` there resolves to the installed wheel and that no path of this repository is on
``sys.path``; copy each notebook into an empty folder of its own; run nbval over them with the venv's kernel.
With ``--perturb --signs 1,-1`` each notebook is staged once per sign (folders ``en-NN_slug+1`` and
``en-NN_slug-1``) and all of them run in one pytest session: every float32 result is nudged up in one copy and
down in the other, which finds printed numbers that sit on a rounding boundary. ``--signs-by-lang`` stages each
notebook once, en with the first sign and zh with the second: the same code on the same values, so every value is
still nudged both ways, in half the runs.

The venv is tools.envs's ``wheel`` environment: without ``--reqs`` it reuses the project's ``.venv`` for the
dependencies (an overlay: it costs seconds); with ``--reqs FILE`` it is a full venv built from that requirements
file (rebuilt when the file changes). The wheel is installed again whenever its hash changes. Standard library
only (tools.course and tools.envs are too): any Python runs it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import course, envs

ROOT = Path(__file__).resolve().parents[2]
LANGS = course.LANGS
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
NUDGE = ROOT / "tools" / "release" / "float_nudge.py"
PIP = ["-m", "pip", "--disable-pip-version-check", "-q"]

SIGN_FILE = ".float-nudge-sign"  # in a staged notebook's folder: which way its kernel nudges (1 or -1)
STARTUP = """\
# Written by tools/release/standalone.py --perturb: nudge float32 results in this kernel (tools/release/float_nudge.py).
import importlib.util as _ilu
import pathlib as _pl

_spec = _ilu.spec_from_file_location("llm_lab_float_nudge", {path!r})
_mod = _ilu.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
_sign = _pl.Path({sign_file!r})  # relative: nbval starts each kernel in its notebook's folder
_mod.install(int(_sign.read_text()) if _sign.exists() else 1)
del _ilu, _pl, _spec, _mod, _sign
"""

ISOLATION_CHECK = """\
import json, sys
import llm_lab
from importlib.metadata import version
print(json.dumps({"file": llm_lab.__file__, "path": sys.path, "prefix": sys.prefix,
                  "finders": [type(f).__name__ for f in sys.meta_path], "version": version("llm-lab-course")}))
"""


def run(cmd, **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def build_wheel(python: Path, dist: Path) -> Path:
    """Build the (pure-Python) wheel from this tree with ``python``; return its path."""
    shutil.rmtree(dist, ignore_errors=True)
    # setuptools >= 70.1 builds wheels by itself: then skip the isolated build env (saves a download)
    probe = "import setuptools, sys; sys.exit(tuple(map(int, setuptools.__version__.split('.')[:2])) < (70, 1))"
    local = subprocess.run([str(python), "-c", probe], capture_output=True).returncode == 0
    run([python, *PIP, "wheel", "--no-deps", *(["--no-build-isolation"] if local else []), "-w", dist, ROOT])
    wheels = sorted(dist.glob("llm_lab_course-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {dist}, found {[w.name for w in wheels]}")
    return wheels[0]


def verify_isolation(python: Path, workdir: Path, wheel: Path) -> None:
    """``import llm_lab`` must find the wheel's copy in the venv, and nothing of this repository."""
    out = subprocess.run(
        [str(python), "-c", ISOLATION_CHECK], cwd=workdir, check=True, capture_output=True, text=True
    ).stdout
    info = json.loads(out.strip().splitlines()[-1])
    problems = []
    if not Path(info["file"]).resolve().is_relative_to(Path(info["prefix"]).resolve()):
        problems.append(f"llm_lab imported from {info['file']}, outside the venv {info['prefix']}")
    root = str(ROOT)
    # a venv's site-packages inside the clone is fine (the dependencies); the source tree is not
    leaked = [
        p
        for p in info["path"]
        if p
        and Path(p).resolve().is_relative_to(ROOT)
        and Path(p).name != "site-packages"
        and not Path(p).resolve().is_relative_to(info["prefix"])
    ]
    if leaked:
        problems.append(f"paths of the repository {root} on sys.path: {leaked}")
    editable = [f for f in info["finders"] if "editable" in f.lower()]
    if editable:
        problems.append(f"an editable-install finder is active: {editable}")
    if not wheel.name.startswith(f"llm_lab_course-{info['version']}-"):
        problems.append(f"installed version {info['version']} is not the wheel {wheel.name}")
    if problems:
        raise SystemExit("standalone: not isolated from the repository:\n  " + "\n  ".join(problems))
    print(f"standalone: llm_lab {info['version']} from {info['file']}", flush=True)


def stage(notebooks: list[Path], where: Path, signs: tuple[int, ...] = (), by_lang: bool = False) -> list[Path]:
    """Copy each notebook into an empty folder of its own, as a learner opens one on Colab.

    With ``signs`` (for ``--perturb``), one copy per sign, its folder holding the sign its kernel nudges with;
    with ``by_lang``, one copy only, the sign taken in turn by language (en the first sign, zh the second): the
    languages run the same code on the same values (tests/notebooks/test_notebooks.py), so across them every value is
    still nudged each way, at half the runs.
    """
    staged = []
    for nb in notebooks:
        mine = signs[LANGS.index(nb.parent.name) % len(signs)] if by_lang and signs else None
        for sign in (mine,) if mine is not None else signs or (None,):
            version = "instructor-" if nb.parent.parent.name == "instructor" else ""
            folder = where / (f"{version}{nb.parent.name}-{nb.stem}" + ("" if sign is None else f"{sign:+d}"))
            folder.mkdir(parents=True)
            if sign is not None:
                (folder / SIGN_FILE).write_text(f"{sign}\n")
            staged.append(Path(shutil.copy2(nb, folder / nb.name)))
    return staged


def parse_signs(text: str) -> tuple[int, ...]:
    """``"1,-1"`` -> ``(1, -1)``: the nudge directions, each 1 (float_nudge's hashed sign) or -1 (flipped)."""
    try:
        signs = tuple(int(part) for part in text.split(","))
    except ValueError:
        signs = ()
    if not signs or any(s not in (1, -1) for s in signs) or len(set(signs)) != len(signs):
        raise argparse.ArgumentTypeError(f"--signs takes 1, -1 or 1,-1, got {text!r}")
    return signs


VERSION_DIRS = {v: course.version_dir(v) for v in course.VERSIONS}


def select(langs: list[str], only: str | None, versions=("learner",)) -> list[Path]:
    """The stored notebooks of ``versions`` (learner: notebooks/{lang}, instructor: notebooks/instructor/{lang})."""
    try:
        found = course.select(only, versions=versions, langs=langs)
    except ValueError as exc:
        raise SystemExit(f"standalone: {exc}") from None
    if not found:
        raise SystemExit(f"no notebooks for versions={list(versions)} langs={langs} only={only!r}")
    return found


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--reqs", help="a full venv (.venv-wheel-<name>) from this requirements file, e.g. Colab's versions"
    )
    ap.add_argument("--python", help="interpreter for a --reqs venv (default: this one)")
    ap.add_argument("--main-venv", help="without --reqs: the venv whose packages .venv-wheel reuses (default .venv)")
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--only", help="comma-separated notebook numbers, e.g. 01,06")
    ap.add_argument(
        "--versions",
        default="learner,instructor",
        help="which stored versions: learner (notebooks/LANG), instructor (notebooks/instructor/LANG)",
    )
    ap.add_argument(
        "--skip", default="", help="version/lang pairs left out, e.g. instructor/en (test-perturbed runs it)"
    )
    ap.add_argument("--perturb", action="store_true", help="nudge float32 results in the kernels (float_nudge.py)")
    ap.add_argument(
        "--signs",
        type=parse_signs,
        default=(1,),
        help="with --perturb: nudge directions, 1 (hashed), -1 (flipped) or 1,-1 (each notebook both ways)",
    )
    ap.add_argument(
        "--signs-by-lang",
        action="store_true",
        help="with --perturb: each notebook once, the sign in turn by language (en 1, zh -1)",
    )
    ap.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    return ap.parse_args(argv)


def chosen(args: argparse.Namespace) -> list[Path]:
    """The notebooks ``--langs``, ``--only`` and ``--versions`` select, less the ``--skip`` version/lang pairs."""
    notebooks = select(args.langs.split(","), args.only, tuple(args.versions.split(",")))
    skip = {tuple(pair.split("/")) for pair in args.skip.split(",") if pair}
    bad = [p for p in skip if len(p) != 2 or p[0] not in VERSION_DIRS or p[1] not in LANGS]
    if bad:
        raise SystemExit(f"--skip: expected version/lang pairs such as instructor/en, got {sorted(bad)}")
    return [p for p in notebooks if not any(p.parent == VERSION_DIRS[v] / lang for v, lang in skip)]


def kernel_env(tmp: Path, perturb: bool) -> dict[str, str]:
    """The environment nbval's kernels run in: nothing of this checkout, the data from the wheel; with ``perturb``,
    an IPython profile in ``tmp`` whose startup file installs the float32 nudge."""
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    env.pop("LLM_LAB_DATA", None)  # the data must come from the wheel
    if perturb:
        ipython_dir = tmp / "ipython"
        startup = ipython_dir / "profile_default" / "startup"
        startup.mkdir(parents=True)
        nudge = Path(shutil.copy2(NUDGE, tmp / "float_nudge.py"))
        (startup / "00-float-nudge.py").write_text(STARTUP.format(path=str(nudge), sign_file=SIGN_FILE))
        env["IPYTHONDIR"] = str(ipython_dir)
    return env


def nbval_command(python: Path, tmp: Path, staged: list[Path], pytest_args: list[str]) -> list[str]:
    """pytest with nbval over the ``staged`` notebooks, in the venv's ``python`` and its own kernel, rooted in
    ``tmp`` (so no configuration of this checkout applies)."""
    return [
        str(python),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp),
        "--nbval",
        "--nbval-current-env",
        "--nbval-kernel-startup-timeout",
        "300",
        "--nbval-sanitize-with",
        str(SANITIZE),
        *pytest_args,
        *map(str, staged),
    ]


def main(argv=None) -> int:
    args = parse_args(argv)
    notebooks = chosen(args)
    env = envs.resolve("wheel", reqs=args.reqs, python=args.python, main_venv=args.main_venv)
    wheel = build_wheel(Path(sys.executable), ROOT / "build" / "dist")
    python = envs.ensure(env, args.main_venv, wheel=wheel)

    with tempfile.TemporaryDirectory(prefix="llm-lab-standalone-") as tmp:
        tmp = Path(tmp)
        empty = tmp / "empty"
        empty.mkdir()
        verify_isolation(python, empty, wheel)
        staged = stage(notebooks, tmp / "notebooks", args.signs if args.perturb else (), args.signs_by_lang)
        kernels = kernel_env(tmp, args.perturb)
        signs = ", ".join(f"{s:+d}" for s in args.signs)
        what = f"float32 results nudged with sign {signs}, " if args.perturb else ""
        print(
            f"standalone: nbval over {len(staged)} notebooks ({what}installed wheel, one empty folder each)", flush=True
        )
        cmd = nbval_command(python, tmp, staged, args.pytest_args)
        return subprocess.run(cmd, cwd=tmp / "notebooks", env=kernels).returncode


if __name__ == "__main__":
    sys.exit(main())
