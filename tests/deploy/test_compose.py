"""``deploy/compose.yaml`` and its env examples, read as documented in deploy/README.md.

No Docker daemon: the file is parsed with PyYAML (anchors and merge keys resolved as compose does)
and its structure checked: the services, a healthcheck on every long-running one, the one-shot
migration the hub waits for, the hardening, and secrets only from env files.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from hub.core.settings import Settings, load_settings
from tests.deploy.dockerfile import read_stages

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SECRET_NAMES = ("HUB_ENCRYPTION_KEYS", "HUB_API_KEY_PEPPER", "HUB_DATABASE_URL", "PASSWORD")


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = _compose()["services"]
    return services


def _env_example(name: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (DEPLOY / name).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, line
            values[key.strip()] = value.strip()
    return values


def test_compose_names_the_documented_services() -> None:
    services = _services()
    assert set(services) == {"db", "redis", "migrate", "hub"}
    assert services["redis"]["profiles"] == ["redis"]  # optional
    assert [name for name, s in services.items() if "profiles" in s] == ["redis"]


def test_every_long_running_service_has_a_healthcheck() -> None:
    for name, service in _services().items():
        if service.get("restart") == "no":
            continue
        assert service["restart"] == "unless-stopped", name
        test = service["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL"), name


def test_migration_is_a_one_shot_after_a_healthy_database() -> None:
    migrate = _services()["migrate"]
    assert migrate["command"] == ["db", "upgrade"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert "ports" not in migrate
    assert "healthcheck" not in migrate


def test_hub_starts_after_the_migration_succeeded() -> None:
    hub = _services()["hub"]
    assert hub["command"] == ["serve"]
    assert hub["depends_on"] == {
        "db": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    assert hub["ports"] == ["${HUB_PUBLISH:-127.0.0.1:8080}:8080"]  # host loopback by default


def test_hub_healthcheck_is_the_image_healthcheck() -> None:
    image_check = read_stages(DEPLOY / "Dockerfile")[-1].one("HEALTHCHECK").exec_form()
    test = _services()["hub"]["healthcheck"]["test"]
    assert test == ["CMD", *image_check]
    assert "/healthz" in test[-1]


@pytest.mark.parametrize("name", ["migrate", "hub"])
def test_hub_containers_share_one_image_and_are_hardened(name: str) -> None:
    service = _services()[name]
    assert service["image"] == "${HUB_IMAGE:-mcp-hub:local}"
    assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert service["env_file"] == "production.env"
    assert service["read_only"] is True
    assert service["tmpfs"] == ["/tmp"]  # noqa: S108 - the container's own, a tmpfs
    assert service["cap_drop"] == ["ALL"]
    assert service["security_opt"] == ["no-new-privileges:true"]


def test_secrets_come_only_from_env_files() -> None:
    for name, service in _services().items():
        for key in service.get("environment") or {}:
            assert not any(secret in key for secret in SECRET_NAMES), (name, key)
    assert _services()["db"]["env_file"] == "postgres.env"  # the hub's secrets stay out of it
    for env_file in ("production.env", "postgres.env"):
        assert (DEPLOY / f"{env_file}.example").exists()
    ignored = (DEPLOY.parent / ".gitignore").read_text().splitlines()
    assert "deploy/*.env" in ignored  # real env files are never committed


def test_env_examples_hold_placeholders_and_agree_on_the_database() -> None:
    hub_env = _env_example("production.env.example")
    db_env = _env_example("postgres.env.example")
    assert hub_env["HUB_API_KEY_PEPPER"] == "CHANGE_ME"
    assert hub_env["HUB_ENCRYPTION_KEYS"] == "k1:CHANGE_ME"
    assert db_env["POSTGRES_PASSWORD"] == "CHANGE_ME"
    url = urlsplit(hub_env["HUB_DATABASE_URL"])
    assert url.scheme == "postgresql+asyncpg"
    assert url.hostname == "db"  # the compose service
    assert url.username == db_env["POSTGRES_USER"]
    assert url.password == db_env["POSTGRES_PASSWORD"]
    assert url.path == f"/{db_env['POSTGRES_DB']}"


def test_production_env_example_is_a_complete_production_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    example = _env_example("production.env.example")
    assert all(key.startswith("HUB_") for key in example)
    known = {f"HUB_{name.upper()}" for name in Settings.model_fields}
    assert set(example) <= known  # no misspelt setting
    filled = {
        **example,
        "HUB_ENCRYPTION_KEYS": "k1:" + base64.b64encode(b"e" * 32).decode(),
        "HUB_API_KEY_PEPPER": "example-pepper-0123456789abcdef0123456789",
    }
    for key, value in filled.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert settings.env == "production"
    assert settings.trusted_proxies == []
