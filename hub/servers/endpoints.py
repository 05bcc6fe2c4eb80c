"""Tenant routes for servers (DESIGN §4, §12)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Response

from hub.auth.caller import TenantAccess
from hub.auth.deps import authorize
from hub.core.deps import SessionDep
from hub.core.pagination import PageParamsDep
from hub.discovery.deps import DiscoveryContextDep
from hub.servers import service
from hub.servers.schemas import ServerCreate, ServerRead, ServerUpdate

router = APIRouter(prefix="/tenants/{t}/servers", tags=["servers"])


@router.post("", status_code=201, name="server.create")
async def create_server(
    body: ServerCreate,
    session: SessionDep,
    ctx: DiscoveryContextDep,
    access: Annotated[TenantAccess, authorize("server", "write")],
) -> dict[str, Any]:
    """Register a remote MCP server under a handle (immutable, never reused)."""
    server = await service.create_server(session, ctx, access, body)
    return {"data": ServerRead.model_validate(server)}


@router.get("", name="server.list")
async def list_servers(
    session: SessionDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("server", "read")],
) -> dict[str, Any]:
    """List registered servers."""
    result = await service.list_servers(session, access, page)
    return {
        "data": [ServerRead.model_validate(s) for s in result.items],
        "next_cursor": result.next_cursor,
    }


@router.get("/{handle}", name="server.get")
async def get_server(
    handle: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("server", "read", item="handle")],
) -> dict[str, Any]:
    """Get a server by handle, with its remembered protocol era."""
    server = await service.get_server(session, access.tenant_id, handle)
    return {"data": ServerRead.model_validate(server)}


@router.patch("/{handle}", name="server.update")
async def update_server(
    handle: str,
    body: ServerUpdate,
    session: SessionDep,
    ctx: DiscoveryContextDep,
    access: Annotated[TenantAccess, authorize("server", "write", item="handle")],
) -> dict[str, Any]:
    """Change a server's URL or credential (the handle never changes)."""
    server = await service.update_server(session, ctx, access, handle, body)
    return {"data": ServerRead.model_validate(server)}


@router.delete("/{handle}", status_code=204, name="server.delete")
async def delete_server(
    handle: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("server", "write", item="handle")],
) -> Response:
    """Delete a server (409 while a deployment references it); its handle stays reserved."""
    await service.delete_server(session, access, handle)
    return Response(status_code=204)
