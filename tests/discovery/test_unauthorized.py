"""An upstream ``unauthorized`` says whether a credential was sent at all (DESIGN §14).

"Upstream refused the credential" is wrong advice when no credential went out: without one, or
with the keyless sentinel, the answer says so and ``credential_sent`` is false.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import Reply
from tests.support.stories import TenantAdmin, make_tenant_admin


async def _credential(
    client: httpx2.AsyncClient, setup: TenantAdmin, origin: str, **extra: Any
) -> str:
    body = {"name": "c", "type": "api_key", "api_base_url": origin, **extra}
    made = await client.post(setup.url("credentials"), json=body, headers=setup.admin.headers)
    assert made.status_code == 201, made.text
    return str(made.json()["data"]["id"])


@pytest.mark.parametrize("credential", ["none", "keyless", "token"])
async def test_unauthorized_says_whether_a_credential_was_sent(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    credential: str,
) -> None:
    peer = await handmade_peer(era="modern")
    peer.override("*", Reply(status=401, body={"error": "who are you"}))
    setup = await make_tenant_admin(database)
    origin = peer.url.rsplit("/", 1)[0]
    body: dict[str, Any] = {"url": peer.url}
    if credential == "keyless":
        body["credential_id"] = await _credential(
            client, setup, origin, metadata={"mcp": {"auth": "none"}}
        )
    elif credential == "token":
        body["credential_id"] = await _credential(
            client, setup, origin, secret="a-real-token-0123456789"
        )
    response = await client.post(
        setup.url("mcp", "discover"), json=body, headers=setup.admin.headers
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["reason"] == "unauthorized"
    assert error["credential_sent"] is (credential == "token")
    assert "oauth" not in error  # the challenge names no OAuth metadata
    if credential == "token":
        assert error["message"] == "upstream refused the credential"
    else:
        assert error["message"] == "upstream requires authorization, and no credential was sent"


async def test_a_challenge_naming_oauth_metadata_says_to_connect_by_oauth(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """An MCP server that wants OAuth names its protected resource metadata in the challenge
    (RFC 9728 §5.1): the answer says what to do, not only that nothing was sent."""
    peer = await handmade_peer(era="modern")
    metadata = peer.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    challenge = {"www-authenticate": f'Bearer resource_metadata="{metadata}"'}
    peer.override("*", Reply(status=401, headers=challenge, body={"error": "invalid_token"}))
    setup = await make_tenant_admin(database)
    response = await client.post(
        setup.url("mcp", "discover"), json={"url": peer.url}, headers=setup.admin.headers
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["reason"], error["credential_sent"], error["oauth"]) == (
        "unauthorized",
        False,
        True,
    )
    assert error["message"].startswith(
        "upstream requires authorization, and no credential was sent; it names an OAuth "
        "authorization server: connect the server by OAuth"
    )
