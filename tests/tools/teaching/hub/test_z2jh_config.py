"""The Zero to JupyterHub files (tools/teaching/hub/z2jh/) are consistent with the local hub that `make test-hub` runs.

No Kubernetes cluster and no Docker on the test machine, so the chart values and the image are neither deployed
nor built (docs/hub.md says so). What is checked: the values validate against the chart's own values schema (vendored
in z2jh/chart/ for the chart version the values name, merged over the chart's defaults as Helm merges them), their
``extraConfig`` snippets compile, and they agree with the local hub. Runs everywhere (no root needed).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4]
Z2JH = ROOT / "tools" / "teaching" / "hub" / "z2jh"
CHART = Z2JH / "chart"

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
    assert "NB_UID" in extra and "/etc/llm-lab/learner" in extra.replace("{role}", "learner")
    assert single["uid"] == 0  # docker-stacks' start.sh switches to NB_UID


def test_the_image_installs_the_tested_pins_and_the_wheel():
    docker = (Z2JH / "Dockerfile").read_text()
    assert "requirements-hub.txt" in docker and "llm_lab_course-*.whl" in docker
    assert "COPY tools/teaching/hub/z2jh/jupyter-config/ /etc/llm-lab/" in docker
    assert "bubblewrap" in docker


# --- the values against the chart's schema -------------------------------------------------------------------


def load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def helm_merge(defaults: dict, override: dict) -> dict:
    """The values Helm validates and renders: ``override`` (a ``-f`` file) over the chart's ``defaults``, maps
    merged key by key, anything else replaced, a ``null`` removing the default."""
    merged = copy.deepcopy(defaults)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def schema_errors(override: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(load(CHART / "values.schema.yaml"))
    merged = helm_merge(load(CHART / "values.yaml"), override)
    return sorted(
        f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(merged)
    )


def test_the_schema_is_the_one_for_the_chart_version_the_values_name():
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    (version,) = set(re.findall(r"^- chart version: (\S+)$", readme, re.M))
    values_text = (Z2JH / "values.yaml").read_text(encoding="utf-8")
    named = set(re.findall(r"jupyterhub/jupyterhub\s*(?:#\s*)?(\d+\.\d+\.\d+)", values_text))
    named |= set(re.findall(r"--version (\d+\.\d+\.\d+)", values_text))
    assert named == {version}, f"values.yaml names chart {named}, the vendored schema is {version}"
    hub_md = (ROOT / "docs" / "hub.md").read_text(encoding="utf-8")
    assert set(re.findall(r"`jupyterhub/jupyterhub` chart (\d+\.\d+\.\d+)", hub_md)) == {version}
    assert re.search(rf"tag `{re.escape(version)}`, commit `[0-9a-f]{{40}}`", readme)
    for name, digest in re.findall(r"^\| `([^`]+)` \| `[^`]+` \| `([0-9a-f]{64})` \|$", readme, re.M):
        assert hashlib.sha256((CHART / name).read_bytes()).hexdigest() == digest, f"{name} differs from upstream's"
    assert sorted(p.name for p in CHART.iterdir()) == ["LICENSE", "README.md", "values.schema.yaml", "values.yaml"]
    assert "BSD 3-Clause License" in (CHART / "LICENSE").read_text(encoding="utf-8")


def test_the_values_validate_against_the_charts_schema():
    assert schema_errors(load(Z2JH / "values.yaml")) == []


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda v: v["singleuser"]["memory"].update(limt="2G"), "singleuser.memory: Additional properties"),
        (lambda v: v["singleuser"].update(uid="root"), "singleuser.uid: 'root' is not of type"),
        (lambda v: v["cull"].update(timeout="an hour"), "cull.timeout: 'an hour' is not of type"),
        (lambda v: v.update(singleusers={}), "(top): Additional properties are not allowed ('singleusers'"),
    ],
    ids=["misspelt-key", "wrong-type", "string-for-integer", "misspelt-section"],
)
def test_the_schema_check_catches_a_broken_value(change, error):
    """The control: each change alone makes the values invalid, with the message naming it."""
    values = load(Z2JH / "values.yaml")
    change(values)
    errors = schema_errors(values)
    assert any(e.startswith(error) for e in errors), errors


def test_every_extra_config_snippet_compiles():
    values = load(Z2JH / "values.yaml")
    snippets = values["hub"]["extraConfig"]
    assert snippets, "the values have no hub.extraConfig"
    for name, code in snippets.items():
        compile(code, f"hub.extraConfig.{name}", "exec")  # a SyntaxError names the snippet and the line
    with pytest.raises(SyntaxError):
        compile(
            snippets["llm-lab-users"].replace("def llm_lab_user(spawner):", "def llm_lab_user(spawner)"),
            "hub.extraConfig.llm-lab-users",
            "exec",
        )


def to_bytes(text: str) -> int:
    """Kubernetes' quantities as the chart writes them for memory (``2G``: the chart passes G as GiB to KubeSpawner,
    which reads K, M, G, T as powers of 1024, like JupyterHub's mem_limit)."""
    from tools.teaching.hub.limits import parse_bytes

    return parse_bytes(text)


def z2jh_limits(values: dict) -> dict:
    single, cull = values["singleuser"], values["cull"]
    return {
        "mem_limit": to_bytes(single["memory"]["limit"]),
        "cpu_limit": float(single["cpu"]["limit"]),
        "cull": (cull["enabled"], cull["timeout"], cull["every"]),
    }


def local_limits() -> dict:
    from tools.teaching.hub.limits import parse_bytes

    return {
        "mem_limit": parse_bytes(hub.DEFAULT_LIMITS["mem_limit"]),
        "cpu_limit": float(hub.DEFAULT_LIMITS["cpu_limit"]),
        "cull": (True, hub.DEFAULT_CULL["timeout"], hub.DEFAULT_CULL["every"]),
    }


def test_the_per_user_limits_and_the_culler_are_the_local_hubs():
    values = load(Z2JH / "values.yaml")
    assert z2jh_limits(values) == local_limits()
    single = values["singleuser"]
    assert to_bytes(single["memory"]["guarantee"]) <= to_bytes(single["memory"]["limit"])
    assert float(single["cpu"]["guarantee"]) <= float(single["cpu"]["limit"])


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v["singleuser"]["memory"].update(limit="4G"),
        lambda v: v["singleuser"]["cpu"].update(limit=2),
        lambda v: v["cull"].update(enabled=False),
        lambda v: v["cull"].update(timeout=600),
    ],
    ids=["memory", "cpu", "culler-off", "cull-timeout"],
)
def test_the_comparison_with_the_local_hub_catches_a_drift(change):
    values = load(Z2JH / "values.yaml")
    change(values)
    assert z2jh_limits(values) != local_limits()
