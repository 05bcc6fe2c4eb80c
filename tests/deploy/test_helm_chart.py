"""``deploy/helm/mcp-hub``: lints clean, renders valid manifests, holds what DESIGN §11 asks.

Rendered and linted with helm-python-sdk (Helm's Go SDK in the wheel, no helm binary) for default
values, the production-like ``values-production.yaml`` (an existing Secret, autoscaling, Ingress)
and inline secrets; every rendered object validates with kubernetes-validate, strictly (no unknown
field), against each of KUBERNETES_VERSIONS.
"""

from __future__ import annotations

import base64
from typing import Any

import helm_python as helm
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

import hub
from tests.deploy.chart import (
    CHART,
    KUBERNETES_VERSIONS,
    PRODUCTION_VALUES,
    Manifest,
    lint,
    load_values,
    render,
)

APP_URL = "postgresql+asyncpg://hub_app:app-password@db.example.com:5432/hub"
OWNER_URL = "postgresql+asyncpg://hub_owner:owner-password@db.example.com:5432/hub"
PUBLIC_URL = "https://hub.example.com"
INLINE_SECRETS: dict[str, Any] = {
    "config": {"HUB_PUBLIC_URL": PUBLIC_URL},
    "secrets": {
        "databaseUrl": APP_URL,
        "migrationDatabaseUrl": OWNER_URL,
        "encryptionKeys": "k1:" + base64.b64encode(b"c" * 32).decode(),
        "activeKeyId": "k1",
        "apiKeyPepper": "chart-test-pepper-0123456789abcdef0123456789",
    },
}
#: the least an install takes: the secrets (here an existing Secret) and the public URL
MINIMAL: dict[str, Any] = {
    "config": {"HUB_PUBLIC_URL": PUBLIC_URL},
    "secrets": {"existingSecret": "hub-secrets"},
}
#: lint runs on the bare chart too ("defaults"); an install of it fails (test_helm_checks.py)
CASES = ["defaults", "minimal", "production", "inline-secrets"]


def _values(case: str) -> dict[str, Any] | None:
    if case == "production":
        return load_values(PRODUCTION_VALUES)
    return {"minimal": MINIMAL, "inline-secrets": INLINE_SECRETS}.get(case)


def install(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` over :data:`MINIMAL` (one level of groups merged)."""
    merged: dict[str, Any] = {key: dict(value) for key, value in MINIMAL.items()}
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key].update(value)
        else:
            merged[key] = value
    return merged


RENDERED = ["minimal", "production", "inline-secrets"]


def _objects(case: str) -> list[Manifest]:
    return render(_values(case))[0]


def _one(objects: list[Manifest], kind: str) -> Manifest:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


def _pod(objects: list[Manifest], kind: str) -> dict[str, Any]:
    spec: dict[str, Any] = _one(objects, kind)["spec"]["template"]
    return spec


def _secret_refs(container: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        e["name"]: (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", CASES)
def test_chart_passes_helm_lint_strict(case: str, version: str) -> None:
    report = lint(_values(case), version)
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    # severity 2 = warning, 3 = error; "icon is recommended" (1, info) is all that is left
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", RENDERED)
def test_every_rendered_manifest_validates_strictly(case: str, version: str) -> None:
    objects = _objects(case)
    assert objects
    for manifest in objects:
        checked = kubernetes_validate.validate(manifest, version, strict=True)
        assert checked == version.rpartition(".")[0]  # the schema of that very version was used


def test_strict_validation_refuses_an_unknown_field() -> None:
    deployment = _one(_objects("minimal"), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFs"] = True  # a typo
    with pytest.raises(kubernetes_validate.ValidationError, match="readOnlyRootFs"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[0], strict=True)


def test_the_least_an_install_takes_renders_the_core_objects_only() -> None:
    kinds = sorted(o["kind"] for o in _objects("minimal"))
    assert kinds == ["ConfigMap", "Deployment", "Job", "PodDisruptionBudget", "Service"]
    kinds = sorted(o["kind"] for o in _objects("inline-secrets"))
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "Job",
        "PodDisruptionBudget",
        "Secret",  # the replicas'
        "Secret",  # the migration hook's
        "Service",
    ]


def test_production_values_add_autoscaler_and_ingress_and_use_the_existing_secret() -> None:
    objects = _objects("production")
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Ingress",
        "Job",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Service",
    ]
    deployment = _one(objects, "Deployment")
    assert "replicas" not in deployment["spec"]  # the autoscaler owns the count
    hpa = _one(objects, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 12)
    refs = _secret_refs(_pod(objects, "Deployment")["spec"]["containers"][0])
    assert {name for name, _ in refs.values()} == {"mcp-hub-secrets"}
    assert _one(objects, "PodDisruptionBudget")["spec"] == {
        "minAvailable": 2,
        "selector": deployment["spec"]["selector"],
    }


def test_replicas_run_n_of_them_when_not_autoscaled() -> None:
    assert _one(_objects("minimal"), "Deployment")["spec"]["replicas"] == 2
    objects = render(install({"replicaCount": 5}))[0]
    assert _one(objects, "Deployment")["spec"]["replicas"] == 5


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
@pytest.mark.parametrize("case", RENDERED)
def test_pods_are_non_root_read_only_and_unprivileged(case: str, kind: str) -> None:
    pod = _pod(_objects(case), kind)["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's USER
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert container["volumeMounts"][0] == {"name": "tmp", "mountPath": "/tmp"}  # noqa: S108
    assert pod["volumes"][0]["name"] == "tmp"
    assert "emptyDir" in pod["volumes"][0]
    if case == "production":  # a CA bundle, the same in both pods: the root is read-only
        assert container["volumeMounts"][1]["mountPath"] == "/etc/hub-ca"
        assert pod["volumes"][1] == {
            "name": "upstream-ca",
            "configMap": {"name": "company-ca-bundle"},
        }
    else:
        assert len(container["volumeMounts"]) == len(pod["volumes"]) == 1
    assert set(container["resources"]) == {"requests", "limits"}


@pytest.mark.parametrize("case", RENDERED)
def test_replicas_probe_healthz_for_liveness_and_readyz_for_readiness(case: str) -> None:
    (container,) = _pod(_objects(case), "Deployment")["spec"]["containers"]
    assert container["args"] == ["serve"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HUB_HOST"] == "0.0.0.0"  # noqa: S104 - the pod's own network namespace
    assert env["HUB_PORT"] == str(container["ports"][0]["containerPort"])


@pytest.mark.parametrize("case", RENDERED)
def test_migration_runs_as_a_pre_install_and_pre_upgrade_hook(case: str) -> None:
    objects = _objects(case)
    job = _one(objects, "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["args"] == ["db", "upgrade"]
    assert "envFrom" not in container  # the ConfigMap does not exist yet on a first install
    settings = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    assert settings["HUB_ENV"] == "production"
    assert {"HUB_DATABASE_URL", "HUB_ENCRYPTION_KEYS", "HUB_API_KEY_PEPPER"} <= set(
        _secret_refs(container)
    )


def test_migration_pods_are_not_behind_the_service() -> None:
    objects = _objects("minimal")
    selector = _one(objects, "Service")["spec"]["selector"]
    serving = _pod(objects, "Deployment")["metadata"]["labels"]
    migrating = _pod(objects, "Job")["metadata"]["labels"]
    assert selector.items() <= serving.items()
    assert not selector.items() <= migrating.items()
    assert _one(objects, "Deployment")["spec"]["selector"]["matchLabels"] == selector


def test_replicas_never_see_the_migration_database_url() -> None:
    objects = _objects("inline-secrets")
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    app = secrets["hub-mcp-hub"]
    hook = secrets["hub-mcp-hub-migration"]
    assert base64.b64decode(app["data"]["database-url"]).decode() == APP_URL
    assert OWNER_URL not in str(app) + str(_one(objects, "Deployment"))
    assert base64.b64decode(hook["data"]["database-url"]).decode() == OWNER_URL
    assert hook["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "hook-succeeded" in hook["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
    assert app["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    job_refs = _secret_refs(_pod(objects, "Job")["spec"]["containers"][0])
    assert job_refs["HUB_DATABASE_URL"] == ("hub-mcp-hub-migration", "database-url")
    app_refs = _secret_refs(_pod(objects, "Deployment")["spec"]["containers"][0])
    assert app_refs["HUB_DATABASE_URL"] == ("hub-mcp-hub", "database-url")


def test_existing_secret_can_give_the_migration_its_own_url() -> None:
    job_refs = _secret_refs(_pod(_objects("production"), "Job")["spec"]["containers"][0])
    assert job_refs["HUB_DATABASE_URL"] == ("mcp-hub-secrets", "migration-database-url")
    assert job_refs["HUB_API_KEY_PEPPER"] == ("mcp-hub-secrets", "api-key-pepper")


def _plain_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def test_the_migration_grants_the_app_role_and_only_it_knows_the_role() -> None:
    objects = _objects("production")
    job = _pod(objects, "Job")["spec"]["containers"][0]
    assert _plain_env(job)["HUB_DATABASE_APP_ROLE"] == "hub_app"
    deployment = _pod(objects, "Deployment")["spec"]["containers"][0]
    assert "HUB_DATABASE_APP_ROLE" not in str(deployment) + str(_one(objects, "ConfigMap"))
    defaults = _pod(_objects("minimal"), "Job")["spec"]["containers"][0]
    assert "HUB_DATABASE_APP_ROLE" not in _plain_env(defaults)


def test_defaults_hold_no_secret_and_an_install_without_them_fails_naming_them() -> None:
    """The chart generates nothing. It used to render empty Secrets and a warning in NOTES that
    no one saw: Helm waits for the migration hook, which cannot start without them, until its
    timeout, and prints NOTES only after."""
    with helm.Chart.load(CHART) as chart:
        defaults = chart.values["secrets"]
    assert all(value == "" for value in defaults.values())
    with pytest.raises(helm.HelmError, match=r"secrets\.databaseUrl, secrets\.encryptionKeys"):
        render({"config": {"HUB_PUBLIC_URL": PUBLIC_URL}})
    notes = render(INLINE_SECRETS)[1]
    assert "hub bootstrap --if-absent" in notes


@pytest.mark.parametrize(
    "setting",
    [
        "HUB_API_KEY_PEPPER",
        "HUB_ENCRYPTION_KEYS",
        "HUB_PORT",
        "HUB_DATABASE_OWNER_URL",
        "HUB_RATE_LIMIT_STORAGE_URL",
    ],
)
def test_secrets_and_chart_owned_settings_are_refused_in_config(setting: str) -> None:
    with pytest.raises(helm.HelmError, match=f"config.{setting} is not allowed"):
        render(install({"config": {setting: "x"}}))


def test_config_is_the_configmap_and_a_change_rolls_the_replicas() -> None:
    first = render(install({"config": {"HUB_TRUSTED_PROXIES": "10.0.0.0/8"}}))[0]
    assert _one(first, "ConfigMap")["data"]["HUB_TRUSTED_PROXIES"] == "10.0.0.0/8"
    assert "HUB_TRUSTED_PROXIES" not in _one(_objects("minimal"), "ConfigMap")["data"]  # empty
    second = render(install({"config": {"HUB_TRUSTED_PROXIES": "10.0.0.0/16"}}))[0]
    annotation = "checksum/config"
    assert (
        _pod(first, "Deployment")["metadata"]["annotations"][annotation]
        != _pod(second, "Deployment")["metadata"]["annotations"][annotation]
    )


def test_app_version_is_the_hub_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == hub.__version__
    image = _pod(_objects("minimal"), "Deployment")["spec"]["containers"][0]["image"]
    assert image == f"mcp-hub:{hub.__version__}"


def test_every_value_is_documented() -> None:
    """Each top-level value and each value of a settings group has a comment right above it."""
    groups = {
        "image",
        "secrets",
        "migration",
        "config",
        "service",
        "ingress",
        "autoscaling",
        "podDisruptionBudget",
        "probes",
        "networkPolicy",
    }
    lines = (CHART / "values.yaml").read_text().splitlines()
    undocumented: list[str] = []
    parent = ""
    for number, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith(("#", "-")) or ":" not in line:
            continue
        indent = len(line) - len(line.lstrip())
        key = line.strip().split(":", 1)[0]
        if indent == 0:
            parent = key
        elif not (indent == 2 and parent in groups):
            continue
        if not lines[number - 1].lstrip().startswith("#"):
            undocumented.append(f"{parent}.{key}" if indent else key)
    assert undocumented == []
