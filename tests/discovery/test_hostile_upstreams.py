"""Upstreams built to break discovery get a specific 422 and nothing is stored (hardening).

Found by a hostile review, each once a 500: a non-ASCII ``Mcp-Session-Id`` copied into a later
request header (``UnicodeEncodeError``); a tool schema nested ≥ 252 levels (pydantic's
serialisation depth); ``NaN``/``Infinity`` literals (``json.loads`` takes them; PostgreSQL's JSONB
does not, SQLite stored ``null`` under a hash computed over ``NaN``), and numbers past a double's
range (``1e400`` read as ``inf``, written back as ``Infinity``); U+0000 in a tool or the server's
facts (PostgreSQL stores it neither in ``text`` nor in ``jsonb``). The limits are documented in
``docs/decisions.md``: 128 levels for any upstream JSON document, and per tool schema 64 levels,
1,000 objects and 64 KiB (``schema_too_complex``, DESIGN §10.2).
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import httpx2
import pytest
from sqlalchemy import func, select

from hub.core.db import Database
from hub.egress.responses import MAX_JSON_DEPTH
from hub.mcp.client.tools import MAX_SCHEMA_DEPTH, MAX_SUBSCHEMAS
from hub.models import Catalog, McpOriginEra
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import (
    RecordedRequest,
    Reply,
    message_event,
    rpc_result,
    server_request,
)
from tests.support.databases import owner_session
from tests.support.stories import TenantAdmin, make_tenant_admin

ERAS = ["modern", "legacy"]


def _deep_schema(depth: int) -> dict[str, Any]:
    """A schema nesting objects about ``2 * depth`` levels (object → properties → n)."""
    inner: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        inner = {"type": "object", "properties": {"n": inner}}
    return {"type": "object", "properties": {"n": inner}}


def _wide_schema(objects: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(objects)}}


async def _stored(database: Database) -> tuple[int, int]:
    async with owner_session(database, write=False) as session:
        catalogs = (await session.execute(select(func.count()).select_from(Catalog))).scalar_one()
        eras = (await session.execute(select(func.count()).select_from(McpOriginEra))).scalar_one()
    return int(catalogs), int(eras)


async def _discover_and_snapshot(
    client: httpx2.AsyncClient, setup: TenantAdmin, peer: HandmadePeer
) -> tuple[httpx2.Response, httpx2.Response]:
    discovered = await client.post(
        setup.url("mcp", "discover"), json={"url": peer.url}, headers=setup.admin.headers
    )
    handle = f"h{uuid.uuid4().hex[:8]}"
    created = await client.post(
        setup.url("servers"), json={"handle": handle, "url": peer.url}, headers=setup.admin.headers
    )
    assert created.status_code == 201, created.text
    snapshot = await client.post(
        setup.url("servers", handle, "catalogs"), headers=setup.admin.headers
    )
    return discovered, snapshot


async def _only_fine_kept(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    era: str,
    tools: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Discover and snapshot a peer serving ``tools``: only ``fine`` is kept, by both; what
    discovery reports dropped."""
    peer = await handmade_peer(era=era, tools=tools)
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    assert discovered.status_code == 200, discovered.text
    data = discovered.json()["data"]
    assert [t["name"] for t in data["tools"]] == ["fine"]
    assert snapshot.status_code == 201, snapshot.text
    assert [t["name"] for t in snapshot.json()["data"]["tools"]] == ["fine"]
    dropped: list[dict[str, Any]] = data["dropped_tools"]
    return dropped


def _failed(response: httpx2.Response, reason: str) -> None:
    assert response.status_code == 422, response.text
    assert response.json()["error"]["reason"] == reason


async def test_non_ascii_session_id_is_a_protocol_error(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """The session id arrives on an SSE ``initialize`` answer that first carries a server→client
    request: answering it must never copy the id into a header."""

    def initialize(req: RecordedRequest) -> Reply:
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
        body = server_request().encode() + message_event(rpc_result(req.rpc_id, result)).encode()
        return Reply(
            body=body,
            headers={"content-type": "text/event-stream", "mcp-session-id": "s\u00e9ssion-\u00ff"},
        )

    peer = await handmade_peer(era="legacy", response_style="sse")
    peer.override("initialize", initialize)
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    _failed(discovered, "protocol_error")
    _failed(snapshot, "protocol_error")
    for request in peer.requests:
        assert all(ord(ch) < 128 for ch in request.headers.get("mcp-session-id", ""))
    assert await _stored(database) == (0, 0)


@pytest.mark.parametrize("era", ERAS)
async def test_document_nested_past_the_limit_is_a_protocol_error(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    tool = {"name": "deep", "inputSchema": _deep_schema(260)}
    peer = await handmade_peer(era=era, tools=[tool])
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    _failed(discovered, "protocol_error")
    _failed(snapshot, "protocol_error")
    assert await _stored(database) == (0, 0)
    assert MAX_JSON_DEPTH < 260


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "schema",
    [
        _deep_schema(MAX_SCHEMA_DEPTH // 2 + 1),
        _wide_schema(MAX_SUBSCHEMAS + 1),
        {"type": "object", "description": "x" * 70_000},
    ],
    ids=["deep", "many-objects", "large"],
)
async def test_tool_whose_schema_is_too_complex_is_dropped(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    era: str,
    schema: dict[str, Any],
) -> None:
    tools = [
        {"name": "fine", "inputSchema": {"type": "object"}},
        {"name": "heavy", "inputSchema": schema},
    ]
    dropped = await _only_fine_kept(client, database, handmade_peer, era, tools)
    assert dropped == [{"name": "heavy", "reason": "schema_too_complex"}]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"])
async def test_non_json_number_constants_are_a_protocol_error(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    era: str,
    literal: str,
) -> None:
    def tools_list(req: RecordedRequest) -> Reply:
        tool = {"name": "t", "inputSchema": {"type": "object", "maximum": "PLACEHOLDER"}}
        result: dict[str, Any] = {"tools": [tool]}
        if era == "modern":
            result |= {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
        text = json.dumps(rpc_result(req.rpc_id, result)).replace('"PLACEHOLDER"', literal)
        return Reply(body=text.encode(), headers={"content-type": "application/json"})

    peer = await handmade_peer(era=era)
    peer.override("tools/list", tools_list)
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    _failed(discovered, "protocol_error")
    _failed(snapshot, "protocol_error")
    assert await _stored(database) == (0, 0)


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_holding_nul_is_dropped_and_the_rest_is_stored(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    """U+0000 anywhere in a tool (a value or a key) drops that tool on both backends alike: the
    catalog must read the same everywhere, and PostgreSQL cannot store the character."""
    tools = [
        {"name": "fine", "inputSchema": {"type": "object"}},
        {"name": "in_value", "description": "a\x00b", "inputSchema": {"type": "object"}},
        {
            "name": "in_key",
            "inputSchema": {"type": "object", "properties": {"p\x00": {"type": "string"}}},
        },
        {"name": "in\x00name", "inputSchema": {"type": "object"}},
    ]
    dropped = await _only_fine_kept(client, database, handmade_peer, era, tools)
    assert dropped == [
        {"name": "in_value", "reason": "nul_character"},
        {"name": "in_key", "reason": "nul_character"},
        {"name": None, "reason": "nul_character"},
    ]
    assert await _stored(database) == (1, 1)


@pytest.mark.parametrize("era", ERAS)
async def test_nul_in_the_servers_facts_is_stored_as_a_replacement_character(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    peer = await handmade_peer(
        era=era,
        tools=[{"name": "fine", "inputSchema": {"type": "object"}}],
        instructions="use\x00me",
    )
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    assert discovered.status_code == 200, discovered.text
    assert discovered.json()["data"]["instructions"] == "use\ufffdme"
    assert snapshot.status_code == 201, snapshot.text
    assert snapshot.json()["data"]["instructions"] == "use\ufffdme"


@pytest.mark.parametrize("era", ERAS)
async def test_a_lone_surrogate_escape_is_read_as_a_replacement_character(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    """A JavaScript server that cuts a string between the halves of a pair sends ``\\ud83d``
    alone; as it came, the catalog could be written neither to either database nor as UTF-8."""
    tools = [
        {"name": "cut", "description": "smile \ud83d", "inputSchema": {"type": "object"}},
        {"name": "whole", "description": "smile \U0001f600", "inputSchema": {"type": "object"}},
    ]
    peer = await handmade_peer(era=era, tools=tools)
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    assert discovered.status_code == 200, discovered.text
    assert snapshot.status_code == 201, snapshot.text
    described = {t["name"]: t["description"] for t in snapshot.json()["data"]["tools"]}
    assert described == {"cut": "smile \ufffd", "whole": "smile \U0001f600"}


@pytest.mark.parametrize("era", ERAS)
async def test_many_dropped_entries_are_counted_not_each_listed_and_logged(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    caplog: pytest.LogCaptureFixture,
    era: str,
) -> None:
    """Each dropped entry was listed in the answer and logged: a 4 MiB page of ``1,`` (two
    million entries) made as many log lines and an 84 MB answer. The first 100 are listed, all
    are counted, and one warning gives the count by reason."""
    tools: list[Any] = [{"name": "fine", "inputSchema": {"type": "object"}}]
    tools += [1] * 3_000 + [{"name": n, "inputSchema": {"type": "string"}} for n in ("b1", "b2")]
    caplog.set_level(logging.WARNING, logger="hub.mcp.client.tools")
    peer = await handmade_peer(era=era, tools=tools)
    setup = await make_tenant_admin(database)
    discovered, snapshot = await _discover_and_snapshot(client, setup, peer)
    assert discovered.status_code == 200, discovered.text
    assert snapshot.status_code == 201, snapshot.text
    data = discovered.json()["data"]
    assert [t["name"] for t in data["tools"]] == ["fine"]
    assert data["dropped_tools"] == [{"name": None, "reason": "invalid_tool"}] * 100
    assert data["dropped_tools_total"] == 3_002
    warnings = [r for r in caplog.records if r.name == "hub.mcp.client.tools"]
    assert len(warnings) == 2  # one listing by discovery, one by the snapshot
    assert {(r.__dict__["dropped"], str(r.__dict__["reasons"])) for r in warnings} == {
        (3_002, str({"invalid_tool": 3_000, "invalid_input_schema": 2}))
    }
