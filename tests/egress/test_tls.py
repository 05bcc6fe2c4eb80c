"""TLS keeps the hostname (Host, SNI, certificate check) while the socket goes to the checked IP."""

from __future__ import annotations

import pytest

from hub.egress import TlsFailed
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import PUBLIC_V4, FakeResolver, RouteDialer, fetch, json_responder


async def test_certificate_for_the_hostname_verifies_on_the_checked_address(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V4: upstream.port})
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}), dialer=dialer)
    response = await fetch(fetcher, "https://mcp.test/mcp")
    assert response.json() == {"ok": True}
    assert dialer.dials == [(PUBLIC_V4, 443)]
    assert upstream.requests[0].headers["host"] == "mcp.test"
    assert upstream.server_names == ["mcp.test"]


async def test_host_header_keeps_a_non_default_port(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V4: upstream.port})
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}), dialer=dialer)
    await fetch(fetcher, "https://mcp.test:8443/mcp")
    assert dialer.dials == [(PUBLIC_V4, 8443)]
    assert upstream.requests[0].headers["host"] == "mcp.test:8443"


async def test_certificate_for_another_name_is_tls_failed(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V4: upstream.port})
    fetcher = make_fetcher(resolver=FakeResolver({"other.test": [PUBLIC_V4]}), dialer=dialer)
    with pytest.raises(TlsFailed) as caught:
        await fetch(fetcher, "https://other.test/mcp")
    assert caught.value.reason == "tls_failed"
    assert upstream.requests == []


async def test_untrusted_certificate_is_tls_failed(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V4: upstream.port})
    fetcher = make_fetcher(
        resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}), dialer=dialer, tls_ca_file=None
    )
    with pytest.raises(TlsFailed):
        await fetch(fetcher, "https://mcp.test/mcp")
    assert upstream.requests == []
