"""Tenant routes for servers (DESIGN §4, §12)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep
from hub.core.openapi import UPSTREAM_REFUSED
from hub.core.pagination import PageParamsDep
from hub.core.readahead import read_ahead
from hub.core.schemas import Envelope, ListEnvelope
from hub.servers import service
from hub.servers.schemas import ServerCreate, ServerRead, ServerUpdate
from hub.upstream.deps import UpstreamDep

router = rest_router(prefix="/tenants/{t}/servers", tags=["servers"])


@router.post("", status_code=201, name="server.create", responses={422: UPSTREAM_REFUSED})
async def create_server(
    body: ServerCreate,
    session: SessionDep,
    ctx: UpstreamDep,
    access: Annotated[TenantAccess, authorize("server", "write")],
) -> Envelope[ServerRead]:
    """Register a remote MCP server under a handle (immutable, never reused)."""
    server = await service.create_server(session, ctx, access, body)
    return Envelope(data=ServerRead.model_validate(server))


@router.get("", name="server.list")
async def list_servers(
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("server", "read")],
) -> ListEnvelope[ServerRead]:
    """List registered servers."""
    return ListEnvelope.of(await service.list_servers(session, access, page), ServerRead)


@router.get("/{handle}", name="server.get")
@read_ahead(service.READ_AHEAD)
async def get_server(
    handle: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("server", "read", item="handle")],
) -> Envelope[ServerRead]:
    """Get a server by handle, with its remembered protocol era."""
    return Envelope(data=await service.read_server(session, access.tenant_id, handle))


@router.patch("/{handle}", name="server.update", responses={422: UPSTREAM_REFUSED})
async def update_server(
    handle: str,
    body: ServerUpdate,
    session: SessionDep,
    ctx: UpstreamDep,
    access: Annotated[TenantAccess, authorize("server", "write", item="handle")],
) -> Envelope[ServerRead]:
    """Change a server's URL or credential (the handle never changes)."""
    server = await service.update_server(session, ctx, access, handle, body)
    return Envelope(data=ServerRead.model_validate(server))


@router.delete("/{handle}", status_code=204, name="server.delete")
async def delete_server(
    handle: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("server", "write", item="handle")],
) -> Response:
    """Delete a server (409 while a deployment references it); its handle stays reserved."""
    await service.delete_server(session, access, handle)
    return Response(status_code=204)
