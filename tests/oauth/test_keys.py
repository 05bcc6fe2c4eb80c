"""OAuth secrets at rest follow the keyring: rotated by ``hub crypto rotate``, checked by
``/readyz``, never in the clear."""

from __future__ import annotations

import base64

from sqlalchemy import select

from hub.core.crypto import Keyring
from hub.models import OAuthAuthorization, OAuthClient
from hub.oauth.rotation import keyring_covers_oauth_rows, rotate_oauth_fields
from hub.oauth.sealed import CLIENT_AAD, open_field
from tests.conftest import TEST_KEY
from tests.oauth.conftest import Hub, OAuthPeersStarter
from tests.support.databases import owner_session

NEW_KEY = base64.b64encode(b"n" * 32).decode()


async def test_rotation_rewraps_client_secrets_and_pending_flows(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.connected(peers)
    await hub.add_server("pending", peers.peer.url)
    assert (await hub.start({"server": "pending"})).status_code == 201  # never completed
    old_only = Keyring.parse(f"t2:{NEW_KEY}")
    assert await keyring_covers_oauth_rows(old_only)(hub.db) is not None
    ring = Keyring.parse(f"t2:{NEW_KEY},t1:{TEST_KEY}", "t2")
    assert await rotate_oauth_fields(hub.db, ring) == 2
    assert await rotate_oauth_fields(hub.db, ring) == 0  # idempotent
    assert await keyring_covers_oauth_rows(old_only)(hub.db) is None
    async with owner_session(hub.db, write=False) as session:
        client = (await session.execute(select(OAuthClient))).scalar_one()
        pending = (
            await session.execute(
                select(OAuthAuthorization).where(OAuthAuthorization.status == "pending")
            )
        ).scalar_one()
    assert client.client_secret_key_id == "t2"
    assert pending.verifier_key_id == "t2"
    secret = open_field(old_only, CLIENT_AAD, client, "client_secret")
    assert secret is not None
    assert secret in {c["secret"] for c in peers.auth.clients.values()}
