"""A tool call's upstream leg: bounded by its deadline alone, and honest about a lost connection.

Stop 53 found both, through the whole hub:

- a tool whose server said nothing for 30 s failed ``timeout`` whatever
  ``HUB_TOOL_CALL_TIMEOUT_S`` allowed (the fetcher's fixed per-read timeout). Small values stand
  in for the real ones: the hub's fetcher here has a 1 s read timeout under the tests' 3 s call
  deadline; a server silent 2 s must answer, one silent 5 s fails at the deadline;
- a server that died after it received the call was reported as one the hub "could not
  connect to", though the call was delivered and may have run: it is ``connection_lost`` now,
  whose text says the outcome is unknown.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import httpx2
import pytest
from fastapi import FastAPI

from hub.app import create_app
from hub.core.db import Database
from hub.core.settings import Settings
from hub.egress import EgressConfig, Fetcher
from tests.gateway.outcomes import (
    DEADLINE_S,
    ECHO,
    answer_result,
    call_tool,
    setup_upstream,
    upstream_calls,
)
from tests.gateway.support import Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest
from tests.support.stories import audit_events_written
from tests.upstream.cutting import StartRelay, cutting_relay

__all__ = ["cutting_relay"]

READ_TIMEOUT_S = 1.0  # stands in for the production 30 s, under DEADLINE_S (3 s)
ERAS = ["modern", "2025-11-25"]


@pytest.fixture
async def app(settings: Settings, database: Database) -> AsyncIterator[FastAPI]:
    """The hub, its fetcher's per-read timeout shorter than the tool-call deadline."""
    config = dataclasses.replace(
        EgressConfig.from_settings(settings), read_timeout_s=READ_TIMEOUT_S
    )
    async with Fetcher(config) as fetcher:
        application = create_app(settings, database=database, fetcher=fetcher)
        async with application.router.lifespan_context(application):
            yield application


def silent_for(seconds: float) -> Callable[[RecordedRequest], Awaitable[None]]:
    """An override that says nothing for ``seconds``, then lets the peer answer as usual."""

    async def wait(request: RecordedRequest) -> None:
        await asyncio.sleep(seconds)

    return wait


@pytest.mark.parametrize("era", ERAS)
async def test_call_silent_longer_than_the_read_timeout_within_its_deadline_succeeds(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    deployed, peer = await setup_upstream(
        client, database, handmade_peer, era="modern" if era == "modern" else "legacy"
    )
    peer.override("tools/call", silent_for(2 * READ_TIMEOUT_S))
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}, era))
    assert result.get("isError") is not True, result
    assert result["structuredContent"] == {"text": "hi"}
    assert len(upstream_calls(peer)) == 1


async def test_call_silent_past_its_deadline_fails_at_the_deadline(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    peer.override("tools/call", silent_for(DEADLINE_S + 2))
    started = time.monotonic()
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    assert time.monotonic() - started < DEADLINE_S + 1.5
    assert result["_meta"]["io.mcphub/error"] == {"class": "upstream_failed", "reason": "timeout"}


@pytest.mark.parametrize("era", ERAS)
async def test_call_whose_connection_breaks_after_it_was_sent_is_connection_lost(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    cutting_relay: StartRelay,
    era: str,
) -> None:
    peer = await handmade_peer(era="modern" if era == "modern" else "legacy", tools=[ECHO])
    port = urlsplit(peer.url).port
    assert port is not None
    relay = await cutting_relay(port, {"tools/call"})  # discovery passes; the call is cut
    deployed = await deploy(client, database, [Upstream("up", relay.url())])
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}, era))
    assert relay.cut_requests == ["tools/call"]  # received whole, then the connection closed
    assert result["isError"] is True
    assert result["_meta"]["io.mcphub/error"] == {
        "class": "upstream_failed",
        "reason": "connection_lost",
    }
    assert result["content"] == [
        {
            "type": "text",
            "text": "upstream_failed (connection_lost): the connection to the tool's server "
            "broke after the call was sent: the tool may have run, so the outcome is unknown",
        }
    ]
    [row] = await audit_events_written(database, 1, action="tool.call")
    assert row.details["reason"] == "connection_lost"
