"""What the chart refuses to render, and what it works out for the operator (deploy/README.md).

An SRE's review of the chart found installs that rendered fine and then failed, or ran wrong, in
the cluster: no public URL (every console sign-in behind the Ingress refused as cross-origin), a
misspelt setting silently ignored, a bare number rendered as ``4.194304e+06`` (the hub refused to
start), a grace period shorter than the hub's own stop, a disruption budget no drain could meet,
rate limits per replica with a Redis password only a ConfigMap could carry. Each is checked here.
"""

from __future__ import annotations

import os
import re
from typing import Any

import helm_python as helm
import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from hub.core.settings import Settings, load_settings
from tests.deploy.chart import CHART, KUBERNETES_VERSIONS, Manifest, lint, render
from tests.deploy.test_helm_chart import INLINE_SECRETS, PUBLIC_URL, install

#: the hub's settings the chart keeps out of config: secrets, and what it sets itself
OUTSIDE_CONFIG = {
    "HUB_DATABASE_URL",
    "HUB_DATABASE_OWNER_URL",
    "HUB_DATABASE_APP_ROLE",
    "HUB_ENCRYPTION_KEYS",
    "HUB_ACTIVE_KEY_ID",
    "HUB_API_KEY_PEPPER",
    "HUB_RATE_LIMIT_STORAGE_URL",
    "HUB_HOST",
    "HUB_PORT",
    "HUB_SECRETS_GENERATED",  # the hub's own mark on generated development secrets
}


def _one(objects: list[Manifest], kind: str) -> Manifest:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def _container(objects: list[Manifest], kind: str) -> dict[str, Any]:
    container: dict[str, Any] = _one(objects, kind)["spec"]["template"]["spec"]["containers"][0]
    return container


def _grace(values: dict[str, Any]) -> int:
    pod = _one(render(install(values))[0], "Deployment")["spec"]["template"]["spec"]
    grace: int = pod["terminationGracePeriodSeconds"]
    return grace


def test_the_settings_config_may_hold_are_the_hubs_own() -> None:
    template = (CHART / "templates" / "_helpers.tpl").read_text()
    block = template.split('define "mcp-hub.settingNames" -}}', 1)[1].split("{{- end }}", 1)[0]
    listed = block.split()
    assert len(listed) == len(set(listed))
    hubs = {f"HUB_{name.upper()}" for name in Settings.model_fields}
    assert set(listed) == hubs - OUTSIDE_CONFIG


def test_a_setting_the_hub_does_not_read_fails_the_render() -> None:
    with pytest.raises(helm.HelmError, match=r"config\.HUB_SHUTDOWN_GRACE: the hub reads no such"):
        render(install({"config": {"HUB_SHUTDOWN_GRACE": "60"}}))


def test_numbers_and_booleans_reach_the_hub_as_it_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Helm reads a bare number of a values file as a float: 4194304 was rendered
    ``4.194304e+06``, and the hub refused to start."""
    config = {
        "HUB_MAX_REQUEST_BYTES": 4194304,
        "HUB_SHUTDOWN_GRACE_S": 12.5,
        "HUB_WORKERS": False,
        "HUB_DATABASE_POOL_SIZE": 6,
    }
    objects = render(install({"config": config}))[0]
    data = _one(objects, "ConfigMap")["data"]
    assert data["HUB_MAX_REQUEST_BYTES"] == "4194304"
    assert data["HUB_SHUTDOWN_GRACE_S"] == "12.5"
    assert data["HUB_WORKERS"] == "false"
    job_env = {e["name"]: e.get("value") for e in _container(objects, "Job")["env"]}
    assert job_env["HUB_MAX_REQUEST_BYTES"] == "4194304"  # the Job gets the same text
    settings = _hub_settings(objects, monkeypatch)
    assert settings.max_request_bytes == 4194304
    assert settings.shutdown_grace_s == 12.5
    assert settings.workers is False
    with pytest.raises(helm.HelmError, match="a setting is text, a number or a boolean"):
        render(install({"config": {"HUB_EXTRA_ORIGINS": {"https://a.example": []}}}))


def _hub_settings(objects: list[Manifest], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The settings a replica starts with: the ConfigMap, the container's plain values, and
    stand-ins for what its Secret holds."""
    for name in [n for n in os.environ if n.startswith("HUB_")]:
        monkeypatch.delenv(name)
    env = dict(_one(objects, "ConfigMap")["data"])
    container = _container(objects, "Deployment")
    env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
    env.update(
        HUB_DATABASE_URL="postgresql+asyncpg://hub_app@db.example.com/hub",
        HUB_ENCRYPTION_KEYS=INLINE_SECRETS["secrets"]["encryptionKeys"],
        HUB_API_KEY_PEPPER=INLINE_SECRETS["secrets"]["apiKeyPepper"],
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return load_settings()


def test_the_public_url_is_required_or_taken_from_the_ingress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without it the hub in a pod called itself ``http://0.0.0.0:8080``: behind the Ingress
    every console sign-in was refused as cross-origin, its cookies went without ``Secure``, and
    approval links and OAuth redirects named that address. Production now refuses to start so,
    and the chart refuses to install so."""
    bare = install({})
    del bare["config"]["HUB_PUBLIC_URL"]
    refused = r"config\.HUB_PUBLIC_URL must be set"
    with pytest.raises(helm.HelmError, match=refused):
        render(bare)
    with helm.Chart.load(CHART) as chart, pytest.raises(helm.HelmError, match=refused):
        chart.render(bare, name="hub", namespace="mcp", is_upgrade=True)  # on an upgrade too
    development = {**bare, "config": {"HUB_ENV": "development"}}
    assert "HUB_PUBLIC_URL" not in _one(render(development)[0], "ConfigMap")["data"]
    ingress = {"enabled": True, "hosts": [{"host": "hub.corp.example", "paths": []}]}
    tls = [{"secretName": "t", "hosts": ["hub.corp.example"]}]
    cases: list[tuple[dict[str, Any], dict[str, str], str]] = [
        ({**ingress, "tls": tls}, {}, "https://hub.corp.example"),
        (ingress, {}, "http://hub.corp.example"),
        (ingress, {"HUB_PUBLIC_URL": PUBLIC_URL}, PUBLIC_URL),  # config's wins
    ]
    for with_ingress, config, expected in cases:
        values = {**bare, "ingress": with_ingress, "config": {**bare["config"], **config}}
        objects = render(values)[0]
        assert _one(objects, "ConfigMap")["data"]["HUB_PUBLIC_URL"] == expected
        job_env = {e["name"]: e.get("value") for e in _container(objects, "Job")["env"]}
        assert job_env["HUB_PUBLIC_URL"] == expected
    # what the chart renders, the hub in production starts with
    assert _hub_settings(render(install({}))[0], monkeypatch).public_base_url == PUBLIC_URL


def test_the_grace_period_covers_the_hubs_whole_stop() -> None:
    """The hub drains requests for up to HUB_SHUTDOWN_GRACE_S, then waits as long again for
    its workers' current jobs: 45 s (the old default) was SIGKILL in the middle of the second."""
    assert _grace({}) == 5 + 2 * 30 + 10
    assert _grace({"preStopSleepSeconds": 0, "config": {"HUB_SHUTDOWN_GRACE_S": "10"}}) == 30
    assert _grace({"terminationGracePeriodSeconds": 120}) == 120
    with pytest.raises(helm.HelmError, match="terminationGracePeriodSeconds must be at least 75"):
        _grace({"terminationGracePeriodSeconds": 45})


def test_a_disruption_budget_no_drain_could_meet_fails() -> None:
    with pytest.raises(helm.HelmError, match=r"minAvailable \(2\) must be below the replicas"):
        render(install({"podDisruptionBudget": {"maxUnavailable": "", "minAvailable": 2}}))
    scaled = {"enabled": True, "minReplicas": 3, "maxReplicas": 6}
    budget = {"maxUnavailable": "", "minAvailable": 2}
    objects = render(install({"autoscaling": scaled, "podDisruptionBudget": budget}))[0]
    assert _one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == 2
    percent = {"maxUnavailable": "", "minAvailable": "50%"}
    objects = render(install({"podDisruptionBudget": percent}))[0]
    assert _one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == "50%"


def test_extra_env_reaches_both_pods_and_may_not_shadow_the_charts() -> None:
    extra = [{"name": "HUB_TLS_CA_FILE", "value": "/etc/hub-ca/ca.crt"}]
    objects = render(install({"extraEnv": extra}))[0]
    for kind in ("Deployment", "Job"):
        assert extra[0] in _container(objects, kind)["env"]
    for name in ("HUB_PORT", "HUB_DATABASE_URL", "HUB_LOG_LEVEL"):  # chart, secret, config
        with pytest.raises(helm.HelmError, match=f"extraEnv.{name}: the chart sets it already"):
            render(install({"extraEnv": [{"name": name, "value": "x"}]}))


def test_rate_limits_shared_through_a_secret_and_the_notes_warn_when_they_are_not() -> None:
    redis = "redis://:limits-password@redis.example.com:6379/0"
    secrets = {**INLINE_SECRETS["secrets"], "rateLimitStorageUrl": redis}
    objects, notes = render({**INLINE_SECRETS, "secrets": secrets})
    assert "WARNING: rate limits" not in notes
    assert redis not in str(_one(objects, "ConfigMap")) + str(_one(objects, "Deployment"))
    stored = [o for o in objects if o["kind"] == "Secret"]
    assert all("rate-limit-storage-url" in o["data"] for o in stored)
    for kind in ("Deployment", "Job"):
        [ref] = [
            e["valueFrom"]["secretKeyRef"]
            for e in _container(objects, kind)["env"]
            if e["name"] == "HUB_RATE_LIMIT_STORAGE_URL"
        ]
        assert ref["key"] == "rate-limit-storage-url"
        assert ref["optional"] is True  # an existing Secret may leave it out
    notes = render(INLINE_SECRETS)[1]
    assert "each of the 2 replicas admits the whole limit" in notes
    assert "Database connections: up to 24 " in notes  # (2 + 1 in a rollout) x 2 x 4
    one = render({**INLINE_SECRETS, "replicaCount": 1, "podDisruptionBudget": {"enabled": False}})
    assert "WARNING: rate limits" not in one[1]


def test_the_listen_address_may_be_ipv6() -> None:
    objects = render(install({"listenAddress": "::"}))[0]
    env = {e["name"]: e.get("value") for e in _container(objects, "Deployment")["env"]}
    assert env["HUB_HOST"] == "::"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_network_policy_lets_out_dns_the_internet_and_the_allowed_ranges(version: str) -> None:
    assert not [o for o in render(install({}))[0] if o["kind"] == "NetworkPolicy"]
    database = {
        "to": [{"ipBlock": {"cidr": "10.0.5.10/32"}}],
        "ports": [{"port": 5432, "protocol": "TCP"}],
    }
    values = install(
        {
            "networkPolicy": {"enabled": True, "extraEgress": [database]},
            "config": {"HUB_EGRESS_ALLOW_CIDRS": "10.100.0.0/16, 10.101.0.0/16"},
        }
    )
    policy = _one(render(values)[0], "NetworkPolicy")
    kubernetes_validate.validate(policy, version, strict=True)
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == {  # the replicas and the migration Job
        "app.kubernetes.io/name": "mcp-hub",
        "app.kubernetes.io/instance": "hub",
    }
    assert spec["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}]}]
    dns, internet, allowed, extra = spec["egress"]
    assert {p["port"] for p in dns["ports"]} == {53}
    v4, v6 = (block["ipBlock"] for block in internet["to"])
    assert v4["cidr"] == "0.0.0.0/0"
    assert {"169.254.0.0/16", "10.0.0.0/8", "127.0.0.0/8"} <= set(v4["except"])
    assert v6 == {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10"]}
    assert [b["ipBlock"]["cidr"] for b in allowed["to"]] == ["10.100.0.0/16", "10.101.0.0/16"]
    assert extra == database


def test_the_bare_chart_still_lints() -> None:
    """The checks that need an operator's values run on install and upgrade only."""
    report = lint(None, KUBERNETES_VERSIONS[-1])
    assert report["errors"] == []
    notes_template = (CHART / "templates" / "NOTES.txt").read_text()
    assert not re.search(r"secretsMissing", notes_template)  # the install fails instead
