"""Abandoned flows are failed and their sealed secrets erased (``oauth.expire_flows``, stop 53).

An OAuth walk found every flow whose callback never came still holding its encrypted PKCE
verifier and client secret, and a flow a crash left ``redeeming`` the same, for ever.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from hub.core import clock
from hub.core.db import Database
from hub.models import OAuthAuthorization
from hub.oauth.expiry import REDEEMING_GRACE_S, expire_pass
from tests.support.databases import owner_session
from tests.support.factories import make_principal, make_tenant


def _flow(tenant_id: uuid.UUID, initiator: uuid.UUID, status: str, expires_in_s: float) -> Any:
    return OAuthAuthorization(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        state_hash=uuid.uuid4().hex * 2,
        status=status,
        expires_at=clock.now() + timedelta(seconds=expires_in_s),
        initiator_id=initiator,
        server_url="https://mcp.example.test/mcp",
        resource="https://mcp.example.test/mcp",
        issuer="https://as.example.test",
        token_endpoint="https://as.example.test/token",
        client_id="client",
        auth_method="client_secret_post",
        redirect_uri="https://hub.example.test/oauth/callback",
        verifier_key_id="t1",
        verifier_nonce=b"n" * 12,
        verifier_ciphertext=b"c" * 40,
        client_secret_key_id="t1",
        client_secret_nonce=b"n" * 12,
        client_secret_ciphertext=b"c" * 40,
    )


async def test_dead_flows_are_failed_and_erased_and_live_ones_kept(database: Database) -> None:
    tenant = await make_tenant(database)
    initiator = await make_principal(database, tenant.id, role="tenant_admin")
    flows = {
        "pending, expired": _flow(tenant.id, initiator.principal_id, "pending", -1),
        "pending, live": _flow(tenant.id, initiator.principal_id, "pending", 600),
        "redeeming, long dead": _flow(
            tenant.id, initiator.principal_id, "redeeming", -REDEEMING_GRACE_S - 1
        ),
        "redeeming, just expired": _flow(tenant.id, initiator.principal_id, "redeeming", -60),
    }
    async with owner_session(database) as session:
        session.add_all(flows.values())
    assert await expire_pass(database) == 2
    async with owner_session(database, write=False) as session:
        rows = {
            row.id: row for row in (await session.execute(select(OAuthAuthorization))).scalars()
        }
    seen = {
        name: (
            rows[flow.id].status,
            rows[flow.id].reason,
            rows[flow.id].verifier_ciphertext is None,
            rows[flow.id].client_secret_ciphertext is None,
        )
        for name, flow in flows.items()
    }
    assert seen == {
        "pending, expired": ("failed", "state_expired", True, True),
        "pending, live": ("pending", None, False, False),
        "redeeming, long dead": ("failed", "redemption_abandoned", True, True),
        "redeeming, just expired": ("redeeming", None, False, False),
    }
    assert await expire_pass(database) == 0  # nothing left to do
