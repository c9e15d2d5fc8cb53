"""The Zero to JupyterHub files (tools/teaching/hub/z2jh/) are consistent with the local hub that `make test-hub` runs.

This is all that is checked of them here: no Kubernetes cluster and no Docker on the test machine, so the chart
values and the image are neither deployed nor built (docs/hub.md says so). Runs everywhere (no root needed).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
Z2JH = ROOT / "tools" / "teaching" / "hub" / "z2jh"

from tools.teaching.hub import hub  # noqa: E402  (after the constants it is compared with)


def test_the_learners_jupyter_config_is_the_local_hubs():
    cfg = Z2JH / "jupyter-config"
    assert json.loads((cfg / "learner" / "labconfig" / "page_config.json").read_text()) == hub.LEARNER_PAGE_CONFIG
    assert json.loads((cfg / "learner" / "jupyter_server_config.json").read_text()) == hub.LEARNER_SERVER_CONFIG
    common = (cfg / "common" / "nbgrader_config.py").read_text()
    assert f'course_id = "{hub.COURSE_ID}"' in common and 'Exchange.root = "/srv/nbgrader/exchange"' in common


def test_values_name_the_image_the_exchange_volume_and_a_uid_per_user():
    values = yaml.safe_load((Z2JH / "values.yaml").read_text())
    single = values["singleuser"]
    assert single["image"]["name"].endswith("llm-lab-singleuser")
    mounts = {m["name"]: m["mountPath"] for m in single["storage"]["extraVolumeMounts"]}
    assert mounts["nbgrader-exchange"] == "/srv/nbgrader/exchange"
    claim = single["storage"]["extraVolumes"][0]["persistentVolumeClaim"]["claimName"]
    assert claim == "nbgrader-exchange"
    extra = values["hub"]["extraConfig"]["llm-lab-users"]
    compile(extra, "llm-lab-users", "exec")  # valid Python for the hub's extraConfig
    assert "NB_UID" in extra and "/etc/llm-lab/learner" in extra.replace("{role}", "learner")
    assert single["uid"] == 0  # docker-stacks' start.sh switches to NB_UID


def test_the_image_installs_the_tested_pins_and_the_wheel():
    docker = (Z2JH / "Dockerfile").read_text()
    assert "requirements-hub.txt" in docker and "llm_lab_course-*.whl" in docker
    assert "COPY tools/teaching/hub/z2jh/jupyter-config/ /etc/llm-lab/" in docker
    assert "bubblewrap" in docker
