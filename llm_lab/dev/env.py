"""One block of facts for a bug report: ``python -m llm_lab.dev.env`` or ``llm_lab.show_versions()``
(its old name ``python -m llm_lab.env`` works until 0.3.0).

A learner whose cell prints something other than the stored output pastes this block into the issue;
it holds what a maintainer asks first: Python, the platform, torch and its devices, the versions of the
packages whose behaviour can change an output, whether this is Colab, and whether the shipped data
files pass their checksums. Nothing here may raise: a missing package, a broken torch or a corrupted
data file is reported as a line of the block, never as a traceback.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path

from .. import __version__, resources
from ..runtime import in_colab

# (label, distribution name) of the packages whose versions can change a stored output.
PACKAGES = (
    ("numpy", "numpy"),
    ("tiktoken", "tiktoken"),
    ("matplotlib", "matplotlib"),
    ("ipywidgets", "ipywidgets"),
)
HEADER = "llm_lab environment (paste this whole block into your report)"


def _short(path: Path | str) -> str:
    # The home folder often holds the learner's name, which a public issue does not need.
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and text.startswith(home):
        return "~" + text[len(home) :]
    return text


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _torch_line() -> str:
    """torch's version, CUDA/MPS availability and the device ``llm_lab.get_device()`` would pick."""
    version = _version("torch")
    if version == "not installed":
        return version
    try:
        import torch

        parts = [torch.__version__]
        if torch.cuda.is_available():
            name = torch.cuda.get_device_name(0)
            parts.append(f"CUDA yes ({torch.version.cuda}, {torch.cuda.device_count()} device(s), {name})")
        else:
            built = torch.version.cuda
            parts.append(f"CUDA no (built for CUDA {built})" if built else "CUDA no (CPU build)")
        mps = getattr(torch.backends, "mps", None)
        parts.append("MPS yes" if mps is not None and mps.is_available() else "MPS no")
        from ..runtime import get_device

        parts.append(f"llm_lab device: {get_device()}")
        return "; ".join(parts)
    except Exception as exc:  # a broken CUDA driver must still leave a report to paste
        return f"{version} (error while querying devices: {type(exc).__name__}: {exc})"


def data_files() -> list[tuple[str, str]]:
    """(filename, sha256) of every checksummed data file shipped with llm_lab."""
    return resources.shipped_files()


def data_file_status(filename: str, sha256: str) -> str:
    """``"ok (<path>)"``, ``"MISSING ..."`` or ``"CHECKSUM FAILED ..."``, found the way ``load_text`` finds it."""
    try:
        path = resources.verified_path(filename, sha256)
    except FileNotFoundError:
        searched = ", ".join(_short(d) for d in resources.data_dirs())
        return f"MISSING (searched: {searched})"
    except ValueError as exc:
        return f"CHECKSUM FAILED: {exc}"
    except OSError as exc:  # unreadable file, permissions
        return f"UNREADABLE: {type(exc).__name__}: {exc}"
    return f"ok ({_short(path)})"


def collect() -> list[tuple[str, str]]:
    """The report as (label, value) rows, in print order."""
    rows = [
        # the package folder (this file is in llm_lab/dev/)
        ("llm_lab", f"{__version__} ({_short(Path(__file__).resolve().parent.parent)})"),
        ("python", sys.version.replace("\n", " ")),
        ("platform", platform.platform()),
        ("colab", "yes" if in_colab() else "no"),
        ("torch", _torch_line()),
    ]
    rows += [(label, _version(dist)) for label, dist in PACKAGES]
    rows += [(f"data {filename}", data_file_status(filename, sha256)) for filename, sha256 in data_files()]
    return rows


def report() -> str:
    """The block ``show_versions()`` prints, as one string."""
    rows = collect()
    width = max(len(label) for label, _ in rows)
    return "\n".join([HEADER, *(f"{label:<{width}}  {value}" for label, value in rows)])


def show_versions() -> None:
    """Print Python, platform, torch (CUDA/MPS), package versions, Colab or not, and data-file checksums."""
    print(report())


if __name__ == "__main__":
    show_versions()
