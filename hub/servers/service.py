"""Server rules: handles are immutable and never silently reused; URL and credential are checked
as discovery checks them; a server a deployment references cannot be deleted or moved."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.errors import Conflict, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.paths import HANDLE_RE
from hub.core.tenancy import TenantId
from hub.models import Server
from hub.servers import repository
from hub.servers.schemas import ServerCreate, ServerRead, ServerUpdate
from hub.upstream import UpstreamContext, resolve_target

__all__ = [
    "READ_AHEAD",
    "bind_credential",
    "create_server",
    "delete_server",
    "get_server",
    "get_server_by_id",
    "list_servers",
    "read_server",
    "remember_era",
    "require_credential_use",
    "server_using_credential",
    "servers_by_ids",
    "update_server",
]


async def require_credential_use(access: TenantAccess, credential_id: uuid.UUID | None) -> None:
    """A credential a request names or uses needs ``credential:<c>`` : ``use`` (DESIGN §8)."""
    if credential_id is not None:
        await access.require(f"credential:{credential_id}", "use")


async def create_server(
    session: AsyncSession, ctx: UpstreamContext, access: TenantAccess, data: ServerCreate
) -> Server:
    await require_credential_use(access, data.credential_id)
    target = await resolve_target(session, ctx, access.tenant_id, data.url, data.credential_id)
    if await repository.handle_ever_used(session, access.tenant_id, data.handle):
        raise Conflict("this handle is taken (handles of deleted servers are not reused)")
    now = clock.now()
    server = Server(
        id=uuid.uuid4(),
        tenant_id=access.tenant_id.value,
        handle=data.handle,
        url=target.url,
        credential_id=data.credential_id,
        created_at=now,
        updated_at=now,
    )
    session.add(server)
    await session.flush()
    await record_for(
        session,
        access,
        Action.SERVER_CREATE,
        f"server:{server.handle}",
        {"server_id": str(server.id), "credential_id": str(data.credential_id or "")},
    )
    return server


#: :func:`read_server`'s read, which the route has sent with the caller's key on PostgreSQL
READ_AHEAD = repository.ROW_BY_HANDLE_AHEAD


async def read_server(session: AsyncSession, tenant_id: TenantId, handle: str) -> ServerRead:
    """The server ``handle`` as shown to a client (no ORM object is built: a read on every
    request of ``GET …/servers/{handle}``); 404 when absent or deleted."""
    if not HANDLE_RE.fullmatch(handle):  # not a handle at all: reads as absent, no query
        raise NotFound("server not found")
    row = await repository.row_by_handle(session, tenant_id, handle)
    if row is None:
        raise NotFound("server not found")
    return ServerRead.model_validate(row)


async def get_server(
    session: AsyncSession, tenant_id: TenantId, handle: str, *, for_update: bool = False
) -> Server:
    if not HANDLE_RE.fullmatch(handle):  # not a handle at all: reads as absent, no query
        raise NotFound("server not found")
    server = await repository.get_by_handle(session, tenant_id, handle, for_update=for_update)
    if server is None:
        raise NotFound("server not found")
    return server


async def servers_by_ids(
    session: AsyncSession, tenant_id: TenantId, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Server]:
    return {s.id: s for s in await repository.get_by_ids(session, tenant_id, list(set(ids)))}


async def list_servers(
    session: AsyncSession, access: TenantAccess, params: PageParams
) -> Page[Server]:
    return await repository.list_servers(session, access.tenant_id, params)


async def update_server(
    session: AsyncSession,
    ctx: UpstreamContext,
    access: TenantAccess,
    handle: str,
    data: ServerUpdate,
) -> Server:
    server = await get_server(session, access.tenant_id, handle, for_update=True)
    changes = data.model_dump(exclude_unset=True)
    url = changes.get("url") or server.url
    credential_id = changes.get("credential_id", server.credential_id)
    if "credential_id" in changes:
        await require_credential_use(access, credential_id)
    target = await resolve_target(session, ctx, access.tenant_id, url, credential_id)
    if target.url != server.url:
        await _not_deployed(session, access, server, "its URL cannot change")
    server.url = target.url
    server.credential_id = credential_id
    server.updated_at = clock.now()
    await session.flush()
    await record_for(
        session,
        access,
        Action.SERVER_UPDATE,
        f"server:{server.handle}",
        {"fields": sorted(changes)},
    )
    return server


#: how many of the deployments that hold a server a refusal names
NAMED_DEPLOYMENTS = 5


async def _not_deployed(
    session: AsyncSession, access: TenantAccess, server: Server, consequence: str
) -> None:
    """Conflict, naming the deployments that hold ``server`` and how to take it out of them."""
    found = await repository.referencing_deployments(
        session, access.tenant_id, server.id, NAMED_DEPLOYMENTS
    )
    if not found:
        return
    named = ", ".join(str(d) for d in found[:NAMED_DEPLOYMENTS])
    more = " and more" if len(found) > NAMED_DEPLOYMENTS else ""
    raise Conflict(
        f"deployments hold this server ({named}{more}); {consequence} until it is taken out "
        f"of them (PATCH their entries, or hub deployments update D --remove-server "
        f"{server.handle})"
    )


async def delete_server(session: AsyncSession, access: TenantAccess, handle: str) -> None:
    server = await get_server(session, access.tenant_id, handle, for_update=True)
    await _not_deployed(session, access, server, "it cannot be deleted")
    server.deleted_at = clock.now()
    await session.flush()
    await record_for(
        session,
        access,
        Action.SERVER_DELETE,
        f"server:{server.handle}",
        {"server_id": str(server.id)},
    )


async def server_using_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Server | None:
    """A live server of the tenant whose credential is ``credential_id`` (the first registered)."""
    return await repository.get_by_credential(session, tenant_id, credential_id)


async def get_server_by_id(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID
) -> Server | None:
    return await repository.get_by_id(session, tenant_id, server_id)


async def bind_credential(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID, credential_id: uuid.UUID
) -> Server | None:
    """Point a live server at ``credential_id`` (an OAuth connection made for it); ``None`` when
    the server is gone. The URL does not change, so deployments keep referencing it."""
    server = await repository.get_by_id(session, tenant_id, server_id, for_update=True)
    if server is None or server.deleted_at is not None:
        return None
    if server.credential_id != credential_id:
        server.credential_id = credential_id
        server.updated_at = clock.now()
        await session.flush()
    return server


async def remember_era(
    session: AsyncSession, server: Server, era: str, protocol_version: str
) -> None:
    if server.era != era or server.protocol_version != protocol_version:
        server.era = era
        server.protocol_version = protocol_version
        await session.flush()
