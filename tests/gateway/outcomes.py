"""What the tests of one ``tools/call``'s outcomes share (DESIGN §10.2): a deployment of one
scriptable upstream peer ``up`` holding the canary secret, its tools, and readers of the answer."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest

__all__ = [
    "CANARY",
    "DEADLINE_S",
    "ECHO",
    "ERAS",
    "FREE",
    "answer_error",
    "answer_result",
    "call_tool",
    "error_class",
    "setup_upstream",
    "upstream_calls",
]

CANARY = f"CANARY-{uuid.uuid4()}"
DEADLINE_S = 3.0  # HUB_TOOL_CALL_TIMEOUT_S in tests/gateway/conftest.py
ECHO = {
    "name": "echo",
    "description": "Echoes its text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["text"],
    },
}
FREE = {"name": "free", "inputSchema": {"type": "object"}}  # declares no properties: anything goes
ERAS = ["modern", "2025-11-25", "2025-03-26"]


def _member(response: httpx2.Response, key: str) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert key in body, body
    member: dict[str, Any] = body[key]
    return member


def answer_result(response: httpx2.Response) -> dict[str, Any]:
    return _member(response, "result")


def answer_error(response: httpx2.Response) -> dict[str, Any]:
    return _member(response, "error")


def error_class(result: dict[str, Any]) -> str:
    return str(result["_meta"]["io.mcphub/error"]["class"])


def upstream_calls(peer: HandmadePeer) -> list[RecordedRequest]:
    return peer.rpc_requests("tools/call")


async def setup_upstream(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    *,
    era: str = "modern",
    effect: str = "allow",
    tools: list[dict[str, Any]] | None = None,
    **upstream: Any,
) -> tuple[Deployed, HandmadePeer]:
    peer = await handmade_peer(
        era=era if era == "modern" else "legacy", tools=tools or [ECHO, FREE]
    )
    deployed = await deploy(
        client, database, [Upstream("up", peer.url, secret=CANARY, effect=effect, **upstream)]
    )
    return deployed, peer


async def call_tool(
    client: httpx2.AsyncClient, deployed: Deployed, name: str, arguments: Any, era: str = "modern"
) -> httpx2.Response:
    tool = next((t for t in deployed.catalogs["up"]["tools"] if f"up__{t['name']}" == name), None)
    return await rpc(
        client, deployed, "tools/call", {"name": name, "arguments": arguments}, era=era, tool=tool
    )
