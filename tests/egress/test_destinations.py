"""Destination policy at connect time: blocked answers, numeric hosts, mixed answers, rebinding.

Every listener here is on loopback; the routing dialer maps the blocked or fake addresses to it, so
a policy bug would show up as a real connection counted by the listener.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpcore2
import pytest

from hub.egress import (
    ConnectFailed,
    DestinationPolicy,
    DestinationRefused,
    EgressResponse,
    SystemResolver,
)
from hub.egress.network import PolicyBackend
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    PUBLIC_V4,
    PUBLIC_V6,
    Conn,
    CountingListener,
    FakeResolver,
    RequestHead,
    RouteDialer,
    fetch,
    full_response,
    json_responder,
)

BLOCKED_ANSWERS = [
    "127.0.0.1",
    "10.1.2.3",
    "169.254.169.254",
    "100.100.100.200",
    "::1",
    "fd00:ec2::254",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "2002:a9fe:a9fe::1",
    "::127.0.0.1",
    "0.0.0.0",  # noqa: S104
    "172.16.5.4",
    "192.168.0.1",
    "224.0.0.251",
    "fe80::1",
    "2001::a9fe:a9fe",
    "::ffff:0:a9fe:a9fe",
]


@pytest.fixture
async def listener() -> AsyncIterator[CountingListener]:
    started = await CountingListener().start()
    yield started
    await started.close()


@pytest.mark.parametrize("answer", BLOCKED_ANSWERS)
async def test_blocked_answer_is_refused_with_zero_connections(
    answer: str, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("evil.test",))
    resolver = FakeResolver({"evil.test": [answer]})
    dialer = RouteDialer({answer: upstream.port})
    fetcher = make_fetcher(resolver=resolver, dialer=dialer)
    with pytest.raises(DestinationRefused) as caught:
        await fetch(fetcher, "https://evil.test/mcp")
    assert caught.value.reason == "destination_refused"
    assert resolver.calls == ["evil.test"]
    assert dialer.dials == []
    assert upstream.connections == 0


@pytest.mark.parametrize(
    "url",
    [
        "https://2130706433/",
        "https://0x7f.1/",
        "https://017700000001/",
        "https://127.1/",
        "https://0x7f000001/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::127.0.0.1]/",
        "https://[::1]/",
        "https://127.0.0.1/",
        "https://0/",
    ],
)
async def test_numeric_host_form_is_refused_with_zero_connections(
    url: str, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    loopbacks = ["127.0.0.1", "::1", "::ffff:127.0.0.1", "::127.0.0.1", "0.0.0.0"]  # noqa: S104
    dialer = RouteDialer(dict.fromkeys(loopbacks, upstream.port))
    fetcher = make_fetcher(resolver=SystemResolver(), dialer=dialer)  # getaddrinfo's own output
    with pytest.raises(DestinationRefused):
        await fetch(fetcher, url)
    assert dialer.dials == []
    assert upstream.connections == 0


@pytest.mark.parametrize(
    "answers", [[PUBLIC_V4, "127.0.0.1"], ["127.0.0.1", PUBLIC_V4], [PUBLIC_V6, "fd00:ec2::254"]]
)
async def test_mixed_answers_are_refused(
    answers: list[str], make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer(dict.fromkeys(answers, upstream.port))
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": answers}), dialer=dialer)
    with pytest.raises(DestinationRefused):
        await fetch(fetcher, "https://mcp.test/")
    assert dialer.dials == []
    assert upstream.connections == 0


@pytest.mark.parametrize("answer", [PUBLIC_V4, PUBLIC_V6])
async def test_public_answer_is_dialled_as_checked(
    answer: str, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({answer: upstream.port})
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": [answer]}), dialer=dialer)
    response = await fetch(fetcher, "https://mcp.test/mcp")
    assert response.json() == {"ok": True}
    assert dialer.dials == [(answer, 443)]


async def test_rebinding_resolver_cannot_redirect_a_connection(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def respond_and_close(request: RequestHead, conn: Conn) -> bool:
        await conn.send(full_response(b"{}", extra=[("Connection", "close")]))
        return False

    upstream = await start_upstream(respond_and_close, tls_names=("mcp.test",))
    resolver = FakeResolver(script=[[PUBLIC_V4], ["127.0.0.1"]])
    dialer = RouteDialer({PUBLIC_V4: upstream.port, "127.0.0.1": upstream.port})
    fetcher = make_fetcher(resolver=resolver, dialer=dialer)
    async with fetcher.operation(pin="https://mcp.test", deadline_s=5) as op:
        first = await op.request("GET", "https://mcp.test/a")
        assert first.status_code == 200
        # The connection was closed, so the next request resolves again and gets the rebound answer.
        with pytest.raises(DestinationRefused):
            await op.request("GET", "https://mcp.test/b")
    assert resolver.calls == ["mcp.test", "mcp.test"]
    assert dialer.dials == [(PUBLIC_V4, 443)]
    assert upstream.connections == 1


async def test_one_resolution_per_connection_on_keep_alive(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    resolver = FakeResolver(script=[[PUBLIC_V4], ["127.0.0.1"]])
    dialer = RouteDialer({PUBLIC_V4: upstream.port, "127.0.0.1": upstream.port})
    fetcher = make_fetcher(resolver=resolver, dialer=dialer)
    async with fetcher.operation(pin="https://mcp.test", deadline_s=5) as op:
        for _ in range(3):
            response: EgressResponse = await op.request("GET", "https://mcp.test/")
            assert response.status_code == 200
    assert resolver.calls == ["mcp.test"]
    assert dialer.dials == [(PUBLIC_V4, 443)]
    assert upstream.connections == 1


async def test_localhost_must_answer_only_loopback(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    dialer = RouteDialer({"127.0.0.1": None, PUBLIC_V4: upstream.port})
    url = f"http://localhost:{upstream.port}/"
    mixed = make_fetcher(
        allow_loopback=True,
        resolver=FakeResolver({"localhost": ["127.0.0.1", PUBLIC_V4]}),
        dialer=dialer,
    )
    with pytest.raises(DestinationRefused):
        await fetch(mixed, url)
    assert dialer.dials == []
    clean = make_fetcher(
        allow_loopback=True, resolver=FakeResolver({"localhost": ["127.0.0.1"]}), dialer=dialer
    )
    assert (await fetch(clean, url)).status_code == 200
    assert dialer.dials == [("127.0.0.1", upstream.port)]


async def test_private_range_only_when_listed(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("internal.test",))
    dialer = RouteDialer({"10.1.2.3": upstream.port})
    resolver = FakeResolver({"internal.test": ["10.1.2.3"]})
    strict = make_fetcher(resolver=resolver, dialer=dialer)
    with pytest.raises(DestinationRefused):
        await fetch(strict, "https://internal.test/")
    assert upstream.connections == 0
    listed = make_fetcher(resolver=resolver, dialer=dialer, allow_cidrs=["10.1.0.0/16"])
    assert (await fetch(listed, "https://internal.test/")).status_code == 200
    assert dialer.dials == [("10.1.2.3", 443)]


@pytest.mark.parametrize("answers", [[], ["not-an-address"], ["93.184.216.34", "bogus"]])
async def test_empty_or_garbage_answers_fail_closed(
    answers: list[str], make_fetcher: MakeFetcher
) -> None:
    dialer = RouteDialer()
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": answers}), dialer=dialer)
    with pytest.raises(DestinationRefused):
        await fetch(fetcher, "https://mcp.test/")
    assert dialer.dials == []


async def test_unresolvable_name_is_connect_failed(make_fetcher: MakeFetcher) -> None:
    dialer = RouteDialer()
    fetcher = make_fetcher(resolver=FakeResolver({}), dialer=dialer)
    with pytest.raises(ConnectFailed) as caught:
        await fetch(fetcher, "https://nowhere.test/")
    assert caught.value.reason == "connect_failed"
    assert dialer.dials == []


async def test_refused_connection_is_connect_failed(
    make_fetcher: MakeFetcher, listener: CountingListener
) -> None:
    port = listener.port
    await listener.close()  # nothing listens on the port any more
    dialer = RouteDialer({PUBLIC_V4: port})
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}), dialer=dialer)
    with pytest.raises(ConnectFailed):
        await fetch(fetcher, "https://mcp.test/")


async def test_unix_sockets_are_refused() -> None:
    backend = PolicyBackend(DestinationPolicy(allow_loopback=True), FakeResolver(), RouteDialer())
    with pytest.raises(DestinationRefused):
        await backend.connect_unix_socket("/var/run/docker.sock")
    assert isinstance(backend, httpcore2.AsyncNetworkBackend)


async def test_refused_first_answer_falls_back_to_the_next_checked_answer(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream, listener: CountingListener
) -> None:
    closed_port = listener.port
    await listener.close()
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V6: closed_port, PUBLIC_V4: upstream.port})
    resolver = FakeResolver({"mcp.test": [PUBLIC_V6, PUBLIC_V4]})
    fetcher = make_fetcher(resolver=resolver, dialer=dialer)
    assert (await fetch(fetcher, "https://mcp.test/")).status_code == 200
    assert dialer.dials == [(PUBLIC_V6, 443), (PUBLIC_V4, 443)]
    assert resolver.calls == ["mcp.test"]
