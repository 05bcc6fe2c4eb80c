"""A read may wait as long as the operation's deadline leaves (stop 53).

The per-read timeout (``read_timeout_s``, 30 s in production) once cut every request whose server
stayed silent longer, whatever the operation's deadline: a tool call allowed 60 or 120 s failed
``timeout`` after 30 s of its server's silence. Small values stand in for the real ones here: a
read timeout of 1 s under a deadline of 3 s. Timing bounds are one-sided.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from hub.egress import EgressTimeout, Fetcher
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    Conn,
    RequestHead,
    Respond,
    RouteDialer,
    full_response,
    response_head,
)

READ_TIMEOUT_S = 1.0
DEADLINE_S = 3.0
BODY = b'{"ok": true}'


def silent_for(seconds: float) -> Respond:
    """Reads the request, says nothing for ``seconds``, then answers."""

    async def respond(request: RequestHead, conn: Conn) -> bool:
        await asyncio.sleep(seconds)
        await conn.send(full_response(BODY))
        return True

    return respond


def silent_mid_body_for(seconds: float) -> Respond:
    """Sends the head and half the body, says nothing for ``seconds``, then the rest."""

    async def respond(request: RequestHead, conn: Conn) -> bool:
        head = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
        await conn.send(response_head(200, head) + BODY[:5])
        await asyncio.sleep(seconds)
        await conn.send(BODY[5:])
        return True

    return respond


async def _fetcher(make_fetcher: MakeFetcher) -> Fetcher:
    return make_fetcher(
        allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}), read_timeout_s=READ_TIMEOUT_S
    )


@pytest.mark.parametrize("respond", [silent_for(2.0), silent_mid_body_for(2.0)])
async def test_silence_longer_than_the_read_timeout_within_the_deadline_succeeds(
    respond: Respond, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(respond)
    fetcher = await _fetcher(make_fetcher)
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    async with fetcher.operation(pin=url, deadline_s=DEADLINE_S) as op:
        response = await op.request("POST", url, json={})
    assert response.status_code == 200
    assert response.content == BODY


@pytest.mark.parametrize("respond", [silent_for(5.0), silent_mid_body_for(5.0)])
async def test_silence_past_the_deadline_is_cut_by_the_deadline(
    respond: Respond, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(respond)
    fetcher = await _fetcher(make_fetcher)
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        async with fetcher.operation(pin=url, deadline_s=DEADLINE_S) as op:
            await op.request("POST", url, json={})
    assert time.monotonic() - started < DEADLINE_S + 1.5
