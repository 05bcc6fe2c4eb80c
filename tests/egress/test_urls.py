"""Static URL rules, origins, header-safe secrets and the configuration (no I/O anywhere)."""

from __future__ import annotations

import ipaddress

import pytest

from hub.core.settings import Settings
from hub.egress import EgressConfig, UrlRejected, is_header_safe_secret, origin_of, validate_url

STRICT = EgressConfig()
LOOPBACK = EgressConfig(allow_loopback=True)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://files.example.com/x",
        "http+unix://%2Fvar%2Frun%2Fdocker.sock/info",
        "gopher://example.com/",
        "https://user:pass@mcp.example.com/",
        "https://token@mcp.example.com/",
        "https://mcp.example.com/#frag",
        "https://mcp.example.com/#",
        "/relative/path",
        "mcp.example.com/mcp",
        "https:///nohost",
        "https://mcp.example.com:0/",
        "https://mcp.exa mple.com/",
        "https://mcp.example.com/\r\nX-Injected: 1",
        "https:\\\\mcp.example.com\\",
        "",
    ],
)
def test_static_rules_refuse_url(url: str) -> None:
    with pytest.raises(UrlRejected) as caught:
        validate_url(url, LOOPBACK)
    assert caught.value.reason == "invalid_url"
    assert url.strip() == "" or url not in str(caught.value)


def test_rejection_message_never_echoes_the_url() -> None:
    url = "https://user:SECRET-IN-URL@mcp.example.com/"
    with pytest.raises(UrlRejected) as caught:
        validate_url(url, STRICT)
    assert "SECRET-IN-URL" not in str(caught.value)
    assert "SECRET-IN-URL" not in repr(caught.value)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8080/", "http://localhost/", "http://[::1]:9000/x", "http://127.9.9.9/"],
)
def test_plain_http_only_to_loopback_with_the_flag(url: str) -> None:
    assert validate_url(url, LOOPBACK)
    with pytest.raises(UrlRejected):
        validate_url(url, STRICT)


@pytest.mark.parametrize(
    "url",
    [
        "http://mcp.example.com/",
        "http://10.0.0.1/",
        "http://2130706433/",
        "http://localhost.evil.test/",
    ],
)
def test_plain_http_to_anything_else_is_refused_even_with_the_flag(url: str) -> None:
    with pytest.raises(UrlRejected):
        validate_url(url, LOOPBACK)


def test_valid_url_is_normalised() -> None:
    assert (
        validate_url("HTTPS://MCP.Example.COM:443/Mcp?x=1", STRICT)
        == "https://mcp.example.com/Mcp?x=1"
    )


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://MCP.example.com/a/b?c", "https://mcp.example.com"),
        ("https://mcp.example.com:443/", "https://mcp.example.com"),
        ("https://mcp.example.com:8443/x", "https://mcp.example.com:8443"),
        ("http://127.0.0.1:80/", "http://127.0.0.1"),
        ("http://[::1]:9000/", "http://[::1]:9000"),
        ("https://bücher.example/", "https://xn--bcher-kva.example"),
    ],
)
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "secret", ["abc123", "hub_Ab0_xyz", "a b c", "x" * 8192, "!#$%&'*+-.^_`|~=/"]
)
def test_header_safe_secrets(secret: str) -> None:
    assert is_header_safe_secret(secret)


@pytest.mark.parametrize(
    "secret",
    [
        "",
        " lead",
        "trail ",
        "a\r\nb",
        "a\nb",
        "a\rb",
        "a\tb",
        "a\x00b",
        "a\x7fb",
        "caf\u00e9",
        "x" * 8193,
    ],
)
def test_header_unsafe_secrets(secret: str) -> None:
    assert not is_header_safe_secret(secret)


def test_config_from_settings() -> None:
    settings = Settings(
        allow_loopback=True,
        egress_allow_cidrs="10.0.0.0/8, fd00::/8",  # type: ignore[arg-type]
        extra_origins='{"https://MCP.example.com:443": ["https://auth.example.com/x"]}',  # type: ignore[arg-type]
        max_response_bytes=2048,
        max_operation_bytes=4096,
        egress_max_per_origin=3,
    )
    config = EgressConfig.from_settings(settings)
    assert config.allow_loopback
    assert config.allow_cidrs == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("fd00::/8"),
    )
    assert config.allowed_origins("https://mcp.example.com") == {
        "https://mcp.example.com",
        "https://auth.example.com",
    }
    assert (config.max_response_bytes, config.max_operation_bytes, config.max_per_origin) == (
        2048,
        4096,
        3,
    )
    assert (
        config.connect_timeout_s,
        config.read_timeout_s,
        config.write_timeout_s,
        config.pool_timeout_s,
    ) == (
        10.0,
        30.0,
        10.0,
        5.0,
    )
