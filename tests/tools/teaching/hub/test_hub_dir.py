"""tools/teaching/hub/hub.py: the hub's folder (its users' venv, config and exchange) must be reachable by them,
so it lives outside the checkout (a clone in a private folder, mode 0700, would lock them out)."""

from __future__ import annotations

from pathlib import Path

from _hub_client import HUB_DIR

from tools.teaching.hub import hub

ROOT = Path(__file__).resolve().parents[4]


def test_a_hub_inside_a_private_folder_is_refused_with_the_reason(tmp_path):
    private = tmp_path / "clone"
    (private / "build").mkdir(parents=True)
    private.chmod(0o700)
    tmp_path.chmod(0o755)
    problem = hub.unreachable(private / "build" / "hub")
    assert problem.startswith(f"hub: --dir {private / 'build' / 'hub'} is inside {private} (mode 700)"), problem
    assert str(hub.DEFAULT_DIR) in problem


def test_a_hub_where_everyone_can_enter_is_accepted():
    assert hub.unreachable(Path("/usr/share/llm-lab-hub")) is None  # / and /usr: mode 755


def test_the_test_hub_and_the_default_hub_live_outside_the_checkout():
    for directory in (HUB_DIR, hub.DEFAULT_DIR):  # the test hub's (tests/hub/_hub_client.py) and the default
        assert ROOT not in directory.parents and ROOT != directory, directory
        assert not str(directory).startswith(str(Path.home())), directory
