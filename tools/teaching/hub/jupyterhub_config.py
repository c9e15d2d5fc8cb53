"""JupyterHub's configuration for the local course server (tools/teaching/hub/hub.py writes the settings it reads).

Everything on 127.0.0.1. Users are real Unix users (LocalProcessSpawner starts each server as its user), logged
in by ``DemoPasswords``: one random password per account, from ``state/passwords.json`` (root only). That is a
test authenticator for a local demo; a course uses its institution's (docs/hub.md).
"""

import hmac
import json
import os
import shlex
import sys
from pathlib import Path

from jupyterhub.auth import Authenticator

c = get_config()  # noqa: F821
S = json.loads(Path(os.environ["LLM_LAB_HUB_SETTINGS"]).read_text())
STATE = Path(S["state"])
PORT = S["port"]


class DemoPasswords(Authenticator):
    """One password per account, read from a root-only file. For the local demo and the tests only."""

    async def authenticate(self, handler, data):
        passwords = json.loads((STATE / "passwords.json").read_text())
        name, given = data.get("username", ""), data.get("password", "")
        want = passwords.get(name)
        if want and hmac.compare_digest(want.encode(), given.encode()):
            return name
        return None


c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = PORT
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = PORT + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 2}"
# the proxy's own log, STATE/proxy.log (exec: the PID JupyterHub keeps is the proxy's)
PROXY_LOG = shlex.quote(str(STATE / "proxy.log"))
c.ConfigurableHTTPProxy.command = ["/bin/sh", "-c", f'exec "$0" "$@" >>{PROXY_LOG} 2>&1', S["proxy"]]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every single-user server it started
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = DemoPasswords
c.Authenticator.allowed_users = set(S["students"]) | {S["instructor"]}
c.Authenticator.admin_users = {S["instructor"]}

# A service for scripts run by root (tests/hub/): start users' servers and call them (nbgrader's handlers).
c.JupyterHub.services = [{"name": "llm-lab-admin", "api_token": (STATE / "service_token").read_text().strip()}]
c.JupyterHub.load_roles = [
    {
        "name": "llm-lab-admin",
        "services": ["llm-lab-admin"],
        "scopes": ["admin:users", "admin:servers", "access:servers"],
    }
]

# Each server as its Unix user (LocalProcessSpawner), in a cgroup of that user's own with the limits below
# (tools/teaching/hub/limits.py: what TLJH's SystemdSpawner does where systemd is PID 1; docs/hub.md).
LIMITS = S.get("limits") or {}
if LIMITS:
    sys.path.insert(0, S["root"])  # tools.teaching.hub.limits, from the checkout that started the hub
    from tools.teaching.hub.limits import spawner_class

    c.JupyterHub.spawner_class = spawner_class()
    c.Spawner.mem_limit = LIMITS.get("mem_limit")
    c.Spawner.cpu_limit = LIMITS.get("cpu_limit")
    c.CgroupSpawner.pids_limit = LIMITS.get("pids_limit") or 0
    c.CgroupSpawner.log_dir = str(STATE / "servers")  # each server's stdout and stderr: STATE/servers/<user>.log
else:
    c.JupyterHub.spawner_class = "localprocess"
    c.Spawner.mem_limit = None
c.Spawner.cmd = [str(Path(S["venv"]) / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = S.get("start_timeout", 120)
c.Spawner.http_timeout = S.get("start_timeout", 120)

# Idle servers are stopped by the ecosystem's culler (jupyterhub-idle-culler, requirements-hub.txt), run by the
# hub as a service: a server none of whose kernels or pages was used for CULL["timeout"] seconds is stopped (its
# user stays; logging in again starts a new one). Activity: the servers report theirs every
# CULL["activity_interval"] seconds, the hub reads the proxy's as often.
CULL = S.get("cull") or {}
if CULL:
    c.JupyterHub.services.append(
        {
            "name": "idle-culler",
            "command": [
                sys.executable,
                "-m",
                "jupyterhub_idle_culler",
                f"--timeout={CULL['timeout']}",
                f"--cull-every={CULL['every']}",
            ],
        }
    )
    c.JupyterHub.load_roles.append(
        {
            "name": "idle-culler",
            "services": ["idle-culler"],
            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        }
    )
    c.JupyterHub.last_activity_interval = CULL["activity_interval"]


def per_user_environment(spawner):
    """The learner's or the instructor's Jupyter config path (who sees formgrader), the learners' venv first; how
    often the server reports its activity to the hub (the culler reads it)."""
    env = dict(S["env"][spawner.user.name])
    if CULL:
        env["JUPYTERHUB_ACTIVITY_INTERVAL"] = str(CULL["activity_interval"])
    spawner.environment = {**spawner.environment, **env}


c.Spawner.pre_spawn_hook = per_user_environment
