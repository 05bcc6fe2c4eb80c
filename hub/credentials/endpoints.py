"""Tenant routes for credentials (DESIGN §4, §12). The secret is accepted, never returned."""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep
from hub.core.pagination import PageParamsDep
from hub.core.paths import parse_id
from hub.core.schemas import Envelope, ListEnvelope
from hub.credentials import service
from hub.credentials.deps import CredentialContextDep
from hub.credentials.schemas import CredentialCreate, CredentialRead, CredentialUpdate

router = rest_router(prefix="/tenants/{t}/credentials", tags=["credentials"])


@router.post("", status_code=201, name="credential.create")
async def create_credential(
    body: CredentialCreate,
    session: SessionDep,
    ctx: CredentialContextDep,
    access: Annotated[TenantAccess, authorize("credential", "write")],
) -> Envelope[CredentialRead]:
    """Store a credential; its secret is encrypted and never shown again."""
    credential = await service.create_credential(session, ctx, access, body)
    return Envelope(data=CredentialRead.model_validate(credential))


@router.get("", name="credential.list")
async def list_credentials(
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("credential", "read")],
) -> ListEnvelope[CredentialRead]:
    """List credentials (never their secrets)."""
    return ListEnvelope.of(await service.list_credentials(session, access, page), CredentialRead)


@router.get("/{c}", name="credential.get")
async def get_credential(
    c: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("credential", "read", item="c")],
) -> Envelope[CredentialRead]:
    """Get a credential (revoked ones stay readable)."""
    credential = await service.get_credential(session, access.tenant_id, parse_id(c))
    return Envelope(data=CredentialRead.model_validate(credential))


@router.patch("/{c}", name="credential.update")
async def update_credential(
    c: str,
    body: CredentialUpdate,
    session: SessionDep,
    ctx: CredentialContextDep,
    access: Annotated[TenantAccess, authorize("credential", "write", item="c")],
) -> Envelope[CredentialRead]:
    """Change a credential; a ``version`` that no longer matches is a 409."""
    credential = await service.update_credential(session, ctx, access, parse_id(c), body)
    return Envelope(data=CredentialRead.model_validate(credential))


@router.delete("/{c}", status_code=204, name="credential.delete")
async def revoke_credential(
    c: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("credential", "write", item="c")],
) -> Response:
    """Revoke a credential: final, and its encrypted secrets are wiped."""
    await service.revoke_credential(session, access, parse_id(c))
    return Response(status_code=204)
