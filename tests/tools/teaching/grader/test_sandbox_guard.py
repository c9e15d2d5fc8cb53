"""The graded kernel's guard and the layer below it, in the sandbox as grading builds it (llm_lab sealed for 01 at
``/course``, Python and the site-packages at their neutral paths, a private ``/tmp``):

- the guard (llm_lab/exercises/grading/kernel_guard.py), installed by a probe (tests/_guard_probe.py) as the
  kernel's warm-up installs it: each route to unread code runs before it (the control) and is refused after, the
  honest operations run, and what the sandbox's layout makes trusted is what the guard trusts (``/course``,
  ``/opt``), never ``/tmp``;
- once sealed, ``/tmp`` is ``noexec``: a shared object copied there loads before the seal (the control) and not
  after, whatever loads it (the guard is not installed in this probe: the layer holds on its own).

Needs bubblewrap (`.ci/run` installs it); skipped only where the sandbox cannot run, with the reason.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from _guard_probe import HONEST, HOSTILE, PROBE, assert_route_held

from tools.teaching.grader import sandbox

pytestmark = pytest.mark.usefixtures("sandbox_required")


@pytest.fixture(scope="module")
def probe():
    with sandbox.Box() as box:
        argv = box.wrap([*sandbox.python_argv(PROBE, ["01"]), "/tmp"], [], notebooks=["01"])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", HOSTILE)
def test_in_the_sandbox_each_route_runs_before_the_guard_and_is_refused_after(probe, name):
    assert_route_held(probe, name)


def test_the_installed_code_is_trusted_where_the_sandbox_puts_it_and_a_written_file_is_not(probe):
    # torch under /opt/site/N, the standard library under /opt/python, the sealed llm_lab under /course
    assert probe["trusted"] == {"torch": True, "json": True, "llm_lab": True, "written": False}


def test_in_the_sandbox_the_honest_operations_run_under_the_guard(probe):
    assert probe["honest"] == dict.fromkeys(HONEST, "ran")
    assert "/tmp/written_mod.py is a file the notebook wrote" in probe["after"]["written module"]


NOEXEC = """
import ctypes, glob, json, os, shutil, sys, time
so = glob.glob(os.path.join(os.path.dirname(json.__file__), "..", "lib-dynload", "_json*.so"))[0]
def load(name):
    shutil.copy(so, f"/tmp/{name}.so")
    try:
        ctypes.CDLL(f"/tmp/{name}.so")
        return "loaded"
    except OSError as err:
        return "refused: " + str(err)
print(json.dumps(load("before")), flush=True)
sys.stdin.readline()  # until the test has sealed the sandbox
print(json.dumps(load("after")), flush=True)
"""


def test_once_sealed_no_file_written_in_tmp_is_mapped_as_code(tmp_path):
    conn = tmp_path / "conn"
    conn.mkdir()
    with sandbox.Box() as box:
        sandbox.prepare(conn, box.uid)
        argv = box.wrap(sandbox.python_argv(NOEXEC), [str(conn)])
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        before = json.loads(proc.stdout.readline())
        sandbox.seal(conn, proc.pid)
        out, _ = proc.communicate("sealed\n", timeout=120)
    after = json.loads(out.strip().splitlines()[-1])
    assert before == "loaded"  # the control: before the seal a copied shared object loads
    assert after.startswith("refused") and "map" in after, after  # "failed to map segment from shared object"
