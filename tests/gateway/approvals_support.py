"""What the approvals tests share: a deployment of ``echo`` and ``drop`` behind ``ask``, a call,
and a decision."""

from __future__ import annotations

from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer

__all__ = ["DROP", "ECHO", "SECRET", "call", "decide", "deployed_with", "pending_id"]

SECRET = "approval-test-secret-0123456789"
ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
DROP = {
    "name": "drop",
    "inputSchema": {"type": "object", "properties": {"table": {"type": "string"}}},
    "annotations": {"destructiveHint": True},
}


async def deployed_with(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    *,
    allow_without_ask: list[str] | None = None,
    effect: str = "allow",
) -> tuple[Deployed, HandmadePeer]:
    peer = await handmade_peer(era="modern", tools=[ECHO, DROP])
    upstream = Upstream(
        "up", peer.url, secret=SECRET, effect=effect, allow_without_ask=allow_without_ask or []
    )
    return await deploy(client, database, [upstream]), peer


async def call(
    client: httpx2.AsyncClient, deployed: Deployed, tool: str, text: str
) -> dict[str, Any]:
    response = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": f"up__{tool}", "arguments": {"text": text} if tool == "echo" else {"table": text}},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def pending_id(body: dict[str, Any]) -> str:
    result = body["result"]
    assert result["isError"] is True
    assert result["_meta"]["io.mcphub/error"]["class"] == "approval_pending"
    approval = result["_meta"]["io.mcphub/approval"]
    assert approval["status"] == "pending"
    assert approval["id"] in result["content"][0]["text"]
    return str(approval["id"])


async def decide(
    client: httpx2.AsyncClient,
    deployed: Deployed,
    approval: str,
    decision: str,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    return await client.post(
        deployed.setup.url("approvals", approval, "decision"),
        json={"decision": decision, "note": "checked"},
        headers=headers or deployed.setup.admin.headers,
    )
