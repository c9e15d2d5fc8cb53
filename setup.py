"""Package discovery for llm-lab-course; everything else is in pyproject.toml.

Discovery is automatic so a new subpackage or data file can never be left out of the wheel: every package
under ``llm_lab/`` is found, and every file in the repository's ``data/`` folder ships as ``llm_lab/_data``;
``llm_lab/README.md`` (what is where in the package) ships beside the code (``tests/repo/test_wheel.py`` checks the
built wheel against the tree).
"""

from pathlib import Path

from setuptools import find_packages, setup

DATA = Path(__file__).resolve().parent / "data"

setup(
    packages=find_packages(include=["llm_lab", "llm_lab.*"]) + ["llm_lab._data"],
    package_dir={"llm_lab._data": "data"},
    package_data={"llm_lab": ["README.md"], "llm_lab._data": sorted(p.name for p in DATA.iterdir() if p.is_file())},
)
