"""Tenant routes for deployments and their sidecar bundle (DESIGN §4, §10, §12)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Query, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth.caller import TenantAccess
from hub.authz.deps import TenantAccessDep, authorize, item_resource, require
from hub.authz.throttle import rest_router
from hub.catalogs import service as catalogs_service
from hub.core.components import components_of
from hub.core.db import preliminary_reads
from hub.core.deps import SessionDep
from hub.core.errors import NotFound, PreconditionFailed
from hub.core.openapi import ETAG_HEADER
from hub.core.pagination import PageParamsDep
from hub.core.paths import parse_id
from hub.core.schemas import Envelope, ListEnvelope
from hub.deployments import service
from hub.deployments.bundle import (
    BundleDecisions,
    BundleEntry,
    build_bundle,
    etag_matches,
    if_match_holds,
    render,
)
from hub.deployments.bundle_cache import BundleCache, bundle_key
from hub.deployments.schemas import (
    BundleRead,
    DeploymentCreate,
    DeploymentRead,
    DeploymentUpdate,
)
from hub.models import Deployment

router = rest_router(prefix="/tenants/{t}/deployments", tags=["deployments"])


async def _one(
    session: AsyncSession, access: TenantAccess, deployment: Deployment
) -> Envelope[DeploymentRead]:
    entries = await service.resolved_entries(session, access.tenant_id, [deployment])
    return Envelope(data=service.deployment_read(deployment, entries[deployment.id]))


def _etag(read: DeploymentRead) -> str:
    """A strong ETag of the deployment as it reads (its ``updated_at`` included), for a
    conditional ``PATCH`` (``If-Match``): an update based on a stale read is refused."""
    return '"' + hashlib.sha256(read.model_dump_json().encode()).hexdigest()[:32] + '"'


IfMatch = Annotated[
    str | None,
    Header(
        description="The ETag of a read of this deployment: the update is made only if it is "
        "still current (else 412), so read-change-write clients lose no one else's change"
    ),
]


async def bundle_access(
    request: Request, access: TenantAccessDep, session: SessionDep, d: str
) -> TenantAccess:
    """The built-in self rule (DESIGN §8): a deployment's own agent reads its bundle with no
    grant; anyone else needs ``deployment:<d>`` read. Both failures are 403 (no existence leak);
    a non-canonical id is 404 before either. The agent's check reads the deployment's view rows,
    which the bundle is then built from (one read per request)."""
    resource = item_resource("deployment", d)
    if access.caller.kind == "agent":
        async with preliminary_reads(session):
            rows = await service.view_rows(session, access.tenant_id, parse_id(d))
        if rows and rows[0].agent_id == access.caller.principal_id:
            request.state.bundle_rows = rows
            return access
    await require(request, session, access, resource, "read")
    return access


@dataclass(frozen=True)
class Listing:
    """Who lists, and the agent whose deployments it asked for (None: every agent's)."""

    access: TenantAccess
    agent_id: uuid.UUID | None


AgentFilter = Annotated[
    uuid.UUID | None,
    Query(
        description="Only this agent's deployments (an agent lists its own with its id and no "
        "grant; any other id needs deployment:* read, and an id of no agent lists none)"
    ),
]


async def list_access(
    request: Request, access: TenantAccessDep, session: SessionDep, agent_id: AgentFilter = None
) -> Listing:
    """The built-in self rule (DESIGN §8): an agent lists its own deployments
    (``?agent_id=<self>``) with no grant; any other listing needs ``deployment:*`` read."""
    caller = access.caller
    if not (caller.kind == "agent" and agent_id == caller.principal_id):
        await require(request, session, access, "deployment:*", "read")
    return Listing(access, agent_id)


@router.post("", status_code=201, name="deployment.create")
async def create_deployment(
    body: DeploymentCreate,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("deployment", "write")],
) -> Envelope[DeploymentRead]:
    """Deploy pinned catalog versions of servers to an agent."""
    deployment = await service.create_deployment(session, access, body)
    return await _one(session, access, deployment)


@router.get("", name="deployment.list")
async def list_deployments(
    session: SessionDep,
    page: PageParamsDep,
    listing: Annotated[Listing, Depends(list_access)],
) -> ListEnvelope[DeploymentRead]:
    """List deployments, or one agent's (``agent_id``; its own: no grant needed)."""
    access = listing.access
    result = await service.list_deployments(session, access, page, agent_id=listing.agent_id)
    entries = await service.resolved_entries(session, access.tenant_id, list(result.items))
    return ListEnvelope.of(
        result, DeploymentRead, lambda d: service.deployment_read(d, entries[d.id])
    )


@router.get(
    "/{d}",
    name="deployment.get",
    responses={200: {"description": "The deployment", "headers": ETAG_HEADER}},
)
async def get_deployment(
    d: str,
    session: SessionDep,
    response: Response,
    access: Annotated[TenantAccess, authorize("deployment", "read", item="d")],
) -> Envelope[DeploymentRead]:
    """Get a deployment, with its ETag (for ``If-Match`` on ``PATCH``)."""
    deployment = await service.get_deployment(session, access.tenant_id, parse_id(d))
    found = await _one(session, access, deployment)
    response.headers["etag"] = _etag(found.data)
    return found


@router.patch(
    "/{d}",
    name="deployment.update",
    responses={200: {"description": "The deployment as updated", "headers": ETAG_HEADER}},
)
async def update_deployment(
    d: str,
    body: DeploymentUpdate,
    session: SessionDep,
    response: Response,
    access: Annotated[TenantAccess, authorize("deployment", "write", item="d")],
    if_match: IfMatch = None,
) -> Envelope[DeploymentRead]:
    """Rename a deployment or replace its entries; with ``If-Match``, only if unchanged."""
    deployment_id = parse_id(d)
    if if_match is not None:
        current = await service.get_deployment(
            session, access.tenant_id, deployment_id, for_update=True
        )
        if not if_match_holds(if_match, _etag((await _one(session, access, current)).data)):
            raise PreconditionFailed(
                "the deployment changed since it was read: read it again and make the change "
                "on what it is now"
            )
    deployment = await service.update_deployment(session, access, deployment_id, body)
    updated = await _one(session, access, deployment)
    response.headers["etag"] = _etag(updated.data)
    return updated


@router.delete("/{d}", status_code=204, name="deployment.delete")
async def delete_deployment(
    d: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("deployment", "write", item="d")],
) -> Response:
    """Delete a deployment."""
    await service.delete_deployment(session, access, parse_id(d))
    return Response(status_code=204)


def _bundle_headers(etag: str) -> dict[str, str]:
    return {"etag": etag, "cache-control": "private, no-cache"}


@router.get(
    "/{d}/bundle",
    name="deployment.bundle",
    response_class=Response,
    responses={
        200: {"description": "The bundle", "model": Envelope[BundleRead], "headers": ETAG_HEADER},
        304: {"description": "Unchanged", "headers": ETAG_HEADER},
    },
)
async def get_bundle(
    request: Request,
    d: str,
    session: SessionDep,
    access: Annotated[TenantAccess, Depends(bundle_access)],
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """What a sidecar needs to serve the deployment's tools (no secrets), with a strong ETag."""
    tenant_id = access.tenant_id
    deployment_id = parse_id(d)
    # the bundle is built from these rows only, and kept by them (hub.deployments.bundle_cache)
    rows = getattr(request.state, "bundle_rows", None)
    if rows is None:
        rows = await service.view_rows(session, tenant_id, deployment_id)
    if not rows:
        raise NotFound("deployment not found")
    agent_id = rows[0].agent_id
    parts = components_of(request.app)
    caller = access.caller
    own = caller.grants_version if caller.principal_id == agent_id else None
    decide = parts.get(BundleDecisions).decide
    deciding = await decide(session, tenant_id, deployment_id, agent_id, own, rows)
    decisions = None if deciding.timeless else await deciding.decisions()
    cache = parts.get(BundleCache)
    key = bundle_key(tenant_id, deployment_id, rows, deciding.grants_version, decisions)
    kept = cache.get(key)
    if kept is not None and etag_matches(if_none_match, kept.etag):
        return Response(status_code=304, headers=_bundle_headers(kept.etag))
    if kept is not None and kept.body is not None:
        body, etag = kept.body, kept.etag
    else:
        entries = [
            BundleEntry(row, await catalogs_service.get_catalog_by_id(session, tenant_id, cid))
            for row in rows
            if (cid := row.catalog_id) is not None
        ]
        if decisions is None:
            decisions = await deciding.decisions()
        bundle = build_bundle(tenant_id, deployment_id, agent_id, entries, decisions)
        body, etag = render(bundle)
        cache.put(key, body, etag)
    headers = _bundle_headers(etag)
    if etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)
