"""The project's virtual environments, all made one way: ``python -m tools.envs ensure NAME`` (the Makefile does).

Each environment is a row of :data:`ENVS`: where it lives, which requirement files go into it (in order),
whether it reuses another venv's packages, and whether this checkout goes in editable. A row that reuses
another venv (an *overlay*) gets a ``.pth`` line pointing at that venv's site-packages, so ``.venv-ipyw7``,
which changes only ipywidgets, or ``.venv-wheel``, which adds only the built wheel, costs seconds instead of a
second torch; the other venv's own ``.pth`` files (its editable install) are not processed.

One stamp per venv, ``.llm-lab-env.json``: the interpreter's version, the overlay, and the sha256 of each
requirement file and of ``pyproject.toml`` as they were when installed. ``ensure`` brings a venv up to date:

- rebuilt from nothing when its interpreter or its overlay changed (or the overlay's own requirements did);
- otherwise ``pip install -r`` again only for the files whose hash changed (in one pip run), then the editable
  install if ``pyproject.toml`` changed;
- nothing at all when every hash matches (milliseconds: ``make`` calls it before each target).

A full venv made before this stamp existed is adopted: kept, its requirement files installed once more (pip
finds them satisfied), then stamped; an overlay is rebuilt.

    python -m tools.envs list                          # every environment: path, state, what it is for
    python -m tools.envs ensure widgets7               # build or update it; prints its python
    python -m tools.envs run site -- python -m pytest  # ensure, then run with its bin/ first on PATH
    python -m tools.envs ensure torch --torch 2.11.0   # .venv-torch2.11.0: requirements.txt with that torch
    python -m tools.envs ensure wheel --reqs tests/colab-versions.txt --python python3.13   # .venv-wheel-colab-versions

Only the standard library: ``make setup`` runs it with the system Python before any venv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = ".llm-lab-env.json"
PIP = ("-m", "pip", "install", "-q", "--disable-pip-version-check")


@dataclass(frozen=True)
class Env:
    """One virtual environment. ``path`` and ``layers`` are relative to the repository root (or absolute)."""

    name: str
    path: str
    layers: tuple[str, ...] = ()
    overlay: str | None = None  # the name of the env whose site-packages this one reuses
    editable: bool = True  # pip install --no-deps -e . (this checkout)
    python: str | None = None  # the interpreter that makes it; None: the overlay's, else the one running this
    wheel_deps: bool = False  # install what a wheel given to ensure() declares (a full venv); else --no-deps only
    purpose: str = ""

    @property
    def dir(self) -> Path:
        return (ROOT / self.path).resolve()

    @property
    def bin(self) -> Path:
        return self.dir / ("Scripts" if os.name == "nt" else "bin")

    @property
    def exe(self) -> Path:
        return self.bin / ("python.exe" if os.name == "nt" else "python")


_MAIN = ("requirements.txt",)
_INSTRUCTOR = (*_MAIN, "requirements-instructor.txt")
ENVS: dict[str, Env] = {
    env.name: env
    for env in (
        Env("main", ".venv", _MAIN, purpose="the lab, the unit tests, nbval (make setup)"),
        Env(
            "instructor",
            ".venv",
            _INSTRUCTOR,
            purpose="main + nbgrader: student copies, grading (make instructor-setup)",
        ),
        Env(
            "browser",
            ".venv",
            (*_INSTRUCTOR, "requirements-browser.txt"),
            purpose="instructor + Playwright's Python package (make test-browser)",
        ),
        Env(
            "hub",
            ".venv",
            (*_INSTRUCTOR, "requirements-hub.txt"),
            purpose="instructor + JupyterHub (make hub, test-hub)",
        ),
        Env(
            "widgets7",
            ".venv-ipyw7",
            ("tests/requirements-ipywidgets7.txt",),
            overlay="main",
            purpose="the explorers' tests under ipywidgets 7.7.1, Colab's version (make widgets7)",
        ),
        Env(
            "wheel",
            ".venv-wheel",
            overlay="main",
            editable=False,
            purpose="the built wheel, installed, for nbval on what learners get (make test-wheel, test-perturbed)",
        ),
        Env(
            "site",
            ".venv-site",
            ("requirements-site.txt",),
            editable=False,
            purpose="Sphinx + MyST-NB for the static site (make site, test-site)",
        ),
        Env(
            "torch",
            ".venv-torch<TORCH>",
            ("build/envs/torch-<TORCH>.txt",),
            purpose="requirements.txt, nbgrader and jsonschema with another torch (make test-torch TORCH=2.11.0)",
        ),
    )
}


def torch_env(version: str) -> Env:
    """The ``torch`` row for one torch version; writes its requirements (requirements.txt with that torch)."""
    if not version or any(c not in "0123456789.+abcdefghijklmnopqrstuvwxyz" for c in version):
        raise SystemExit(f"--torch: expected a torch version such as 2.11.0, got {version!r}")
    lines = [
        f"torch=={version}" if line.startswith("torch==") else line
        for line in (ROOT / "requirements.txt").read_text().splitlines()
    ]
    lines += [
        line
        for line in (ROOT / "requirements-instructor.txt").read_text().splitlines()
        if line.startswith(("nbgrader==", "jsonschema=="))
    ]
    reqs = ROOT / "build" / "envs" / f"torch-{version}.txt"
    reqs.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if not reqs.is_file() or reqs.read_text() != text:
        reqs.write_text(text)
    return replace(ENVS["torch"], path=f".venv-torch{version}", layers=(str(reqs.relative_to(ROOT)),))


def reqs_env(reqs: str, python: str | None) -> Env:
    """The ``wheel`` row as a full venv of its own, from one requirements file (e.g. Colab's versions)."""
    if not (ROOT / reqs).is_file():
        raise SystemExit(f"--reqs: {reqs} is not a file")
    return Env(
        "wheel",
        f".venv-wheel-{Path(reqs).stem}",
        (reqs,),
        editable=False,
        python=python,
        wheel_deps=True,
        purpose=f"the built wheel on the versions in {reqs}",
    )


def with_main(env: Env, main_venv: str | None) -> Env:
    """``env`` living in ``main_venv`` (make's VENV) instead of ``.venv``, for the rows that share the main venv."""
    if not main_venv or main_venv == ".venv" or env.path != ".venv":
        return env
    return replace(env, path=main_venv)


def resolve(
    name: str,
    *,
    torch: str | None = None,
    reqs: str | None = None,
    python: str | None = None,
    main_venv: str | None = None,
) -> Env:
    if name not in ENVS:
        raise SystemExit(f"unknown environment {name!r}: the environments are {', '.join(ENVS)}")
    if name == "torch":
        if not torch:
            raise SystemExit("the torch environment needs --torch VERSION, e.g. --torch 2.11.0")
        return torch_env(torch)
    if reqs:
        if name != "wheel":
            raise SystemExit(f"--reqs makes a full venv for the wheel environment only, not {name!r}")
        return reqs_env(reqs, python)
    env = with_main(ENVS[name], main_venv)
    return replace(env, python=python) if python else env


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def layer_digest(path: Path, seen: frozenset = frozenset()) -> str:
    """sha256 of a requirements file and of every file it includes (``-r``/``-c`` lines), recursively."""
    if not path.is_file():
        raise SystemExit(f"requirements file {path} not found (named by tools/envs.py or an -r line)")
    h = hashlib.sha256(path.read_bytes())
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("-r", "-c", "--requirement", "--constraint"):
            included = (path.parent / parts[1]).resolve()
            if included not in seen:
                h.update(layer_digest(included, seen | {path.resolve()}).encode())
    return h.hexdigest()


def read_stamp(env: Env) -> dict:
    try:
        return json.loads((env.dir / STAMP).read_text())
    except (OSError, ValueError):
        return {}


def venv_version(venv: Path) -> str | None:
    """The Python version a venv was made with, from its ``pyvenv.cfg`` (None when there is none)."""
    try:
        cfg = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    values = dict(line.split("=", 1) for line in cfg if "=" in line)
    values = {k.strip(): v.strip() for k, v in values.items()}
    return values.get("version_info", values.get("version"))


def interpreter_version(python: str) -> str:
    if python == sys.executable:
        return platform.python_version()
    out = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"--python {python}: cannot run it ({out.stderr.strip() or 'not found'})")
    return out.stdout.strip()


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(out)


def log(msg: str) -> None:
    print(f"envs: {msg}", file=sys.stderr, flush=True)


def run(cmd: list) -> None:
    log("+ " + " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True)


def want(env: Env, main_venv: str | None) -> dict:
    """What the stamp must say for ``env`` to be current (its layers are checked one by one)."""
    overlay = with_main(ENVS[env.overlay], main_venv) if env.overlay else None
    if overlay is not None:
        if not overlay.exe.exists():
            raise SystemExit(f"{env.name} reuses {overlay.path}, which is not built: run make setup first")
        python = str(overlay.exe)
        version = venv_version(overlay.dir) or interpreter_version(python)
    else:
        python = env.python or sys.executable
        version = interpreter_version(python)
    return {
        "python": version,
        "make_with": python,
        "overlay": str(overlay.dir) if overlay else None,
        "overlay_layers": read_stamp(overlay).get("layers") if overlay else None,
    }


def rebuild(env: Env, target: dict) -> None:
    log(f"building {env.path} ({env.name}: {env.purpose})")
    shutil.rmtree(env.dir, ignore_errors=True)
    run([target["make_with"], "-m", "venv", env.dir])
    (env.dir / ".gitignore").write_text("*\n")  # keeps any venv out of git, wherever it lives
    if target["overlay"]:
        # the overlay's site-packages after this venv's own: what this venv installs wins
        overlay_site = site_packages(Path(target["make_with"]))
        (site_packages(env.exe) / "llm_lab_overlay.pth").write_text(f"{overlay_site}\n")


def ensure(env: Env, main_venv: str | None = None, wheel: Path | None = None) -> Path:
    """Build or update ``env`` (see the module's docstring); return its python.

    ``wheel``: a built llm-lab wheel installed last (``--no-deps``), again whenever its sha256 differs from the
    one installed; ``--ignore-installed``, so an editable llm-lab seen through an overlay is never touched.
    """
    target = want(env, main_venv)
    stamp = read_stamp(env)
    made = {k: stamp.get(k) for k in ("python", "overlay", "overlay_layers")}
    keep = {k: target[k] for k in made}
    if not env.exe.exists():
        rebuild(env, target)
        stamp = {}
    elif not stamp:
        if target["overlay"] or venv_version(env.dir) != target["python"]:
            rebuild(env, target)  # an overlay costs seconds, and its .pth line is then certainly ours
        else:
            log(f"adopting {env.path}, made before {STAMP} existed")
    elif made != keep:
        changed = ", ".join(k for k in made if made[k] != keep[k])
        log(f"{env.path}: {changed} changed")
        rebuild(env, target)
        stamp = {}
    stamp.update(keep)
    layers = stamp.setdefault("layers", {})
    pending = {layer: layer_digest(ROOT / layer) for layer in env.layers}
    pending = {layer: digest for layer, digest in pending.items() if layers.get(layer) != digest}
    if pending:  # one pip run for all of them: one resolution, and pip sees every pin at once
        run([env.exe, *PIP, *(arg for layer in pending for arg in ("-r", ROOT / layer))])
        layers.update(pending)
        write_stamp(env, stamp)
    if env.editable and stamp.get("editable") != sha256(ROOT / "pyproject.toml"):
        run([env.exe, *PIP, "--no-deps", "-e", ROOT])
        stamp["editable"] = sha256(ROOT / "pyproject.toml")
    if wheel is not None and stamp.get("wheel") != sha256(wheel):
        if env.wheel_deps:  # whatever the wheel declares and the requirements file left out
            run([env.exe, *PIP, wheel])
        run([env.exe, *PIP, "--force-reinstall", "--ignore-installed", "--no-deps", wheel])
        stamp["wheel"] = sha256(wheel)
    write_stamp(env, stamp)
    return env.exe


def write_stamp(env: Env, stamp: dict) -> None:
    path = env.dir / STAMP
    text = json.dumps(stamp, indent=1, sort_keys=True) + "\n"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def state(env: Env, main_venv: str | None = None) -> str:
    """``missing``, ``stale`` (ensure would install or rebuild something) or ``current``."""
    if not env.exe.exists():
        return "missing"
    stamp = read_stamp(env)
    try:
        target = want(env, main_venv)
    except SystemExit:
        return "stale"
    if any(stamp.get(k) != target[k] for k in ("python", "overlay", "overlay_layers")):
        return "stale"
    layers = stamp.get("layers", {})
    if any(layers.get(layer) != layer_digest(ROOT / layer) for layer in env.layers):
        return "stale"
    if env.editable and stamp.get("editable") != sha256(ROOT / "pyproject.toml"):
        return "stale"
    return "current"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.envs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--main-venv", help="where the main venv lives (make's VENV; default .venv)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="every environment, where it lives and whether it is current")
    for cmd in ("ensure", "run"):
        p = sub.add_parser(
            cmd,
            help="build or update an environment"
            + ("; then run a command in it" if cmd == "run" else "; print its python"),
        )
        p.add_argument("name", help=", ".join(ENVS))
        p.add_argument("--torch", help="torch: the torch version")
        p.add_argument("--reqs", help="wheel: a full venv from this requirements file instead of the overlay")
        p.add_argument("--python", help="the interpreter that makes the venv (default: the one running this)")
        if cmd == "run":
            p.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command, found in the venv first")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for env in ENVS.values():
            shown = state(with_main(env, args.main_venv), args.main_venv) if "<" not in env.path else "-"
            print(f"{env.name:<11} {env.path:<20} {shown:<8} {env.purpose}")
        return 0
    env = resolve(args.name, torch=args.torch, reqs=args.reqs, python=args.python, main_venv=args.main_venv)
    python = ensure(env, args.main_venv)
    if args.cmd == "ensure":
        print(python)
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise SystemExit("run: give the command after --, e.g. run site -- python -m pytest")
    environ = dict(os.environ, VIRTUAL_ENV=str(env.dir), PATH=f"{env.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    environ.pop("PYTHONHOME", None)
    return subprocess.run(command, env=environ).returncode


if __name__ == "__main__":
    sys.exit(main())
