"""The agents' endpoint checks the params the spec types, and names every version it serves.

Found in review: a ``tools/list`` cursor was ignored (the full list came back for any cursor,
though the hub never issues one and "Invalid cursors SHOULD result in an error with code
-32602"); ``server/discover`` and ``-32022`` named 2026-07-28 alone though the URL serves the
handshake versions too (``basic/versioning``: the server MUST answer with the versions it
supports); and ``initialize`` answered without its required ``protocolVersion``,
``capabilities`` and ``clientInfo``. Other requests' params: ``test_endpoint_protocol.py``.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.endpoint_support import deploy_echo_and_region, post, rpc_message
from tests.gateway.support import Deployed, rpc
from tests.peers.fixtures import HandmadePeerStarter

#: every version the endpoint serves, newest first
SERVED = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
ERAS = ["modern", "2025-11-25", "2025-06-18", "2025-03-26"]
CLIENT_INFO = {"name": "agent", "version": "1.0.0"}


@pytest.fixture
async def deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    return await deploy_echo_and_region(client, database, handmade_peer)


# --- tools/list: the hub issues no cursor, so every cursor is invalid -------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("cursor", "says"),
    [
        ("garbage", "Invalid cursor"),
        ("", "Invalid cursor"),  # a cursor like any other in 2026-07-28, and never issued
        (None, "params.cursor must be a string"),
        (2, "params.cursor must be a string"),
    ],
    ids=["garbage", "empty", "null", "number"],
)
async def test_a_tools_list_cursor_is_minus_32602_in_every_era(
    client: httpx2.AsyncClient, deployed: Deployed, era: str, cursor: Any, says: str
) -> None:
    r = await rpc(client, deployed, "tools/list", {"cursor": cursor}, era=era, request_id=2)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["id"] == 2
    assert "result" not in answer
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith(says), answer
    listed = await rpc(client, deployed, "tools/list", era=era)  # no cursor: the one page
    assert {t["name"] for t in listed.json()["result"]["tools"]} == {"up__echo", "up__region"}
    assert "nextCursor" not in listed.json()["result"]


async def test_a_cursor_in_a_2025_03_26_batch_fails_only_its_item(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    batch = [
        rpc_message("tools/list", {"cursor": "garbage"}, request_id=1),
        rpc_message("tools/list", request_id=2),
    ]
    r = await post(client, deployed, batch)
    assert r.status_code == 200, r.text
    answers = {a["id"]: a for a in r.json()}
    assert answers[1]["error"]["code"] == -32602
    assert len(answers[2]["result"]["tools"]) == 2


# --- the versions named ----------------------------------------------------------------------


async def test_discover_names_every_version_served_newest_first(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    result = (await rpc(client, deployed, "server/discover")).json()["result"]
    assert result["supportedVersions"] == SERVED


async def test_an_unsupported_version_names_every_version_served(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await post(
        client, deployed, rpc_message("tools/list"), **{"mcp-protocol-version": "2024-11-05"}
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": SERVED, "requested": "2024-11-05"}


@pytest.mark.parametrize("version", SERVED)
async def test_every_version_named_is_served(
    client: httpx2.AsyncClient, deployed: Deployed, version: str
) -> None:
    era = "modern" if version == SERVED[0] else version
    headers = {"mcp-protocol-version": version}
    r = await rpc(client, deployed, "tools/list", era=era, headers=headers)
    assert r.status_code == 200, r.text
    assert len(r.json()["result"]["tools"]) == 2


# --- initialize's params ---------------------------------------------------------------------


def _initialize(**params: Any) -> dict[str, Any]:
    full = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": full | params}


def _without(member: str) -> dict[str, Any]:
    message = _initialize()
    del message["params"][member]
    return message


@pytest.mark.parametrize(
    ("message", "names"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize"}, "protocolVersion"),
        (_without("protocolVersion"), "protocolVersion"),
        (_initialize(protocolVersion=5), "protocolVersion"),
        (_initialize(protocolVersion=None), "protocolVersion"),
        (_without("capabilities"), "capabilities"),
        (_initialize(capabilities=[]), "capabilities"),
        (_without("clientInfo"), "clientInfo"),
        (_initialize(clientInfo="agent"), "clientInfo"),
        (_initialize(clientInfo={"name": "agent"}), "clientInfo"),
        (_initialize(clientInfo={"name": 1, "version": "1"}), "clientInfo"),
    ],
    ids=[
        "no-params",
        "no-version",
        "version-number",
        "version-null",
        "no-capabilities",
        "capabilities-array",
        "no-client-info",
        "client-info-string",
        "client-info-no-version",
        "client-info-name-number",
    ],
)
async def test_initialize_without_its_required_params_is_minus_32602(
    client: httpx2.AsyncClient, deployed: Deployed, message: dict[str, Any], names: str
) -> None:
    r = await post(client, deployed, message)
    assert r.status_code == 200, r.text
    error = r.json()["error"]
    assert error["code"] == -32602
    assert f"params.{names}" in error["message"]


async def test_initialize_takes_what_it_does_not_check(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    """Lenient where clients vary: members the schema makes optional, capabilities of any
    content, and a version the hub does not speak (counter-offered, as the spec says)."""
    message = _initialize(
        protocolVersion="2099-01-01",
        capabilities={"roots": {"listChanged": True}, "sampling": {}, "x-vendor": 1},
        clientInfo=CLIENT_INFO | {"title": "Agent", "icons": [], "websiteUrl": "https://a.test"},
        _meta={"progressToken": 1},
    )
    r = await post(client, deployed, message)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["protocolVersion"] == "2025-11-25"
