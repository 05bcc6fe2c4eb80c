"""A connection that breaks once it carried the request is ``connection_lost`` (stop 53).

The upstream may have received the request and acted on it, so the outcome is unknown; the hub
no longer says it "could not connect" (``connect_failed`` stays for a connection never made:
``test_destinations.py``).
"""

from __future__ import annotations

import pytest

from hub.egress import ConnectionLost
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    Conn,
    RequestHead,
    Respond,
    RouteDialer,
    fetch,
    response_head,
)


async def close_after_reading(request: RequestHead, conn: Conn) -> bool:
    """Reads the whole request, then closes the connection without a byte of answer."""
    return False


async def close_mid_body(request: RequestHead, conn: Conn) -> bool:
    """Promises ten bytes of body, sends two, then closes the connection."""
    head = [("Content-Type", "application/json"), ("Content-Length", "10")]
    await conn.send(response_head(200, head) + b'{"')
    return False


async def close_mid_event_stream(request: RequestHead, conn: Conn) -> bool:
    """Starts an event stream (chunked), sends one event's worth, then closes the connection."""
    head = [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]
    event = b"data: {}\n\n"
    await conn.send(response_head(200, head) + b"%x\r\n%s\r\n" % (len(event), event))
    return False


@pytest.mark.parametrize("respond", [close_after_reading, close_mid_body])
async def test_upstream_closing_after_it_read_the_request_is_connection_lost(
    respond: Respond, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(respond)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    with pytest.raises(ConnectionLost) as caught:
        await fetch(fetcher, url, method="POST")
    assert caught.value.reason == "connection_lost"
    assert [r.method for r in upstream.requests] == ["POST"]  # the request did arrive


async def test_event_stream_broken_midway_is_connection_lost(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(close_mid_event_stream)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"

    async def read_every_event() -> None:
        async with fetcher.operation(pin=url, deadline_s=5) as op, op.stream("POST", url) as s:
            async for _ in s.events():
                pass

    with pytest.raises(ConnectionLost):
        await read_every_event()
