"""The agents' endpoint speaks both eras statelessly, with the exact errors of DESIGN §15.

Era of a request: ``MCP-Protocol-Version`` modern → 2026-07-28 rules; a handshake version or no
header → handshake rules (no header and modern ``_meta`` → 400 ``-32020``; an unknown version →
400 ``-32022``). Authentication once per HTTP request; 401/403/404 as the table says; browser
batches only from 2025-03-26 (no header), at most 20 items. Who may call, and from which browser
Origin: ``test_endpoint_access.py``.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx2
import pytest

from hub.app import create_app
from hub.auth.key_format import generate_key
from hub.core.db import Database
from hub.mcp import MODERN_VERSION
from tests.conftest import make_settings
from tests.gateway.endpoint_support import deploy_echo_and_region, post, rpc_message
from tests.gateway.support import META, Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import Reply
from tests.support.queries import count_queries


@pytest.fixture
async def deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    return await deploy_echo_and_region(client, database, handmade_peer)


# --- who may call -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_stateless_get_and_delete_are_405(
    client: httpx2.AsyncClient, deployed: Deployed, method: str
) -> None:
    r = await client.request(method, deployed.url, headers=deployed.headers)
    assert r.status_code == 405


# --- the handshake eras -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
    ],
)
async def test_initialize_is_answered_without_a_session(
    client: httpx2.AsyncClient, deployed: Deployed, offered: str, answered: str
) -> None:
    params = {
        "protocolVersion": offered,
        "capabilities": {},
        "clientInfo": {"name": "a", "version": "1"},
    }
    r = await post(client, deployed, rpc_message("initialize", params))
    assert r.status_code == 200
    assert "mcp-session-id" not in r.headers
    result = r.json()["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "mcp-hub"


async def test_notifications_are_202_and_ping_answers(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await post(client, deployed, rpc_message("notifications/initialized", request_id=None))
    assert r.status_code == 202
    assert r.content == b""
    r = await post(client, deployed, rpc_message("ping"), **{"mcp-protocol-version": "2025-11-25"})
    assert r.json()["result"] == {}


@pytest.mark.parametrize(
    "method", ["resources/list", "prompts/list", "logging/setLevel", "completion/complete"]
)
async def test_only_tools_are_served_in_the_handshake_eras(
    client: httpx2.AsyncClient, deployed: Deployed, method: str
) -> None:
    r = await post(client, deployed, rpc_message(method), **{"mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 200
    assert r.json()["error"]["code"] == -32601


async def test_a_2025_03_26_batch_is_answered_item_by_item(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    batch = [
        rpc_message("ping", request_id=1),
        rpc_message("notifications/initialized", request_id=None),
        rpc_message("tools/list", request_id=2),
    ]
    r = await post(client, deployed, batch)
    assert r.status_code == 200
    answers = {a["id"]: a for a in r.json()}
    assert set(answers) == {1, 2}
    assert {t["name"] for t in answers[2]["result"]["tools"]} == {"up__echo", "up__region"}


def _full_batch() -> list[dict[str, Any]]:
    """``MAX_BATCH`` (20) items: a notification and nineteen requests of every kind served."""
    batch = [rpc_message("notifications/initialized", request_id=None)]
    for n in range(1, 20):
        if n % 3 == 0:
            batch.append(rpc_message("ping", request_id=n))
        elif n % 3 == 1:
            batch.append(rpc_message("tools/list", request_id=n))
        else:
            call = {"name": "up__echo", "arguments": {"text": f"item {n}"}}
            batch.append(rpc_message("tools/call", call, request_id=n))
    assert len(batch) == 20
    return batch


def _key_reads(queries: list[str]) -> list[str]:
    """The statements that read the caller's API key: on SQLite the key's row, on PostgreSQL the
    definer that returns it (``hub_auth_key``, or ``hub_gateway_read`` which starts with it)."""
    return [
        q
        for q in queries
        if re.search(r"\bapi_keys\b|hub_auth_key|hub_gateway_read", q)
        and not q.lstrip().upper().startswith("UPDATE")
    ]


async def test_a_batch_of_twenty_is_answered_item_by_item_after_one_authentication(
    client: httpx2.AsyncClient, database: Database, deployed: Deployed
) -> None:
    """The largest batch §15 accepts is answered whole, each request by its own answer; and the
    key is read once for the HTTP request, as for a batch of one, not once per item."""
    await post(client, deployed, [rpc_message("ping")])  # warm: the caller's policy, the view
    with count_queries(database) as single:
        one = await post(client, deployed, [rpc_message("ping", request_id=7)])
    assert one.status_code == 200, one.text
    assert one.json() == [{"jsonrpc": "2.0", "id": 7, "result": {}}]
    batch = _full_batch()
    with count_queries(database) as full:
        r = await post(client, deployed, batch)
    assert r.status_code == 200, r.text
    answers = {a["id"]: a for a in r.json()}
    assert set(answers) == set(range(1, 20))  # nineteen requests; the notification unanswered
    for n, answer in answers.items():
        assert "error" not in answer, answer
        result = answer["result"]
        if n % 3 == 0:
            assert result == {}
        elif n % 3 == 1:
            assert {t["name"] for t in result["tools"]} == {"up__echo", "up__region"}
        else:
            assert result.get("isError") is not True, answer
            assert result["structuredContent"] == {"text": f"item {n}"}
    assert len(_key_reads(single)) == 1, single
    assert len(_key_reads(full)) == 1, _key_reads(full)


@pytest.mark.parametrize(
    ("batch", "headers"),
    [
        ([rpc_message("ping", request_id=i) for i in range(21)], {}),
        ([rpc_message("ping")], {"mcp-protocol-version": "2025-11-25"}),
        ([rpc_message("ping")], {"mcp-protocol-version": MODERN_VERSION, "mcp-method": "ping"}),
        ([], {}),
    ],
    ids=["too-many", "2025-11-25", "modern", "empty"],
)
async def test_any_other_batch_is_one_minus_32600(
    client: httpx2.AsyncClient, deployed: Deployed, batch: list[Any], headers: dict[str, str]
) -> None:
    r = await post(client, deployed, batch, **headers)
    assert r.status_code == 400
    body = r.json()
    assert isinstance(body, dict)
    assert body["error"]["code"] == -32600


# --- 2026-07-28 -----------------------------------------------------------------------------


async def test_discover_lists_tools_only_with_cache_hints(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    result = (await rpc(client, deployed, "server/discover")).json()["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN_VERSION, "2025-11-25", "2025-06-18", "2025-03-26"]
    assert result["capabilities"] == {"tools": {}}
    assert result["cacheScope"] == "private"
    assert isinstance(result["ttlMs"], int)
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-hub"
    listed = (await rpc(client, deployed, "tools/list")).json()["result"]
    assert listed["cacheScope"] == "private"
    assert listed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-hub"


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/list",
        "prompts/get",
        "subscriptions/listen",
    ],
)
async def test_methods_the_modern_endpoint_does_not_serve_are_404_minus_32601(
    client: httpx2.AsyncClient, deployed: Deployed, method: str
) -> None:
    headers = {"mcp-name": "x"} if method == "prompts/get" else {}
    r = await rpc(client, deployed, method, {"name": "x"}, headers=headers)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == -32601


@pytest.mark.parametrize(
    "headers",
    [{"mcp-method": "tools/call"}, {"mcp-name": "up__other"}],
    ids=["method", "name"],
)
async def test_headers_that_disagree_with_the_body_are_400_minus_32020(
    client: httpx2.AsyncClient, deployed: Deployed, headers: dict[str, str]
) -> None:
    method = "tools/list" if "mcp-method" in headers else "tools/call"
    r = await rpc(
        client, deployed, method, {"name": "up__echo", "arguments": {"text": "a"}}, headers=headers
    )
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32020


async def test_param_headers_must_mirror_the_arguments(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    tool = deployed.catalogs["up"]["tools"][1]
    assert tool["name"] == "region"
    ok = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": "up__region", "arguments": {"region": "eu"}},
        tool=tool,
    )
    assert ok.status_code == 200, ok.text
    wrong = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": "up__region", "arguments": {"region": "eu"}},
        headers={"mcp-param-region": "us"},
    )
    assert wrong.status_code == 400
    assert wrong.json()["error"]["code"] == -32020
    missing = await rpc(
        client, deployed, "tools/call", {"name": "up__region", "arguments": {"region": "eu"}}
    )
    assert missing.status_code == 400


async def test_missing_meta_is_400_minus_32602(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await post(
        client,
        deployed,
        rpc_message("tools/list"),
        **{"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/list"},
    )
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32602


async def test_meta_version_must_equal_the_header(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    r = await rpc(client, deployed, "tools/list", {"_meta": meta})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32020


async def test_modern_meta_without_the_header_is_400_minus_32020(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await post(client, deployed, rpc_message("tools/list", {"_meta": META}, request_id=302))
    assert r.status_code == 400
    assert r.json()["id"] == 302
    assert r.json()["error"]["code"] == -32020


async def test_an_unknown_version_is_400_minus_32022_naming_the_supported(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await post(
        client, deployed, rpc_message("tools/list"), **{"mcp-protocol-version": "2099-01-01"}
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["supported"] == [MODERN_VERSION, "2025-11-25", "2025-06-18", "2025-03-26"]


async def test_a_body_that_is_not_json_is_400_minus_32700(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await client.post(
        deployed.url,
        content=b"{not json",
        headers={**deployed.headers, "content-type": "application/json"},
    )
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32700


async def test_a_modern_notification_is_202(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    message = rpc_message("notifications/cancelled", {"_meta": META}, request_id=None)
    r = await post(
        client,
        deployed,
        message,
        **{"mcp-protocol-version": MODERN_VERSION, "mcp-method": "notifications/cancelled"},
    )
    assert r.status_code == 202


async def test_legacy_agents_see_no_non_object_output_schema(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    tool = {"name": "nums", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}}
    peer = await handmade_peer(era="dual", tools=[tool])
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    modern = (await rpc(client, deployed, "tools/list")).json()["result"]["tools"][0]
    legacy = (await rpc(client, deployed, "tools/list", era="2025-11-25")).json()["result"][
        "tools"
    ][0]
    assert modern["outputSchema"] == {"type": "array"}
    assert "outputSchema" not in legacy


@pytest.mark.parametrize("era", ["2025-03-26", "2025-11-25", "modern"])
async def test_a_2026_upstreams_result_envelope_reaches_only_2026_agents(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    """``resultType`` and the cache hints are 2026-07-28 fields: a legacy agent's result had the
    upstream's (stop 42; the sidecar already took them off)."""
    tool = {"name": "free", "inputSchema": {"type": "object"}}
    peer = await handmade_peer(era="modern", tools=[tool])
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    envelope = {"resultType": "complete", "ttlMs": 60_000, "cacheScope": "public"}
    answer = {"content": [{"type": "text", "text": "hi"}], "isError": False, **envelope}
    peer.override(
        "tools/call", lambda r: Reply(body={"jsonrpc": "2.0", "id": r.rpc_id, "result": answer})
    )
    called = await rpc(
        client, deployed, "tools/call", {"name": "up__free", "arguments": {}}, era=era
    )
    result = called.json()["result"]
    assert result["content"] == [{"type": "text", "text": "hi"}]
    if era == "modern":
        assert result["resultType"] == "complete"
    else:
        assert not set(envelope) & set(result), result


async def test_an_unreachable_database_is_503_with_json_rpc_50300() -> None:
    # Nothing listens on port 1: every connection is refused, as with a database that went away.
    down = create_app(make_settings("postgresql+asyncpg://root@127.0.0.1:1/hub"))
    async with (
        down.router.lifespan_context(down),
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=down), base_url="http://hub.test"
        ) as http,
    ):
        r = await http.post(
            f"/tenants/{uuid.uuid4()}/deployments/{uuid.uuid4()}/mcp",
            json=rpc_message("tools/list"),
            headers={"authorization": f"Bearer {generate_key()[0]}"},
        )
    assert r.status_code == 503
    assert r.json()["error"]["code"] == 50300
    assert r.json()["error"]["data"] == {"class": "unavailable"}
