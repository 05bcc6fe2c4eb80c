"""Regression guard (SECURITY §7 item 40): the policy backend must open every connection.

These tests use the default dialer (real sockets, to loopback only). If an httpx2/httpcore2 upgrade
or a refactor ever bypassed the custom network backend, the blocked destination below would start
succeeding and the loopback listener would count a connection.
"""

from __future__ import annotations

from importlib.metadata import version

import httpcore2
import httpx2
import pytest

from hub.egress import DestinationRefused, SystemResolver
from hub.egress.network import PolicyBackend
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import fetch, json_responder


class RecordingResolver(SystemResolver):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        return await super().resolve(host, port)


async def test_blocked_destination_still_fails_with_the_default_dialer(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    resolver = RecordingResolver()
    fetcher = make_fetcher(resolver=resolver)  # default TcpDialer, allow_loopback off
    for url in [f"https://localhost:{upstream.port}/", f"https://127.0.0.1:{upstream.port}/"]:
        with pytest.raises(DestinationRefused):
            await fetch(fetcher, url)
    assert upstream.connections == 0
    assert resolver.calls == ["localhost", "127.0.0.1"]


async def test_every_connection_goes_through_the_policy_backend(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    resolver = RecordingResolver()
    fetcher = make_fetcher(resolver=resolver, allow_loopback=True)
    assert isinstance(fetcher.transport.pool, httpcore2.AsyncConnectionPool)
    assert isinstance(fetcher.backend, PolicyBackend)
    response = await fetch(fetcher, f"http://localhost:{upstream.port}/")
    assert response.json() == {"ok": True}
    assert resolver.calls == ["localhost"]
    assert upstream.connections == 1


def test_http_libraries_stay_on_the_reviewed_series() -> None:
    # The transport relies on httpcore2's network_backend hook and httpx2's EventSource; review
    # both (and this module's tests) before moving to another series.
    assert httpx2.__version__.startswith("2.16.")
    assert version("httpcore2").startswith("2.16.")
