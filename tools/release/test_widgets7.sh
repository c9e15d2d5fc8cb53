#!/usr/bin/env bash
# Run tests/test_widgets.py under ipywidgets 7.7.1, the version Google Colab ships (the main .venv has 8.x).
#
#   bash tools/release/test_widgets7.sh            # from the repository root or anywhere
#   PYTHON=python3.12 bash tools/release/test_widgets7.sh
#
# The venv .venv-ipyw7 is (re)built only when it is missing or tests/requirements-ipywidgets7.txt changed
# (a copy of the file installed last is kept as the stamp). Extra arguments go to pytest.
# It reuses the main .venv for everything the file does not change (a .pth line pointing at its
# site-packages; pip sees those packages and installs only the versions that differ, in .venv-ipyw7, which
# come first on sys.path), so building it takes seconds instead of a second torch install.
set -euo pipefail

cd "$(dirname "$0")/../.."
MAIN_VENV="${MAIN_VENV:-.venv}"
PYTHON="${PYTHON:-$MAIN_VENV/bin/python}"  # the same interpreter as the main venv, whose packages it reuses
if [ ! -x "$MAIN_VENV/bin/python" ]; then
    echo "test_widgets7: $MAIN_VENV not found: run make setup first" >&2
    exit 1
fi
VENV=.venv-ipyw7
REQS=tests/requirements-ipywidgets7.txt
STAMP="$VENV/.installed-requirements"

if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$REQS" "$STAMP"; then
    echo "test_widgets7: building $VENV from $REQS"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    echo '*' > "$VENV/.gitignore"  # keep the venv out of git without touching the repository's .gitignore
    MAIN_SITE="$("$MAIN_VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
    SITE="$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
    echo "$MAIN_SITE" > "$SITE/llm_lab_main_venv.pth"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQS"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
    cp "$REQS" "$STAMP"
fi

"$VENV/bin/python" -c "import ipywidgets; print('test_widgets7: ipywidgets', ipywidgets.__version__)"
export MPLBACKEND=Agg
export LLM_LAB_IPYWIDGETS_MAJOR=7  # test_ipywidgets_major fails if another major is installed
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/test_widgets.py "$@"
