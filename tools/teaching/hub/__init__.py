"""The course on a local JupyterHub (hub.py) and its configuration (jupyterhub_config.py)."""
