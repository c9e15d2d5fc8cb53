"""tools/envs.py: every venv made one way, with one stamp; rebuilt or updated only when something it hashes changed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import envs

ROOT = envs.ROOT


@pytest.fixture
def calls(monkeypatch):
    """Record the commands ensure() would run instead of running them; venvs are faked on disk."""
    seen = []

    def fake_run(cmd):
        seen.append([str(c) for c in cmd])
        if cmd[1:3] == ["-m", "venv"]:
            venv = Path(cmd[3])
            (venv / "bin").mkdir(parents=True)
            (venv / "site").mkdir()
            (venv / "bin" / "python").write_text("")
            (venv / "pyvenv.cfg").write_text(f"version = {envs.platform.python_version()}\n")

    monkeypatch.setattr(envs, "run", fake_run)
    monkeypatch.setattr(envs, "site_packages", lambda python: Path(python).parent.parent / "site")
    return seen


def installs(calls):
    """The requirement files (after -r) and wheels each pip run installed."""
    runs = []
    for c in calls:
        if "install" in c:
            files = [c[i + 1] for i, arg in enumerate(c) if arg == "-r"]
            runs.append(files if files else c[-1])
    return runs


def test_a_second_ensure_runs_nothing(tmp_path, calls):
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("numpy\n")
    env = envs.Env("t", str(tmp_path / "venv"), (str(reqs),), editable=False)
    envs.ensure(env)
    assert [c[1:3] for c in calls] == [["-m", "venv"], ["-m", "pip"]]
    calls.clear()
    envs.ensure(env)
    assert calls == []
    assert envs.state(env) == "current"


def test_only_the_changed_layer_is_installed_again(tmp_path, calls):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("numpy\n")
    b.write_text("-r a.txt\nsix\n")
    env = envs.Env("t", str(tmp_path / "venv"), (str(a), str(b)), editable=False)
    envs.ensure(env)
    calls.clear()
    b.write_text("-r a.txt\nsix==1.16.0\n")
    assert envs.state(env) == "stale"
    envs.ensure(env)
    assert installs(calls) == [[str(b)]]  # no new venv, a.txt not again


def test_a_change_in_an_included_file_counts(tmp_path, calls):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("numpy\n")
    b.write_text("-r a.txt\n")
    env = envs.Env("t", str(tmp_path / "venv"), (str(b),), editable=False)
    envs.ensure(env)
    calls.clear()
    a.write_text("numpy==2.4.6\n")
    envs.ensure(env)
    assert installs(calls) == [[str(b)]]


def test_every_pending_layer_goes_into_one_pip_run(tmp_path, calls):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("numpy\n")
    b.write_text("six\n")
    envs.ensure(envs.Env("t", str(tmp_path / "venv"), (str(a), str(b)), editable=False))
    assert installs(calls) == [[str(a), str(b)]]


def test_another_interpreter_rebuilds(tmp_path, calls):
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("numpy\n")
    env = envs.Env("t", str(tmp_path / "venv"), (str(reqs),), editable=False)
    envs.ensure(env)
    stamp = json.loads((env.dir / envs.STAMP).read_text())
    stamp["python"] = "3.9.0"
    (env.dir / envs.STAMP).write_text(json.dumps(stamp))
    calls.clear()
    envs.ensure(env)
    assert [c[1:3] for c in calls] == [["-m", "venv"], ["-m", "pip"]]


def test_a_venv_made_before_the_stamp_is_adopted_not_rebuilt(tmp_path, calls):
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("numpy\n")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "pyvenv.cfg").write_text(f"version_info = {envs.platform.python_version()}\n")
    envs.ensure(envs.Env("t", str(venv), (str(reqs),), editable=False))
    assert [c[1:3] for c in calls] == [["-m", "pip"]]


def test_an_overlay_is_rebuilt_when_what_it_reuses_changes(tmp_path, calls, monkeypatch):
    base_reqs, reqs = tmp_path / "base.txt", tmp_path / "reqs.txt"
    base_reqs.write_text("numpy\n")
    reqs.write_text("ipywidgets==7.7.1\n")
    base = envs.Env("base", str(tmp_path / "base"), (str(base_reqs),), editable=False)
    top = envs.Env("top", str(tmp_path / "top"), (str(reqs),), overlay="base", editable=False)
    monkeypatch.setitem(envs.ENVS, "base", base)
    envs.ensure(base)
    envs.ensure(top)
    assert (tmp_path / "top" / "site" / "llm_lab_overlay.pth").read_text().strip() == str(tmp_path / "base" / "site")
    calls.clear()
    base_reqs.write_text("numpy==2.4.6\n")
    assert envs.state(base) == "stale"
    envs.ensure(base)
    assert envs.state(top) == "stale"
    envs.ensure(top)
    assert [c[1:3] for c in calls] == [["-m", "pip"], ["-m", "venv"], ["-m", "pip"]]


def test_an_overlay_of_a_missing_venv_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setitem(envs.ENVS, "base", envs.Env("base", str(tmp_path / "nothing")))
    with pytest.raises(SystemExit, match="make setup"):
        envs.ensure(envs.Env("top", str(tmp_path / "top"), overlay="base"))


def test_a_wheel_is_installed_again_only_when_it_changed(tmp_path, calls):
    wheel = tmp_path / "llm_lab_course-0-py3-none-any.whl"
    wheel.write_bytes(b"one")
    env = envs.Env("t", str(tmp_path / "venv"), editable=False)
    envs.ensure(env, wheel=wheel)
    envs.ensure(env, wheel=wheel)
    assert installs(calls) == [str(wheel)]
    wheel.write_bytes(b"two")
    envs.ensure(env, wheel=wheel)
    assert installs(calls) == [str(wheel)] * 2
    assert "--no-deps" in calls[-1] and "--ignore-installed" in calls[-1]


@pytest.mark.parametrize(
    "name, kw, says",
    [
        ("nope", {}, "the environments are main, instructor"),
        ("torch", {}, "--torch VERSION"),
        ("torch", {"torch": "2.11; rm -rf /"}, "expected a torch version"),
        ("site", {"reqs": "requirements.txt"}, "wheel environment only"),
        ("wheel", {"reqs": "no-such-file.txt"}, "not a file"),
    ],
)
def test_bad_names_and_options_say_what_is_allowed(name, kw, says):
    with pytest.raises(SystemExit, match=re.escape(says)):
        envs.resolve(name, **kw)


def test_the_torch_row_pins_that_torch_and_keeps_the_rest():
    env = envs.resolve("torch", torch="2.11.0")
    assert env.path == ".venv-torch2.11.0"
    lines = (ROOT / env.layers[0]).read_text().splitlines()
    want = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if not line.startswith("torch==")]
    assert "torch==2.11.0" in lines and set(want) <= set(lines)
    assert {line.split("==")[0] for line in lines} >= {"nbgrader", "jsonschema"}  # the instructor pins tests need


def test_every_row_names_files_that_exist():
    for env in envs.ENVS.values():
        if "<" in env.path:
            continue
        for layer in env.layers:
            assert (ROOT / layer).is_file(), (env.name, layer)
        assert env.overlay is None or env.overlay in envs.ENVS


def test_one_mechanism_makes_every_venv():
    """No venv is made or stamped anywhere but tools/envs.py (the Makefile, the tools, the scripts)."""
    made_elsewhere = []
    for path in [ROOT / "Makefile", *ROOT.glob("tools/**/*.py"), *ROOT.glob("tools/**/*.sh"), *ROOT.glob(".ci/*")]:
        if path == ROOT / "tools" / "envs.py":
            continue
        text = path.read_text()
        if re.search(r"-m venv|\"-m\", \"venv\"|\.installed\b|\.installed-", text):
            made_elsewhere.append(str(path.relative_to(ROOT)))
    assert made_elsewhere == []


def test_a_real_overlay_reuses_the_main_venv_and_keeps_its_own_packages_first(tmp_path, monkeypatch):
    """A real venv over the main .venv: torch comes from there, the editable llm_lab does not, its own .pth wins."""
    main = envs.ENVS["main"]
    if not main.exe.exists() or Path(sys.prefix).resolve() != main.dir:
        pytest.skip("needs the main .venv (make setup), running this test")
    env = envs.Env("t", str(tmp_path / "venv"), overlay="main", editable=False)
    python = envs.ensure(env)
    probe = (
        "import importlib.util, json, sys, torch; "
        "print(json.dumps([torch.__file__, importlib.util.find_spec('llm_lab') is not None, sys.prefix]))"
    )
    torch_file, sees_llm_lab, prefix = json.loads(
        subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    )
    assert Path(torch_file).is_relative_to(main.dir)
    assert not sees_llm_lab  # the main venv's editable install is a .pth of its own, not processed
    assert Path(prefix).resolve() == env.dir
    assert envs.state(env) == "current"


def test_the_command_line_lists_every_environment():
    out = subprocess.run(
        [sys.executable, "-m", "tools.envs", "list"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert [line.split()[0] for line in out.splitlines()] == list(envs.ENVS)


def test_wheel_reqs_is_a_full_venv_of_its_own_named_after_the_file():
    """make test-wheel WHEEL_REQS=tests/colab-versions.txt: no overlay, the file's pins, the wheel with its deps."""
    env = envs.resolve("wheel", reqs="tests/colab-versions.txt", python=sys.executable)
    assert env.path == ".venv-wheel-colab-versions" and env.overlay is None and not env.editable
    assert env.layers == ("tests/colab-versions.txt",) and env.wheel_deps and env.python == sys.executable
    assert envs.resolve("wheel").overlay == "main"  # without --reqs: over .venv's packages


def test_the_main_venv_moves_with_make_s_venv_and_so_do_its_overlays(tmp_path):
    """make VENV=other: the rows living in .venv live there, and the overlays reuse that venv."""
    assert envs.resolve("instructor", main_venv=str(tmp_path / "v")).dir == tmp_path / "v"
    assert envs.resolve("site", main_venv=str(tmp_path / "v")).path == ".venv-site"
    with pytest.raises(SystemExit, match=re.escape(f"{tmp_path / 'v'}, which is not built")):
        envs.ensure(envs.resolve("widgets7", main_venv=str(tmp_path / "v")), str(tmp_path / "v"))
