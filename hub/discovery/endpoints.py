"""``POST /tenants/{t}/mcp/discover`` (DESIGN §5)."""

from __future__ import annotations

from typing import Annotated

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import DatabaseDep, SessionDep
from hub.core.openapi import DISCOVERY_FAILED
from hub.core.schemas import Envelope
from hub.discovery import service
from hub.discovery.schemas import DiscoverRequest, DiscoverResult
from hub.upstream.deps import UpstreamDep

router = rest_router(prefix="/tenants/{t}/mcp", tags=["discovery"])


@router.post("/discover", name="mcp.discover", responses={422: DISCOVERY_FAILED})
async def discover(
    body: DiscoverRequest,
    db: DatabaseDep,
    session: SessionDep,
    ctx: UpstreamDep,
    access: Annotated[TenantAccess, authorize("credential", "read", limit="discovery")],
) -> Envelope[DiscoverResult]:
    """Discover a remote MCP server's tools through the pinned fetcher."""
    return Envelope(data=await service.discover(db, session, ctx, access, body))
