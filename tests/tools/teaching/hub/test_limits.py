"""The local hub's per-learner limits (tools/teaching/hub/limits.py) and culler, in its JupyterHub config.

The cgroup writing is checked on a fake cgroup tree (v1 and v2 layouts, made in a temporary folder), so it runs
everywhere without root; the groups on the real machine are exercised by make test-hub and make test-hub-load.
"""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tools.teaching.grader import sandbox_limits as sl
from tools.teaching.hub import hub as hubmod
from tools.teaching.hub import limits

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(
    ("text", "want"), [("2G", 2 * 2**30), ("512M", 512 * 2**20), ("1.5G", 3 * 2**29), ("4096", 4096), (None, None)]
)
def test_memory_limits_read_as_jupyterhub_reads_them(text, want):
    assert limits.parse_bytes(text) == want


def test_a_memory_limit_that_is_not_one_is_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="K, M, G or T"):
        limits.parse_bytes("two gigs")


@pytest.fixture
def fake_v1(tmp_path, monkeypatch):
    mounts = {c: tmp_path / c for c in ("memory", "pids", "cpu", "cpuacct")}
    for m in mounts.values():
        m.mkdir()
    monkeypatch.setattr(sl, "_v1_mounts", lambda: dict(mounts))
    monkeypatch.setattr(sl, "_rmdir", lambda p: __import__("shutil").rmtree(p))

    real_mkdir = Path.mkdir

    def mkdir(self, *a, **kw):  # a cgroup folder comes with its interface files
        real_mkdir(self, *a, **kw)
        for name in ("cgroup.procs", "memory.limit_in_bytes", "pids.max", "cpu.shares", "cpu.cfs_period_us"):
            (self / name).touch()
        (self / "cpu.cfs_quota_us").write_text("-1")

    monkeypatch.setattr(Path, "mkdir", mkdir)
    return mounts


def test_a_users_group_on_cgroup_v1_gets_the_three_limits(fake_v1):
    g = limits.UserGroup("lt-alice", 2 * 2**30, 1.0, 512)
    assert g.version == 1
    mem, pids, cpu = (fake_v1[c] / limits.PARENT / "lt-alice" for c in ("memory", "pids", "cpu"))
    assert (mem / "memory.limit_in_bytes").read_text() == str(2 * 2**30)
    assert (pids / "pids.max").read_text() == "512"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "100000" and (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (cpu / "cpu.shares").read_text() == "1024"  # one user weighs one share, however many processes
    nobody = 2**22 + 1  # above the kernel's largest pid: remove() below kills what the group holds, by PID
    g.join(nobody)
    assert (mem / "cgroup.procs").read_text() == str(nobody) and g.pids() == [nobody]
    g.remove()
    assert not g.exists()


def test_no_cpu_limit_leaves_the_quota_unset(fake_v1):
    limits.UserGroup("lt-bob", 2**30, None, 64)
    assert (fake_v1["cpu"] / limits.PARENT / "lt-bob" / "cpu.cfs_quota_us").read_text() == "-1"


@pytest.mark.parametrize("name", ["", "../etc", ".hidden", "a/b"])
def test_a_user_name_that_could_leave_the_parent_is_refused(name, fake_v1):
    with pytest.raises(ValueError, match="without '/'"):
        limits.UserGroup(name, 2**30, 1.0, 64)


def settings_for(tmp_path: Path, **kw) -> Path:
    h = hubmod.Hub(tmp_path / "hub", 8765, "root", ["root"], **kw)
    h.state.mkdir(parents=True)
    (h.state / "service_token").write_text("x" * 64)
    h.config.mkdir()
    settings = {
        "port": h.port,
        "proxy": "/bin/true",
        "venv": str(h.venv),
        "state": str(h.state),
        "instructor": "root",
        "students": [],
        "env": {},
        "root": str(ROOT),
        "limits": h.limits,
        "cull": h.cull,
        "start_timeout": h.start_timeout,
    }
    path = h.state / "settings.json"
    path.write_text(json.dumps(settings))
    return path


def load_config(settings: Path, monkeypatch):
    from traitlets.config import Config

    pytest.importorskip("jupyterhub", reason="JupyterHub is installed by make hub-setup")
    c = Config()
    monkeypatch.setenv("LLM_LAB_HUB_SETTINGS", str(settings))
    runpy.run_path(str(ROOT / "tools" / "teaching" / "hub" / "jupyterhub_config.py"), {"get_config": lambda: c})
    return c


def test_the_hub_config_runs_each_server_in_its_users_group_with_the_default_limits(tmp_path, monkeypatch):
    c = load_config(settings_for(tmp_path), monkeypatch)
    assert c.JupyterHub.spawner_class.__name__ == "CgroupSpawner"
    assert c.Spawner.mem_limit == hubmod.DEFAULT_LIMITS["mem_limit"] == "2G"
    assert c.Spawner.cpu_limit == 1.0 and c.CgroupSpawner.pids_limit == 512


def test_the_hub_config_writes_the_proxys_log_and_each_servers_to_files_of_their_own(tmp_path, monkeypatch):
    settings = settings_for(tmp_path)
    c = load_config(settings, monkeypatch)
    state = settings.parent
    assert c.CgroupSpawner.log_dir == str(state / "servers")
    cmd = c.ConfigurableHTTPProxy.command
    assert cmd[-1] == "/bin/true"  # the proxy, its arguments after it (JupyterHub appends them)
    for n in (1, 2):  # the wrapper runs the proxy with those arguments, its output appended to STATE/proxy.log
        subprocess.run([*cmd[:-1], "/bin/echo", "the proxy", str(n)], check=True, timeout=30)
    assert (state / "proxy.log").read_text() == "the proxy 1\nthe proxy 2\n"


def test_the_hub_config_runs_the_idle_culler_as_a_service_with_its_scopes(tmp_path, monkeypatch):
    c = load_config(settings_for(tmp_path), monkeypatch)
    culler = next(s for s in c.JupyterHub.services if s["name"] == "idle-culler")
    assert culler["command"][:3] == [sys.executable, "-m", "jupyterhub_idle_culler"]
    assert "--timeout=3600" in culler["command"] and "--cull-every=600" in culler["command"]
    role = next(r for r in c.JupyterHub.load_roles if r["name"] == "idle-culler")
    assert set(role["scopes"]) == {"list:users", "read:users:activity", "read:servers", "delete:servers"}


def test_without_limits_or_culler_the_hub_config_has_neither(tmp_path, monkeypatch):
    """The control: the two checks above fail on a hub set up with --no-limits --cull-timeout 0."""
    c = load_config(settings_for(tmp_path, limits={}, cull={}), monkeypatch)
    assert c.JupyterHub.spawner_class == "localprocess"
    assert [s["name"] for s in c.JupyterHub.services] == ["llm-lab-admin"]


def test_the_culler_is_pinned_in_the_hub_requirements():
    lines = (ROOT / "requirements-hub.txt").read_text().splitlines()
    assert "jupyterhub-idle-culler==2.0.0" in lines
