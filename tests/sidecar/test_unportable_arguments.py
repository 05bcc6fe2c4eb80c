"""Arguments the agents' endpoint refuses as ``-32700`` get the same answer from the sidecar, and
arguments it passes on pass through direct mode too.

Found by sending them (stop 42): the sidecar's server is the ``mcp`` SDK's, whose parser takes
``NaN``, ``Infinity`` and ``1e400``, so they went on (relay: to the hub, which refused them;
direct: through ``…/decisions`` to the upstream as text that is not JSON, and the answer came
back as the server's ``protocol_error``). And
direct mode's ``…/decisions`` route kept every REST body's rules for the arguments too, so
U+0000, or nesting past 32 levels, which the endpoint passes on, failed there as ``unavailable``
(``hub_unreachable``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from hub.mcp import MODERN_VERSION
from hub.mcp.server.dispatcher import MAX_ARGUMENTS_DEPTH
from tests.deploy.serving import free_port
from tests.gateway.support import META, Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.front import front_for
from tests.sidecar.support import (
    CANARY,
    INIT,
    LiveHub,
    Sidecar,
    listening_sidecar_async,
    live_hub,
    rpc_message_of,
)
from tests.support.stories import audit_events

FREE = {"name": "free", "inputSchema": {"type": "object"}}  # declares nothing: anything goes
PLACEHOLDER = '"@value@"'


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


#: (raw JSON for the argument ``v``, what the refusal says) — the endpoint's own refusals
REFUSED = [
    ("NaN", "NaN, Infinity"),
    ("-Infinity", "NaN, Infinity"),
    ("1e400", "NaN, Infinity"),
    (_nested(MAX_ARGUMENTS_DEPTH), "nested too deeply"),  # one level past the bound
]
#: what the endpoint passes on, and so must direct mode
PASSED = [
    ('"a\\u0000b"', "a\x00b"),
    (_nested(MAX_ARGUMENTS_DEPTH - 1), json.loads(_nested(MAX_ARGUMENTS_DEPTH - 1))),
]


def _body(value: str, era: str, *, request_id: int = 7) -> bytes:
    arguments = {"v": "@value@", "note": CANARY}
    params: dict[str, Any] = {"name": "docs__free", "arguments": arguments}
    if era == "modern":
        params["_meta"] = META
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message).replace(PLACEHOLDER, value).encode()


def _headers(era: str) -> dict[str, str]:
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if era == "modern":
        extra = {"mcp-method": "tools/call", "mcp-name": "docs__free"}
        return headers | extra | {"mcp-protocol-version": MODERN_VERSION}
    return headers | {"mcp-protocol-version": "2025-11-25"}


_message = rpc_message_of


# ------------------------------------------------------------------ the decisions route, in-process


@pytest.fixture
async def world(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> DirectDeployed:
    peer = await handmade_peer(era="dual", tools=[FREE])
    return await deploy_direct(
        client, database, [Upstream("docs", peer.url, secret=CANARY)], {"docs"}
    )


async def _decide(client: httpx2.AsyncClient, world: DirectDeployed, value: str) -> Any:
    url = world.setup.url("deployments", world.deployed.deployment_id, "decisions")
    body = json.dumps({"wire_name": "docs__free", "arguments": {"v": "@value@"}})
    return await client.post(
        url,
        content=body.replace(PLACEHOLDER, value).encode(),
        headers=world.deployed.agent.headers | {"content-type": "application/json"},
    )


@pytest.mark.parametrize(("value", "says"), [*REFUSED, ('"\\ud800"', "lone surrogate")])
async def test_decisions_refuse_what_the_endpoint_cannot_parse(
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    value: str,
    says: str,
) -> None:
    answer = await _decide(client, world, value)
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["decision_id"] is None
    assert data["error"]["code"] == -32700
    assert data["error"]["message"].startswith("Parse error: ")
    assert says in data["error"]["message"]
    assert await audit_events(database, action="tool.call") == []  # as the endpoint: no row


@pytest.mark.parametrize(("value", "_"), PASSED)
async def test_decisions_take_what_the_endpoint_passes_on(
    client: httpx2.AsyncClient, world: DirectDeployed, value: str, _: Any
) -> None:
    answer = await _decide(client, world, value)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["decision_id"], answer.text  # the call may run


async def test_the_rest_of_a_decision_body_keeps_the_rules(
    client: httpx2.AsyncClient, world: DirectDeployed
) -> None:
    url = world.setup.url("deployments", world.deployed.deployment_id, "decisions")
    answer = await client.post(
        url,
        json={"wire_name": "docs__free\x00", "arguments": {}},
        headers=world.deployed.agent.headers,
    )
    assert answer.status_code == 400, answer.text
    assert "NUL" in answer.text


# ------------------------------------------------------------------ the sidecar and the endpoint


async def _live_world(hub: LiveHub, peer: HandmadePeer) -> DirectDeployed:
    db = Database.from_url(hub.db_url)
    try:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            upstream = Upstream("docs", peer.url, secret=CANARY)
            return await deploy_direct(http, db, [upstream], {"docs"})
    finally:
        await db.dispose()


async def _answers(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> list[Any]:
    """Each case's answer in both eras: the JSON-RPC error (code, message) of a refusal, or the
    argument as the upstream's echo brought it back."""
    seen: list[Any] = []
    for era in ("modern", "2025-11-25"):
        for value, _ in [*REFUSED, *PASSED]:
            answer = await http.post(
                url, content=_body(value, era), headers=headers | _headers(era)
            )
            message = _message(answer)
            error = message.get("error")
            if error is not None:
                seen.append((era, error["code"], error["message"]))
            else:
                result = message["result"]
                assert not result.get("isError"), result
                seen.append((era, result["structuredContent"]["v"]))
    return seen


async def _opened(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> dict[str, str]:
    """The headers of a 2025-11-25 session with the sidecar (its server is stateful)."""
    opened = await http.post(url, json=INIT, headers=headers | _headers("2025-11-25"))
    session = {"mcp-session-id": opened.headers["mcp-session-id"]}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=done, headers=headers | session | _headers("2025-11-25"))
    return headers | session


async def test_the_sidecar_answers_as_the_endpoint_in_both_modes(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="dual", tools=[FREE])
    with live_hub(tmp_path) as hub:
        world = await _live_world(hub, peer)
        async with httpx2.AsyncClient(timeout=30) as http:
            url = f"{hub.url}{world.deployed.url}"
            before = peer.count("tools/call")
            expected = await _answers(http, url, world.deployed.headers)
            ran = peer.count("tools/call") - before
            assert ran == 2 * len(PASSED)  # the refused ones reached nobody
            for mode in ("direct", "relay"):
                workdir = tmp_path / mode
                workdir.mkdir()
                async with front_for(hub.url) as front:
                    sidecar = Sidecar(
                        hub,
                        world.deployed,
                        workdir,
                        ("--mode", mode),
                        hub_url=front.url,
                        sidecar_key=world.sidecar.key,
                    )
                    async with listening_sidecar_async(sidecar, free_port()) as running:
                        bearer = {"authorization": f"Bearer {running.token}"}
                        headers = await _opened(http, running.url, bearer)
                        before = peer.count("tools/call")
                        assert await _answers(http, running.url, headers) == expected, mode
                        assert peer.count("tools/call") - before == ran, mode
                # the sidecar refuses them itself: only the calls it passed on asked the hub
                asked = [p for p in front.paths if p.endswith(("/mcp", "/decisions"))]
                assert len(asked) == ran, (mode, front.paths)
    refusals = [case for case in expected if len(case) == 3]
    assert len(refusals) == 2 * len(REFUSED)
    assert all(code == -32700 for _, code, _ in refusals)
    passed = [case[1] for case in expected if len(case) == 2]
    assert passed == [value for _, value in PASSED] * 2
