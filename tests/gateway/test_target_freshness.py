"""The upstream target is never served stale: a change to the server or its credential applies
on the very next call.

A server with no credential resolves its target without any database read (the gateway's fast
path); one with a credential reads it on every call. So attaching a credential to a keyless
server, rotating its secret and revoking it must each show on the next call's request — a target
kept per server or per view would send the old bearer (or none) here.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


async def _call(client: httpx2.AsyncClient, deployed: Deployed) -> dict[str, Any]:
    response = await rpc(
        client, deployed, "tools/call", {"name": "up__echo", "arguments": {"text": "hi"}}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def _last_authorization(peer: HandmadePeer) -> str | None:
    return peer.rpc_requests("tools/call")[-1].headers.get("authorization")


async def test_credential_attached_rotated_and_revoked_apply_on_the_next_call(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    admin = deployed.setup.admin.headers

    first = await _call(client, deployed)
    assert first.get("isError") is not True
    assert _last_authorization(peer) is None  # keyless: no bearer

    first_secret, second_secret = f"S1-{uuid.uuid4()}", f"S2-{uuid.uuid4()}"
    made = await client.post(
        deployed.setup.url("credentials"),
        json={
            "name": "up",
            "type": "api_key",
            "secret": first_secret,
            "api_base_url": peer.url.rsplit("/", 1)[0],
        },
        headers=admin,
    )
    assert made.status_code == 201, made.text
    credential_id = made.json()["data"]["id"]
    attached = await client.patch(
        deployed.setup.url("servers", "up"), json={"credential_id": credential_id}, headers=admin
    )
    assert attached.status_code == 200, attached.text
    assert (await _call(client, deployed)).get("isError") is not True
    assert _last_authorization(peer) == f"Bearer {first_secret}"

    rotated = await client.patch(
        deployed.setup.url("credentials", credential_id),
        json={"secret": second_secret},
        headers=admin,
    )
    assert rotated.status_code == 200, rotated.text
    assert (await _call(client, deployed)).get("isError") is not True
    assert _last_authorization(peer) == f"Bearer {second_secret}"

    sent = len(peer.rpc_requests("tools/call"))
    revoked = await client.patch(
        deployed.setup.url("credentials", credential_id),
        json={"status": "revoked"},
        headers=admin,
    )
    assert revoked.status_code == 200, revoked.text
    refused = await _call(client, deployed)
    assert refused["isError"] is True
    assert refused["_meta"]["io.mcphub/error"]["class"] == "upstream_failed"
    assert len(peer.rpc_requests("tools/call")) == sent  # nothing left with the revoked secret
