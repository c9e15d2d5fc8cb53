"""JupyterHub's configuration for the local course server (tools/teaching/hub/hub.py writes the settings it reads).

Everything on 127.0.0.1. Users are real Unix users (LocalProcessSpawner starts each server as its user), logged
in by ``DemoPasswords``: one random password per account, from ``state/passwords.json`` (root only). That is a
test authenticator for a local demo; a course uses its institution's (docs/hub.md).
"""

import hmac
import json
import os
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
c.ConfigurableHTTPProxy.command = [S["proxy"]]
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

c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(Path(S["venv"]) / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.mem_limit = None


def per_user_environment(spawner):
    """The learner's or the instructor's Jupyter config path (who sees formgrader), the learners' venv first."""
    spawner.environment.update(S["env"][spawner.user.name])


c.Spawner.pre_spawn_hook = per_user_environment
