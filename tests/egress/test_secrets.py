"""A canary bearer never leaks: not in exception text, reprs, chains, tracebacks or DEBUG logs.

The upstream echoes the Authorization header back (in bodies, in a header, in a redirect target);
every failure path is driven with httpx2/httpcore2 loggers at DEBUG.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import pytest

from hub.egress import EgressError, Fetcher, InvalidJson
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    PUBLIC_V4,
    Conn,
    CountingListener,
    FakeResolver,
    RequestHead,
    RouteDialer,
    full_response,
    response_head,
)
from tests.support.leaks import chain, exposed_text

BLOCKED_V4 = "169.254.169.254"


def echo_status(
    status: int, content_type: str = "text/plain"
) -> Callable[[RequestHead, Conn], Awaitable[bool]]:
    async def respond(request: RequestHead, conn: Conn) -> bool:
        echoed = request.headers.get("authorization", "")
        body = f"you sent {echoed}".encode()
        await conn.send(
            full_response(
                body, status=status, content_type=content_type, extra=[("X-Echo", echoed)]
            )
        )
        return True

    return respond


async def echo_redirect(request: RequestHead, conn: Conn) -> bool:
    echoed = request.headers.get("authorization", "").replace(" ", "%20")
    await conn.send(
        response_head(
            302, [("Location", f"https://evil.test/?t={echoed}"), ("Content-Length", "0")]
        )
    )
    return True


async def echo_oversize(request: RequestHead, conn: Conn) -> bool:
    echoed = request.headers.get("authorization", "").encode()
    await conn.send(response_head(200, [("Connection", "close"), ("X-Echo", echoed.decode())]))
    await conn.send((echoed + b" ") * 200_000)
    return False


async def echo_then_hang(request: RequestHead, conn: Conn) -> bool:
    echoed = request.headers.get("authorization", "")
    await conn.send(
        response_head(200, [("Content-Length", "100"), ("X-Echo", echoed)]) + echoed.encode()
    )
    await conn.wait_closed_by_peer()
    return False


async def echo_event(request: RequestHead, conn: Conn) -> bool:
    echoed = request.headers.get("authorization", "").encode()
    head = response_head(200, [("Content-Type", "text/event-stream"), ("Connection", "close")])
    await conn.send(head + b"data: " + echoed * 100_000 + b"\n\n")
    return False


async def test_canary_never_leaks(
    caplog: pytest.LogCaptureFixture, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    canary = f"CANARY-{uuid.uuid4()}"
    caplog.set_level(logging.DEBUG)
    for name in ("httpx2", "httpcore2", "hub"):
        caplog.set_level(logging.DEBUG, logger=name)

    hosts: dict[str, list[str]] = {}
    routes: dict[str, int | None] = {}
    for index, respond in enumerate(
        [
            echo_status(401),
            echo_status(500, "application/json"),
            echo_redirect,
            echo_oversize,
            echo_then_hang,
            echo_event,
        ]
    ):
        upstream = await start_upstream(respond, tls_names=(f"h{index}.test",))
        address = f"93.184.216.{100 + index}"
        hosts[f"h{index}.test"] = [address]
        routes[address] = upstream.port
    wrong_name = await start_upstream(echo_status(200), tls_names=("someone-else.test",))
    hosts["tls.test"] = [PUBLIC_V4]
    routes[PUBLIC_V4] = wrong_name.port
    refused = await CountingListener().start()
    hosts["refused.test"] = ["93.184.216.200"]
    routes["93.184.216.200"] = refused.port
    await refused.close()
    hosts["blocked.test"] = [BLOCKED_V4]
    fetcher = make_fetcher(resolver=FakeResolver(hosts), dialer=RouteDialer(routes))

    failures: list[BaseException] = []
    texts: list[str] = []

    async def drive(host: str, *, events: bool = False, parse: bool = False) -> None:
        url = f"https://{host}/mcp"
        try:
            async with fetcher.operation(pin=url, deadline_s=1.0, bearer=canary) as op:
                texts.append(repr(op))
                if events:
                    async with op.stream("POST", url, json={}) as streamed:
                        texts.append(repr(streamed))
                        async for _ in streamed.events():
                            pass
                    return
                response = await op.request("POST", url, json={"jsonrpc": "2.0"})
                texts.append(repr(response))
                assert canary in response.content.decode()  # the echo itself is upstream content
                if parse:
                    response.json()
        except (EgressError, InvalidJson) as exc:
            failures.append(exc)

    await drive("h0.test", parse=True)  # 401 echoing the header: bad JSON
    await drive("h1.test", parse=True)  # 500 echoing the header: bad JSON
    await drive("h2.test")  # 302 with the secret in Location
    await drive("h3.test")  # oversize body made of the secret
    await drive("h4.test")  # hang after echoing: timeout
    await drive("h5.test", events=True)  # oversize event made of the secret
    await drive("tls.test")  # certificate for another name
    await drive("refused.test")  # nothing listening
    await drive("blocked.test")  # metadata address
    await drive("unknown.test")  # does not resolve

    reasons = sorted(getattr(exc, "reason", "invalid_json") for exc in failures)
    assert reasons == sorted(
        [
            "invalid_json",
            "invalid_json",
            "redirect_refused",
            "response_too_large",
            "timeout",
            "response_too_large",
            "tls_failed",
            "connect_failed",
            "destination_refused",
            "connect_failed",
        ]
    )
    for exc in failures:
        assert canary not in exposed_text(exc), type(exc).__name__
        assert not any(
            type(link).__module__.startswith(("httpx2", "httpcore2")) for link in chain(exc)
        )
    assert all(canary not in text for text in texts)
    assert canary not in repr(fetcher)
    assert caplog.records, "DEBUG logging was not captured"
    for record in caplog.records:
        assert canary not in record.getMessage()
    assert canary not in caplog.text


async def test_secret_is_redacted_in_logs_only_while_the_operation_runs(
    caplog: pytest.LogCaptureFixture, make_fetcher: MakeFetcher
) -> None:
    canary = f"CANARY-{uuid.uuid4()}"
    caplog.set_level(logging.DEBUG)
    fetcher: Fetcher = make_fetcher(resolver=FakeResolver({}), dialer=RouteDialer())
    async with fetcher.operation(pin="https://mcp.test", deadline_s=1, bearer=canary):
        logging.getLogger("httpcore2.test").debug("header %s", canary)
    assert canary not in caplog.text
    assert "[redacted]" in caplog.text
