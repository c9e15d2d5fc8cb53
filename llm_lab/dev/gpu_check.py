"""Check the series' stored outputs on this machine's GPU: nbval over every notebook, one line of result.

    python -m llm_lab.dev.gpu_check notebooks/en notebooks/zh    # a clone (``make test-gpu``)
    python -m llm_lab.dev.gpu_check --fetch owner/name v0.1.0    # Colab: fetch that release's notebooks first

(``python -m llm_lab.gpu_check``, the old name, runs the same until the next release.)

Needs the test extras (``pip install "llm-lab-course[test]"``: nbval, pytest). Without a CUDA GPU it says so in
one line and runs nothing (exit status 2). Otherwise it runs nbval with the GPU visible, so every notebook that
computes on ``llm_lab.get_device()`` computes on the GPU, and prints one line: cells passed, cells failed,
the device name; then the failing cells, if any. The exit status is nbval's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

NO_GPU = (
    "gpu_check: no CUDA GPU visible to torch (torch.cuda.is_available() is False), nothing was run; "
    "on Colab choose Runtime > Change runtime type > GPU and run again."
)


def fetch(repo: str, ref: str, where: Path) -> Path:
    """Shallow-clone ``repo`` at ``ref`` (a tag or branch) into ``where``; return the clone."""
    clone = where / "llm-lab"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", ref, f"https://github.com/{repo}", str(clone)], check=True
    )
    return clone


def count(junit: Path) -> tuple[int, list[str]]:
    """(cells passed, ids of cells that failed or errored) from pytest's JUnit XML."""
    passed, failed = 0, []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname', '')}::{case.get('name', '')}")
        elif case.find("skipped") is None:
            passed += 1
    return passed, failed


def run_nbval(paths: list[Path], sanitize: Path | None, workdir: Path) -> tuple[int, int, list[str]]:
    """nbval over ``paths`` with this interpreter's kernel; (exit status, cells passed, failed cell ids)."""
    junit = workdir / "nbval.xml"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--nbval",
        "--nbval-current-env",
        "--nbval-kernel-startup-timeout",
        "300",
        f"--junitxml={junit}",
    ]
    if sanitize is not None and sanitize.is_file():
        cmd += ["--nbval-sanitize-with", str(sanitize)]
    rc = subprocess.run(cmd + [str(p) for p in paths]).returncode
    passed, failed = count(junit) if junit.exists() else (0, ["(no report: pytest did not run)"])
    return rc, passed, failed


def summary(passed: int, failed: list[str], device: str) -> str:
    verdict = "all passed" if not failed else f"{len(failed)} failed"
    return f"gpu_check: {passed} cells passed, {verdict}, on {device} (torch {torch.__version__})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m llm_lab.dev.gpu_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, help="notebooks or folders of notebooks")
    ap.add_argument("--fetch", nargs=2, metavar=("REPO", "REF"), help="clone REPO at REF and check its notebooks")
    ap.add_argument("--sanitize", type=Path, help="nbval sanitize file (default: tests/nbval_sanitize.cfg)")
    args = ap.parse_args(argv)
    if bool(args.fetch) == bool(args.paths):
        ap.error("give notebook paths or --fetch REPO REF (one of the two)")
    if not torch.cuda.is_available():
        print(NO_GPU, flush=True)
        return 2
    device = torch.cuda.get_device_name(0)
    with tempfile.TemporaryDirectory(prefix="llm-lab-gpu-check-") as tmp:
        tmp = Path(tmp)
        if args.fetch:
            # the package's copy of tools.course.LANGS; imported here, where it is used: the grader's sealed copy of
            # llm_lab offers no more of the exercises package than its kernel needs
            from llm_lab.exercises import LANGUAGES

            clone = fetch(*args.fetch, tmp)
            paths = [clone / "notebooks" / lang for lang in LANGUAGES]  # the learner versions
            paths += [p for p in (clone / "notebooks" / "instructor" / lang for lang in LANGUAGES) if p.is_dir()]
            sanitize = args.sanitize or clone / "tests" / "nbval_sanitize.cfg"
        else:
            paths, sanitize = args.paths, args.sanitize or Path("tests") / "nbval_sanitize.cfg"
        rc, passed, failed = run_nbval(paths, sanitize, tmp)
    print(summary(passed, failed, device), flush=True)
    for cell in failed:
        print("  failed:", cell)
    return rc


if __name__ == "__main__":
    sys.exit(main())
