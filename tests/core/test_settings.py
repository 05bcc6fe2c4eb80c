"""Settings: explicit list parsing and the production refusals."""

from __future__ import annotations

import base64

import pytest
from pydantic import SecretStr

from hub.core.devsecrets import DEV_SECRETS_FILE, with_dev_secrets
from hub.core.settings import ConfigError, Settings, load_settings

KEY = base64.b64encode(b"x" * 32).decode()


def test_comma_separated_cidrs_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_EGRESS_ALLOW_CIDRS", "10.0.0.0/8, 192.168.1.0/24")
    assert load_settings().egress_allow_cidrs == ["10.0.0.0/8", "192.168.1.0/24"]


def test_bad_cidr_is_refused_without_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_EGRESS_ALLOW_CIDRS", "10.0.0.0/8,not-a-cidr-SECRETISH")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "egress_allow_cidrs" in str(info.value)
    assert "SECRETISH" not in str(info.value)


def test_extra_origins_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_EXTRA_ORIGINS", '{"https://a.test": ["https://b.test"]}')
    assert load_settings().extra_origins == {"https://a.test": ["https://b.test"]}


def test_production_refuses_missing_secrets_and_names_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HUB_ENV", "production")
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert "HUB_ENCRYPTION_KEYS is missing" in message
    assert "HUB_API_KEY_PEPPER is missing" in message
    assert "HUB_DATABASE_URL is missing" in message


def test_production_refuses_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_ENV", "production")
    monkeypatch.setenv("HUB_ENCRYPTION_KEYS", f"k1:{KEY}")
    monkeypatch.setenv("HUB_API_KEY_PEPPER", "p" * 40)
    monkeypatch.setenv("HUB_DATABASE_URL", "sqlite+aiosqlite:///x.db")
    with pytest.raises(ConfigError, match="must not be SQLite"):
        load_settings()


def test_production_accepts_explicit_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_ENV", "production")
    monkeypatch.setenv("HUB_ENCRYPTION_KEYS", f"k1:{KEY}")
    monkeypatch.setenv("HUB_API_KEY_PEPPER", "p" * 40)
    monkeypatch.setenv("HUB_DATABASE_URL", "postgresql+asyncpg://hub@db/hub")
    settings = load_settings()
    assert settings.env == "production"
    assert with_dev_secrets(settings) is settings


def test_production_on_every_interface_needs_the_public_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind a proxy, ``http://0.0.0.0:8080`` as the hub's own address refused every console
    sign-in as cross-origin and sent its cookies without ``Secure``."""
    monkeypatch.setenv("HUB_ENV", "production")
    monkeypatch.setenv("HUB_ENCRYPTION_KEYS", f"k1:{KEY}")
    monkeypatch.setenv("HUB_API_KEY_PEPPER", "p" * 40)
    monkeypatch.setenv("HUB_DATABASE_URL", "postgresql+asyncpg://hub@db/hub")
    for host in ("0.0.0.0", "::"):  # noqa: S104 - the settings are read, nothing is bound
        monkeypatch.setenv("HUB_HOST", host)
        with pytest.raises(ConfigError, match="HUB_PUBLIC_URL is missing"):
            load_settings()
    monkeypatch.setenv("HUB_PUBLIC_URL", "https://hub.example.com")
    assert load_settings().public_base_url == "https://hub.example.com"
    monkeypatch.delenv("HUB_PUBLIC_URL")
    monkeypatch.setenv("HUB_HOST", "10.1.2.3")  # an address of its own: reached there
    assert load_settings().public_base_url == "http://10.1.2.3:8080"


def test_production_refuses_generated_secrets() -> None:
    with pytest.raises(ValueError, match="generated development secrets"):
        Settings(
            env="production",
            database_url="postgresql+asyncpg://hub@db/hub",
            encryption_keys=SecretStr(f"k1:{KEY}"),
            api_key_pepper=SecretStr("p" * 40),
            secrets_generated=True,
        )


def test_development_generates_secrets_once_with_mode_0600(
    tmp_path: pytest.TempPathFactory, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(data_dir=tmp_path)  # type: ignore[arg-type]
    first = with_dev_secrets(settings)
    path = tmp_path / DEV_SECRETS_FILE  # type: ignore[operator]
    assert path.stat().st_mode & 0o777 == 0o600
    assert first.secrets_generated
    assert first.encryption_keys is not None
    assert first.api_key_pepper is not None
    assert "GENERATED DEVELOPMENT SECRETS" in caplog.text
    second = with_dev_secrets(settings)
    assert second.encryption_keys is not None
    assert second.encryption_keys.get_secret_value() == first.encryption_keys.get_secret_value()
    assert first.encryption_keys.get_secret_value() not in repr(first)


def test_trusted_proxies_default_to_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUB_TRUSTED_PROXIES", raising=False)
    assert load_settings().trusted_proxies == []


def test_comma_separated_trusted_proxies_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7,fd00::/8")
    assert load_settings().trusted_proxies == ["10.0.0.0/8", "192.0.2.7", "fd00::/8"]


@pytest.mark.parametrize("entry", ["*", "proxy.internal", "10.0.0.1/8"])
def test_trusted_proxy_that_is_not_an_address_or_network_is_refused(
    monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    monkeypatch.setenv("HUB_TRUSTED_PROXIES", f"127.0.0.1,{entry}")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "trusted_proxies" in str(info.value)
    assert entry not in str(info.value)


def test_the_pending_bound_must_hold_a_whole_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body larger than what incomplete requests may hold could never arrive."""
    monkeypatch.setenv("HUB_MAX_REQUEST_BYTES", str(8 * 1024 * 1024))
    monkeypatch.setenv("HUB_MAX_PENDING_REQUEST_BYTES", str(4 * 1024 * 1024))
    with pytest.raises(ConfigError, match="at least HUB_MAX_REQUEST_BYTES"):
        load_settings()
    monkeypatch.setenv("HUB_MAX_PENDING_REQUEST_BYTES", str(8 * 1024 * 1024))
    assert load_settings().max_pending_request_bytes == 8 * 1024 * 1024
