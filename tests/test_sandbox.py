"""tools/teaching/sandbox.py: what the grading sandbox binds and limits, and the one sentence when it cannot run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import _course_fixture as fx
import pytest

from tools.teaching import grade, sandbox


def test_without_bubblewrap_grading_stops_with_what_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = sandbox.available()
    assert "bubblewrap" in reason and "apt-get install bubblewrap" in reason and "--no-sandbox" in reason
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}")
    assert grade.main([str(tmp_path / "subs")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: sandboxed grading needs bubblewrap") and err.count("\n") == 1


def test_the_sandbox_hides_the_course_and_the_network():
    argv = sandbox.wrap(["python"], ["/tmp/somewhere"])
    binds = [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
    for flag in ("--unshare-net", "--unshare-pid", "--clearenv", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert not any(b == str(fx.ROOT) or str(fx.ROOT / "notebooks").startswith(b + os.sep) for b in binds), binds
    assert not any(str(fx.ROOT / "tests").startswith(b + os.sep) for b in binds)
    assert [b for b in binds if b == "/tmp/somewhere"] == ["/tmp/somewhere"]
    assert f"--as={sandbox.MEMORY_BYTES}" in argv and any(a.startswith("--nproc=") for a in argv)


@pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available()))
def test_inside_the_sandbox():
    notebooks, package = str(fx.ROOT / "notebooks"), str(fx.ROOT / "llm_lab" / "__init__.py")
    probe = "\n".join([
        "import os, socket",
        f"print(os.path.exists({notebooks!r}), len([p for p in os.listdir('/proc') if p.isdigit()]) <= 3,"
        " os.environ.get('HOME'))",
        "try:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\nexcept OSError:\n    print('no-net')",
        "open('/tmp/x', 'w').write('x')",
        f"try:\n    open({package!r}, 'a')\nexcept OSError:\n    print('read-only')",
    ])
    out = subprocess.run(sandbox.wrap([sys.executable, "-I", "-c", probe], []), capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["False", "True", "/tmp", "no-net", "read-only"], out.stderr
