"""Running make in the checkout from the tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make(*args: str) -> str:
    """What ``make --no-print-directory ARGS`` prints in the checkout (60 s at most; fails where make fails)."""
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    ).stdout
