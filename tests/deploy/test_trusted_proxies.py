"""``hub serve`` believes ``X-Forwarded-For`` only from ``HUB_TRUSTED_PROXIES``.

A real ``hub serve`` on a random loopback port gets a request from 127.0.0.1 claiming to forward
203.0.113.9; the client the hub sees is the ``client`` field of that request's access log line.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from hub.cli.serve import proxy_options
from hub.core.settings import Settings
from tests.deploy.serving import running_hub

FORWARDED_CLIENT = "203.0.113.9"  # TEST-NET-3: only ever a header value, never a destination


@pytest.mark.slow
@pytest.mark.parametrize(
    ("trusted", "seen_client"),
    [
        pytest.param("", "127.0.0.1", id="unset-trusts-no-one"),
        pytest.param("127.0.0.1", FORWARDED_CLIENT, id="loopback-trusted"),
        pytest.param("10.0.0.0/8, 127.0.0.0/8", FORWARDED_CLIENT, id="cidr-trusted"),
        pytest.param("10.0.0.0/8", "127.0.0.1", id="other-proxy-trusted"),
    ],
)
def test_forwarded_client_is_believed_only_from_a_trusted_proxy(
    tmp_path: Path, trusted: str, seen_client: str
) -> None:
    with running_hub(tmp_path, HUB_TRUSTED_PROXIES=trusted) as hub:
        response = httpx2.get(
            f"{hub.base_url}/healthz",
            headers={"x-forwarded-for": FORWARDED_CLIENT},
            timeout=5,
        )
        assert response.status_code == 200
        request_id = response.headers["x-request-id"]
    access = [
        line
        for line in hub.log_lines
        if line.get("logger") == "uvicorn.access" and line.get("request_id") == request_id
    ]
    assert len(access) == 1, hub.log_lines
    assert access[0]["client"] == seen_client


def test_proxy_headers_are_off_without_trusted_proxies() -> None:
    options = proxy_options(Settings(trusted_proxies=[]))
    # an explicit empty list: uvicorn never falls back to its loopback default or environment
    assert options == {"proxy_headers": False, "forwarded_allow_ips": []}


def test_proxy_headers_are_on_for_the_configured_proxies() -> None:
    options = proxy_options(Settings(trusted_proxies=["10.0.0.0/8", "192.0.2.1"]))
    assert options == {"proxy_headers": True, "forwarded_allow_ips": ["10.0.0.0/8", "192.0.2.1"]}
