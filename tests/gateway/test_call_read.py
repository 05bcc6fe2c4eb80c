"""A tool call's key and deployment read together (hub.gateway.adapters.read, migration 0902).

On PostgreSQL ``hub_gateway_read`` returns the key's row and, only for the hash computed from
the presented key, the deployment's rows of the key's own tenant: another tenant's deployment,
or a key with the wrong secret, sees none. Through the endpoint (both backends): another tenant's
deployment id is 404 to an agent, a key revoked between two calls is 401 on the second, and the
agent of each tenant keeps calling its own deployment.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest

from hub.auth.key_format import hash_key, parse_key
from hub.core import rls
from hub.core.db import Database
from hub.gateway.adapters.read import CallRead, read_call
from tests.conftest import TEST_PEPPER
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


async def _call(client: httpx2.AsyncClient, deployed: Deployed, **path: str) -> httpx2.Response:
    url = deployed.url
    if "deployment_id" in path:
        url = url.replace(deployed.deployment_id, path["deployment_id"])
    return await client.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "up__echo", "arguments": {"text": "hi"}},
        },
        headers={**deployed.headers, "accept": "application/json, text/event-stream"},
    )


def _key(deployed: Deployed) -> Any:
    key = parse_key(deployed.headers["authorization"].removeprefix("Bearer "))
    assert key is not None
    return key


async def _read(db: Database, key_id: str, key_hash: str, deployment: uuid.UUID) -> CallRead:
    async with db.reads() as session:
        return await read_call(session, key_id, key_hash, deployment)


async def test_another_tenants_deployment_and_a_revoked_key(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    ours = await deploy(client, database, [Upstream("up", peer.url)])
    theirs = await deploy(client, database, [Upstream("up", peer.url)])

    assert "result" in (await _call(client, ours)).json()
    assert "result" in (await _call(client, theirs)).json()
    crossed = await _call(client, ours, deployment_id=theirs.deployment_id)
    assert crossed.status_code == 404, crossed.text
    assert crossed.json()["error"]["code"] == 40400

    keys = await client.get(
        ours.setup.url("principals", str(ours.agent.principal_id), "keys"),
        headers=ours.setup.admin.headers,
    )
    assert keys.status_code == 200, keys.text
    for row in keys.json()["data"]:
        revoked = await client.delete(
            ours.setup.url("principals", str(ours.agent.principal_id), "keys", row["id"]),
            headers=ours.setup.admin.headers,
        )
        assert revoked.status_code in (200, 204), revoked.text
    refused = await _call(client, ours)
    assert refused.status_code == 401, refused.text
    assert "result" in (await _call(client, theirs)).json()  # the other tenant is untouched


async def test_the_definer_returns_rows_only_for_the_keys_own_hash_and_tenant(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    if database.is_sqlite:
        pytest.skip("the definer function is PostgreSQL's")
    peer = await handmade_peer(era="modern", tools=[ECHO])
    ours = await deploy(client, database, [Upstream("up", peer.url)])
    theirs = await deploy(client, database, [Upstream("up", peer.url)])
    key = _key(ours)
    right = hash_key(TEST_PEPPER.encode(), key.full)
    deployment = uuid.UUID(ours.deployment_id)

    read = await _read(database, key.key_id, right, deployment)
    assert rls.current() == str(ours.setup.tenant_id)  # the scope it set: the key's tenant
    assert read.values[5] == ours.agent.principal_id  # the key's principal
    assert [row.handle for row in read.rows] == ["up"]
    assert read.rows[0].agent_id == ours.agent.principal_id

    wrong = await _read(database, key.key_id, "0" * 64, deployment)
    assert wrong.values[5] == ours.agent.principal_id  # the row still comes, for the compare
    assert wrong.rows == []

    other = await _read(database, key.key_id, right, uuid.UUID(theirs.deployment_id))
    assert other.rows == []

    unknown = await _read(database, "x" * 12, right, deployment)
    assert unknown.values[0] is None
    assert unknown.rows == []
