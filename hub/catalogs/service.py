"""Catalog rules: snapshot = discover, then store immutably unless nothing changed (DESIGN §13).

A snapshot discovers with no transaction open, then, in the request's short write transaction,
locks the server row (so concurrent snapshots of one server take turns), compares the catalog hash
with the latest version only (A → B → A makes version 3), and either returns the latest
(``created: false``) or inserts version N+1. The unique (server, version) constraint backs this up.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.catalogs import repository
from hub.catalogs.canonical import catalog_sha256, sorted_tools, tool_sha256
from hub.catalogs.diff import diff_tools
from hub.catalogs.schemas import CatalogDiffRead, ChangedTool
from hub.core import clock
from hub.core.db import Database
from hub.core.errors import NotFound
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.discovery.service import run_discovery
from hub.models import Catalog, Server
from hub.servers import service as servers_service
from hub.upstream import UpstreamContext, resolve_target

__all__ = [
    "diff_catalogs",
    "get_catalog",
    "get_catalog_by_id",
    "get_latest_catalog",
    "list_catalogs",
    "snapshot",
]


async def snapshot(
    db: Database,
    session: AsyncSession,
    ctx: UpstreamContext,
    access: TenantAccess,
    handle: str,
) -> tuple[Catalog, bool]:
    async with db.session(write=False) as read:
        server = await servers_service.get_server(read, access.tenant_id, handle)
        await servers_service.require_credential_use(access, server.credential_id)
        target = await resolve_target(
            read, ctx, access.tenant_id, server.url, server.credential_id, servers_own=True
        )
    found = await run_discovery(
        ctx, access.tenant_id, target, server.era, db=db
    )  # no transaction is open here
    tools = sorted_tools(found.tools)
    digest = catalog_sha256(
        protocol_version=found.protocol_version,
        server_info=found.server_info,
        capabilities=found.capabilities,
        instructions=found.instructions,
        tools=tools,
    )
    locked = await servers_service.get_server(session, access.tenant_id, handle, for_update=True)
    await servers_service.remember_era(session, locked, found.era, found.protocol_version)
    latest = await repository.latest(session, access.tenant_id, locked.id)
    created = latest is None or latest.sha256 != digest
    if latest is not None and not created:
        catalog = latest
    else:
        catalog = Catalog(
            id=uuid.uuid4(),
            tenant_id=access.tenant_id.value,
            server_id=locked.id,
            version=(latest.version + 1) if latest is not None else 1,
            sha256=digest,
            protocol_version=found.protocol_version,
            server_info=found.server_info,
            capabilities=found.capabilities,
            instructions=found.instructions,
            tools=tools,
            tool_hashes={str(t["name"]): tool_sha256(t) for t in tools},
            discovered_at=clock.now(),
            discovered_by=access.actor_id,
        )
        session.add(catalog)
        await session.flush()
    await record_for(
        session,
        access,
        Action.CATALOG_CREATE,
        f"catalog:{handle}",
        {"version": catalog.version, "created": created, "sha256": digest},
    )
    return catalog, created


async def _server(session: AsyncSession, tenant_id: TenantId, handle: str) -> Server:
    return await servers_service.get_server(session, tenant_id, handle)


async def list_catalogs(
    session: AsyncSession, access: TenantAccess, handle: str, params: PageParams
) -> Page[Catalog]:
    server = await _server(session, access.tenant_id, handle)
    return await repository.list_catalogs(session, access.tenant_id, server.id, params)


async def get_catalog(
    session: AsyncSession, tenant_id: TenantId, handle: str, version: int
) -> Catalog:
    server = await _server(session, tenant_id, handle)
    catalog = await repository.get_version(session, tenant_id, server.id, version)
    if catalog is None:
        raise NotFound("catalog version not found")
    return catalog


async def get_latest_catalog(session: AsyncSession, tenant_id: TenantId, handle: str) -> Catalog:
    server = await _server(session, tenant_id, handle)
    catalog = await repository.latest(session, tenant_id, server.id)
    if catalog is None:
        raise NotFound("the server has no catalog yet; snapshot it first")
    return catalog


async def get_catalog_by_id(
    session: AsyncSession, tenant_id: TenantId, catalog_id: uuid.UUID
) -> Catalog:
    catalog = await repository.get_by_id(session, tenant_id, catalog_id)
    if catalog is None:
        raise NotFound("catalog not found")
    return catalog


async def diff_catalogs(
    session: AsyncSession,
    access: TenantAccess,
    handle: str,
    version: int | None,
    from_version: int,
) -> CatalogDiffRead:
    """The diff from ``from_version`` to ``version`` (None: the latest, as ``…/latest``)."""
    if version is None:
        new = await get_latest_catalog(session, access.tenant_id, handle)
        version = new.version
    else:
        new = await get_catalog(session, access.tenant_id, handle, version)
    old = await get_catalog(session, access.tenant_id, handle, from_version)
    diff = diff_tools(old.tools, new.tools)
    return CatalogDiffRead(
        from_=from_version,
        to=version,
        added=diff.added,
        removed=diff.removed,
        changed=[ChangedTool.model_validate(c) for c in diff.changed],
    )
