"""Keeping a client registration for a tenant and issuer (``oauth_clients``, DESIGN §9).

A dynamic registration is kept when the authorization server issues it, at the start of a flow:
the server has accepted the client by registering it. A pre-registered client (an operator's
``"client"``) is kept only by the callback, once its code has been redeemed: kept earlier, a
mistyped client id would replace the tenant's working registration for that issuer, and every
later connect and step-up would use it (registrations kept take precedence over new ones).

A kept dynamic registration the authorization server has forgotten (its token endpoint answers
``invalid_client`` to a code redemption or a refresh) is forgotten too
(:func:`hub.oauth.repository.forget_dynamic_client`, by the callback and the refresher): kept,
every later connect reused the dead client and failed. A pre-registered client stays: it is the
operator's to replace.
"""

from __future__ import annotations

import uuid
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.tenancy import TenantId
from hub.models import OAuthClient
from hub.oauth import repository
from hub.oauth.context import OAuthContext
from hub.oauth.registration import AuthMethod
from hub.oauth.sealed import CLIENT_AAD, seal_field

__all__ = ["keep_client"]


async def keep_client(
    session: AsyncSession,
    ctx: OAuthContext,
    tenant_id: TenantId,
    issuer: str,
    *,
    kind: Literal["pre_registered", "dynamic"],
    client_id: str,
    auth_method: AuthMethod,
    client_secret: str | None,
) -> None:
    """Keep a registration for the tenant and issuer, replacing an older one (the callers keep
    only these two kinds: a ``stored`` one is kept already, a metadata document needs none)."""
    now = clock.now()
    row = await repository.get_client(session, tenant_id, issuer)
    if row is None:
        row = OAuthClient(id=uuid.uuid4(), tenant_id=tenant_id.value, issuer=issuer, created_at=now)
        session.add(row)
    row.client_id = client_id
    row.auth_method = auth_method
    row.registration = kind
    row.redirect_uri = ctx.config.redirect_uri
    row.updated_at = now
    for name, value in seal_field(
        ctx.keyring, CLIENT_AAD, row.tenant_id, row.id, "client_secret", client_secret
    ).items():
        setattr(row, name, value)
    await session.flush()
