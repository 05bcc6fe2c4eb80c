"""Tenant routes for grants (DESIGN §4, §12)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, Response

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep, SettingsDep, reads_only
from hub.core.pagination import PageParamsDep
from hub.core.paths import parse_id
from hub.core.readahead import read_ahead
from hub.core.schemas import Envelope, ListEnvelope
from hub.grants import service
from hub.grants.deps import EffectiveCheckDep, PolicyCacheDep
from hub.grants.schemas import GrantCheck, GrantCreate, GrantDecision, GrantRead

router = rest_router(prefix="/tenants/{t}/grants", tags=["grants"])


@router.post("", status_code=201, name="grant.create")
async def create_grant(
    body: GrantCreate,
    session: SessionDep,
    cache: PolicyCacheDep,
    settings: SettingsDep,
    access: Annotated[TenantAccess, authorize("grant", "write")],
) -> Envelope[GrantRead]:
    """Grant a principal allow, ask or deny for an action on a resource pattern (at most
    ``HUB_MAX_GRANTS_PER_PRINCIPAL`` a principal: past it, 409)."""
    limit = settings.max_grants_per_principal
    grant = await service.create_grant(session, cache, access, body, limit=limit)
    return Envelope(data=GrantRead.model_validate(grant))


@router.get("", name="grant.list")
async def list_grants(
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("grant", "read")],
    principal_id: Annotated[uuid.UUID | None, Query()] = None,
) -> ListEnvelope[GrantRead]:
    """List grants, optionally of one principal."""
    return ListEnvelope.of(
        await service.list_grants(session, access, page, principal_id), GrantRead
    )


@router.delete("/{g}", status_code=204, name="grant.delete")
async def delete_grant(
    g: str,
    session: SessionDep,
    cache: PolicyCacheDep,
    access: Annotated[
        TenantAccess, authorize("grant", "write", item="g", tenant_admin_passes=True)
    ],
) -> Response:
    """Delete a grant; every replica honours it on the next request. A tenant_admin may always
    delete any grant of its tenant."""
    await service.delete_grant(session, cache, access, parse_id(g))
    return Response(status_code=204)


@router.post("/check", name="grant.check")
@reads_only
@read_ahead(service.CHECK_READ_AHEAD)
async def check_grant(
    body: GrantCheck,
    session: SessionDep,
    cache: PolicyCacheDep,
    effective: EffectiveCheckDep,
    access: Annotated[TenantAccess, authorize("grant", "read")],
) -> Envelope[GrantDecision]:
    """The decision a principal would get, and the grant that decides it; with a
    ``deployment_id``, the effective decision of a tool in that deployment and its reasons."""
    return Envelope(data=await service.check_grant(session, cache, access, body, effective))
