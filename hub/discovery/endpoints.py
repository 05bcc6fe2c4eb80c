"""``POST /tenants/{t}/mcp/discover`` (DESIGN §5)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from hub.auth.caller import TenantAccess
from hub.auth.deps import authorize
from hub.core.deps import DatabaseDep, SessionDep
from hub.discovery import service
from hub.discovery.deps import DiscoveryContextDep
from hub.discovery.schemas import DiscoverRequest

router = APIRouter(prefix="/tenants/{t}/mcp", tags=["discovery"])


_FAILED = {
    "description": "Discovery failed (reason code, the hub's own message)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
}


@router.post("/discover", name="mcp.discover", responses={422: _FAILED})
async def discover(
    body: DiscoverRequest,
    db: DatabaseDep,
    session: SessionDep,
    ctx: DiscoveryContextDep,
    access: Annotated[TenantAccess, authorize("credential", "read")],
) -> dict[str, Any]:
    """Discover a remote MCP server's tools through the pinned fetcher."""
    result = await service.discover(db, session, ctx, access, body)
    return {"data": result}
