"""server-everything (npm, streamableHttp) starts and speaks only the handshake eras."""

from __future__ import annotations

import httpx2
import pytest

from tests.peers.fixtures import EverythingPeer
from tests.peers.raw import (
    LEGACY,
    MODERN,
    answer,
    initialize_params,
    open_legacy_session,
    post_legacy,
    post_modern,
)


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        (LEGACY, LEGACY),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2024-10-07", "2024-10-07"),
        (MODERN, LEGACY),
    ],
)
async def test_initialize_answers_handshake_versions(
    everything_peer: EverythingPeer, offered: str, answered: str
) -> None:
    async with httpx2.AsyncClient(timeout=10, trust_env=False) as http:
        response = await post_legacy(
            http, everything_peer.url, "initialize", initialize_params(offered)
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["mcp-session-id"]
    result = answer(response, 1)["result"]
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"]


async def test_lists_tools_in_a_session(everything_peer: EverythingPeer) -> None:
    async with httpx2.AsyncClient(timeout=10, trust_env=False) as http:
        session = await open_legacy_session(http, everything_peer.url)
        listed = await post_legacy(
            http, everything_peer.url, "tools/list", session_id=session.session_id
        )
        tools = answer(listed, 1)["result"]["tools"]
    assert {"echo", "get-sum"} <= {t["name"] for t in tools}
    assert all(t["inputSchema"]["type"] == "object" for t in tools)


async def test_a_modern_request_gets_a_non_modern_400(everything_peer: EverythingPeer) -> None:
    async with httpx2.AsyncClient(timeout=10, trust_env=False) as http:
        response = await post_modern(http, everything_peer.url, "server/discover")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32000  # not a recognised modern error: the client falls back
