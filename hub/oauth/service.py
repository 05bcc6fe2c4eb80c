"""The OAuth domain's rules, as other layers use them (DESIGN §9, §15).

- :func:`create_authorization` (:mod:`hub.oauth.flow`): discovery, registration, the
  authorization URL;
- :func:`complete_callback` (:mod:`hub.oauth.callback`): ``state``, ``iss``, the code, the
  credential;
- :func:`get_authorization`: a flow's status as the CLI polls it;
- :func:`client_metadata` (:mod:`hub.oauth.registration`): the hub's client ID metadata document;
- :class:`TokenRefresher` (:mod:`hub.oauth.refresh`) and :func:`register_refresh`
  (:mod:`hub.oauth.worker`): the refresh lease, on use and ahead of expiry.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.errors import NotFound
from hub.core.tenancy import TenantId
from hub.oauth import repository
from hub.oauth.callback import CallbackOutcome, complete_callback
from hub.oauth.config import OAuthConfig
from hub.oauth.context import OAuthContext
from hub.oauth.flow import Started, create_authorization
from hub.oauth.refresh import TokenRefresher
from hub.oauth.registration import client_metadata_document
from hub.oauth.schemas import AuthorizationRead, ClientMetadataDocument
from hub.oauth.worker import register_refresh
from hub.servers import service as servers_service

__all__ = [
    "CallbackOutcome",
    "OAuthConfig",
    "OAuthContext",
    "Started",
    "TokenRefresher",
    "client_metadata",
    "complete_callback",
    "create_authorization",
    "get_authorization",
    "register_refresh",
]


async def get_authorization(
    session: AsyncSession, tenant_id: TenantId, authorization_id: uuid.UUID
) -> AuthorizationRead:
    """``pending`` (``redeeming`` reads as pending), ``completed`` or ``failed``; a pending flow
    past its expiry reads as ``failed`` with reason ``state_expired``."""
    row = await repository.get_authorization(session, tenant_id, authorization_id)
    if row is None:
        raise NotFound("authorization not found")
    status, reason = row.status, row.reason
    if status == "redeeming":
        status = "pending"
    if status == "pending" and row.expires_at <= clock.now():
        status, reason = "failed", "state_expired"
    server = None
    if row.server_id is not None:
        found = await servers_service.get_server_by_id(session, tenant_id, row.server_id)
        server = found.handle if found is not None else None
    return AuthorizationRead(
        id=row.id,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        credential_id=row.credential_id if status == "completed" else None,
        server=server,
        expires_at=row.expires_at,
        created_at=row.created_at,
        completed_at=row.completed_at,
    )


def client_metadata(config: OAuthConfig) -> ClientMetadataDocument:
    return ClientMetadataDocument(**client_metadata_document(config))
