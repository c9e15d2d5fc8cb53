"""The course on a local JupyterHub (hub.py), its JupyterHub process (process.py) and its configuration
(jupyterhub_config.py)."""
