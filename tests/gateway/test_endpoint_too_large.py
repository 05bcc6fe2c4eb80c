"""A request over ``HUB_MAX_REQUEST_BYTES`` on the agents' endpoint is a JSON-RPC error.

It was the REST error body (``{"error": {"code": "payload_too_large"}}``), which an MCP client
cannot read: the SDK client said only "Server returned an error response", and the sidecar told
its agent the hub was unreachable. Both ways a body can be too large are checked: a declared
``Content-Length`` (refused at the edge before any of it is read) and a body sent without one
(refused as it passes the bound).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
import pytest

from hub.core.db import Database
from hub.core.settings import Settings
from tests.gateway.endpoint_support import deploy_echo_and_region
from tests.gateway.support import Deployed
from tests.peers.fixtures import HandmadePeerStarter


@pytest.fixture
async def deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    return await deploy_echo_and_region(client, database, handmade_peer)


def _call_of(size: int) -> bytes:
    text = "x" * size
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "up__echo", "arguments": {"text": text}},
    }
    return json.dumps(message).encode()


def _check(answer: httpx2.Response, limit: int) -> None:
    assert answer.status_code == 413
    body = answer.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["code"] == -32600
    assert (
        body["error"]["message"] == f"the request is larger than this hub accepts ({limit} bytes)"
    )
    assert body["error"]["data"] == {"max_bytes": limit}


async def test_a_declared_body_over_the_bound_is_a_json_rpc_413(
    client: httpx2.AsyncClient, deployed: Deployed, settings: Settings
) -> None:
    limit = settings.max_request_bytes
    headers = {
        **deployed.headers,
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    _check(await client.post(deployed.url, content=_call_of(limit + 1), headers=headers), limit)


async def test_a_body_without_a_length_over_the_bound_is_a_json_rpc_413(
    client: httpx2.AsyncClient, deployed: Deployed, settings: Settings
) -> None:
    limit = settings.max_request_bytes
    body = _call_of(limit + 1)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    headers = {
        **deployed.headers,
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    _check(await client.post(deployed.url, content=chunks(), headers=headers), limit)
    # the REST routes keep the hub's own error body
    rest = await client.post(
        deployed.setup.url("grants"), content=chunks(), headers=deployed.setup.admin.headers
    )
    assert rest.status_code == 413
    assert rest.json()["error"]["code"] == "payload_too_large"
