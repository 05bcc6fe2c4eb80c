"""Operations: pinned origins, no redirects, no proxies, the bearer's one header, JSON bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from hub.egress import (
    EgressConfig,
    InvalidJson,
    InvalidSecret,
    OriginRefused,
    RedirectRefused,
    UrlRejected,
)
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    OTHER_PUBLIC_V4,
    PUBLIC_V4,
    Conn,
    CountingListener,
    FakeResolver,
    RequestHead,
    RouteDialer,
    Upstream,
    fetch,
    full_response,
    json_responder,
    response_head,
)


@pytest.fixture
async def listener() -> AsyncIterator[CountingListener]:
    started = await CountingListener().start()
    yield started
    await started.close()


async def echo(request: RequestHead, conn: Conn) -> bool:
    body = f'{{"method": "{request.method}", "length": {len(request.body)}}}'.encode()
    await conn.send(full_response(body, extra=[("Set-Cookie", "session=abc; Path=/")]))
    return True


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirect_is_refused_and_location_never_contacted(
    status: int,
    make_fetcher: MakeFetcher,
    start_upstream: StartUpstream,
    listener: CountingListener,
) -> None:
    target = f"http://127.0.0.1:{listener.port}/x"

    async def redirect(request: RequestHead, conn: Conn) -> bool:
        await conn.send(response_head(status, [("Location", target), ("Content-Length", "0")]))
        return True

    upstream = await start_upstream(redirect)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    with pytest.raises(RedirectRefused) as caught:
        await fetch(fetcher, url, pin=url)
    assert caught.value.reason == "redirect_refused"
    assert target not in str(caught.value)
    assert listener.connections == 0


async def test_redirect_on_stream_entry_is_refused(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def redirect(request: RequestHead, conn: Conn) -> bool:
        await conn.send(response_head(302, [("Location", "/elsewhere"), ("Content-Length", "0")]))
        return True

    upstream = await start_upstream(redirect)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    async with fetcher.operation(pin=url, deadline_s=5) as op:
        with pytest.raises(RedirectRefused):
            async with op.stream("POST", url, json={}):
                pytest.fail("the block must not run")
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "ALL_PROXY", "HTTP_PROXY", "https_proxy"])
async def test_environment_proxies_are_ignored(
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    make_fetcher: MakeFetcher,
    start_upstream: StartUpstream,
    listener: CountingListener,
) -> None:
    monkeypatch.setenv(variable, f"http://127.0.0.1:{listener.port}")
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V4: upstream.port})
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}), dialer=dialer)
    assert (await fetch(fetcher, "https://mcp.test/mcp")).status_code == 200
    assert listener.connections == 0
    assert dialer.dials == [(PUBLIC_V4, 443)]


@pytest.mark.parametrize(
    "url",
    [
        "https://other.test/mcp",
        "https://mcp.test:8443/mcp",
        "http://mcp.test/mcp",
        "https://sub.mcp.test/mcp",
    ],
)
async def test_off_pin_origin_is_refused_before_connecting(
    url: str, make_fetcher: MakeFetcher
) -> None:
    resolver = FakeResolver({"mcp.test": [PUBLIC_V4], "other.test": [PUBLIC_V4]})
    dialer = RouteDialer()
    fetcher = make_fetcher(resolver=resolver, dialer=dialer, allow_loopback=True)
    async with fetcher.operation(pin="https://mcp.test", deadline_s=5, bearer="s3cret-token") as op:
        with pytest.raises((OriginRefused, UrlRejected)) as caught:
            await op.request("GET", url)
    assert caught.value.reason in {"origin_refused", "invalid_url"}
    assert resolver.calls == []
    assert dialer.dials == []


async def test_extra_origin_is_allowed_and_gets_the_bearer(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    main = await start_upstream(json_responder(), tls_names=("mcp.test",))
    extra = await start_upstream(json_responder(), tls_names=("auth.test",))
    resolver = FakeResolver({"mcp.test": [PUBLIC_V4], "auth.test": [OTHER_PUBLIC_V4]})
    dialer = RouteDialer({PUBLIC_V4: main.port, OTHER_PUBLIC_V4: extra.port})
    fetcher = make_fetcher(
        resolver=resolver, dialer=dialer, extra_origins={"https://mcp.test": ["https://auth.test"]}
    )
    async with fetcher.operation(pin="https://mcp.test/mcp", deadline_s=5, bearer="tok-123") as op:
        assert (await op.request("GET", "https://auth.test/token")).status_code == 200
        assert (await op.request("GET", "https://mcp.test/mcp")).status_code == 200
        with pytest.raises(OriginRefused):
            await op.request("GET", "https://else.test/")
    assert extra.requests[0].headers["authorization"] == "Bearer tok-123"
    assert main.requests[0].headers["authorization"] == "Bearer tok-123"


@pytest.mark.parametrize(
    "bearer", ["abc\r\nX-Injected: 1", "abc\n", "", " padded", "tab\tbed", "naïve"]
)
async def test_invalid_bearer_is_refused_before_any_io(
    bearer: str, make_fetcher: MakeFetcher
) -> None:
    resolver = FakeResolver({"mcp.test": [PUBLIC_V4]})
    dialer = RouteDialer()
    fetcher = make_fetcher(resolver=resolver, dialer=dialer)
    with pytest.raises(InvalidSecret) as caught:
        async with fetcher.operation(pin="https://mcp.test", deadline_s=5, bearer=bearer) as op:
            await op.request("GET", "https://mcp.test/")
    assert caught.value.reason == "invalid_secret"
    assert resolver.calls == []
    assert dialer.dials == []


@pytest.mark.parametrize("name", ["Authorization", "host", "Accept-Encoding", "Cookie"])
async def test_caller_cannot_set_reserved_headers(
    name: str, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/"
    async with fetcher.operation(pin=url, deadline_s=5) as op:
        with pytest.raises(ValueError, match="set by the fetcher"):
            await op.request("GET", url, headers={name: "x"})
    assert upstream.connections == 0


async def test_json_request_and_response_without_cookie_persistence(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(echo)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    async with fetcher.operation(pin=url, deadline_s=5, bearer="tok-xyz") as op:
        first = await op.request(
            "POST", url, json={"jsonrpc": "2.0", "id": 1}, headers={"X-Trace": "1"}
        )
        second = await op.request("POST", url, content=b"raw")
    assert first.json() == {"method": "POST", "length": len(upstream.requests[0].body)}
    assert second.json() == {"method": "POST", "length": 3}
    assert first.content_type == "application/json"
    assert first.headers["CONTENT-TYPE"] == "application/json"
    assert json.loads(upstream.requests[0].body) == {"jsonrpc": "2.0", "id": 1}
    heads = [request.headers for request in upstream.requests]
    assert heads[0]["content-type"] == "application/json"
    assert heads[0]["x-trace"] == "1"
    assert heads[0]["accept-encoding"] == "identity"
    assert all(head["user-agent"] == "mcp-hub" for head in heads)  # the client's defaults
    assert all(head["authorization"] == "Bearer tok-xyz" for head in heads)
    assert all("cookie" not in head for head in heads)


async def test_a_closed_fetcher_sends_nothing(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(echo)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    await fetch(fetcher, url, pin=url)
    await fetcher.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await fetch(fetcher, url, pin=url)
    assert upstream.connections == 1


async def test_no_authorization_header_without_a_bearer(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    await fetch(fetcher, f"http://127.0.0.1:{upstream.port}/")
    assert "authorization" not in upstream.requests[0].headers


async def test_invalid_json_is_a_value_error_quoting_nothing(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(b"<html>UPSTREAM-TEXT</html>"))
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    response = await fetch(fetcher, f"http://127.0.0.1:{upstream.port}/")
    with pytest.raises(ValueError, match="not valid JSON") as caught:
        response.json()
    assert isinstance(caught.value, InvalidJson)
    assert "UPSTREAM-TEXT" not in str(caught.value)
    assert caught.value.__context__ is None
    assert caught.value.__cause__ is None


async def test_deeply_nested_json_is_invalid_json(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(b"[" * 200_000 + b"]" * 200_000))
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    response = await fetch(fetcher, f"http://127.0.0.1:{upstream.port}/")
    with pytest.raises(InvalidJson):
        response.json()


async def test_operation_cannot_be_used_outside_its_block(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream: Upstream = await start_upstream(json_responder())
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/"
    operation = fetcher.operation(pin=url, deadline_s=5)
    with pytest.raises(RuntimeError):
        await operation.request("GET", url)
    async with operation:
        pass
    with pytest.raises(RuntimeError):
        await operation.request("GET", url)
    assert upstream.connections == 0


async def test_invalid_pin_is_url_rejected(make_fetcher: MakeFetcher) -> None:
    fetcher = make_fetcher()
    with pytest.raises(UrlRejected):
        fetcher.operation(pin="ftp://mcp.test", deadline_s=5)


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\x00b"])
async def test_header_value_injection_is_refused(
    value: str, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/"
    async with fetcher.operation(pin=url, deadline_s=5) as op:
        with pytest.raises(ValueError, match="not valid"):
            await op.request("GET", url, headers={"Mcp-Session-Id": value})
    assert upstream.connections == 0


def test_invalid_extra_origin_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="HUB_EXTRA_ORIGINS"):
        EgressConfig(extra_origins={"https://mcp.test": ["not a url"]})
