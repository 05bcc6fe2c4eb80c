"""Discovery rules (DESIGN §5): resolve the target, fetch with the MCP client, remember, audit.

The target is resolved by :func:`hub.upstream.resolve_target` (400 / 404 / 422 before any I/O); the
whole discovery runs under one deadline through the pinned fetcher, with no database transaction
open; the era that worked and the audit row are written afterwards in the request's short
transaction. Failures are 422 with a reason and the hub's own message
(:mod:`hub.discovery.reasons`).
Catalog snapshots reuse :func:`run_discovery`, so they fail exactly the same way.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.credentials.vault import is_keyless
from hub.discovery import repository
from hub.discovery.reasons import as_discovery_failure
from hub.discovery.schemas import DiscoverRequest, DiscoverResult, DroppedTool
from hub.egress import EgressError, origin_of
from hub.mcp import DiscoveryResult, McpError
from hub.upstream import (
    InsufficientScope,
    Target,
    TokenUnavailable,
    UpstreamContext,
    resolve_target,
)
from hub.upstream import discover as discover_upstream

__all__ = ["discover", "run_discovery"]


async def run_discovery(
    ctx: UpstreamContext,
    tenant_id: TenantId,
    target: Target,
    era_hint: str | None,
    *,
    db: Database | None = None,
) -> DiscoveryResult:
    """Discover ``target`` (no transaction may be open); failures become the 422 of DESIGN §5.

    With ``db`` an OAuth credential is refreshed when due (and once after a 401)."""
    try:
        result = await discover_upstream(ctx, tenant_id, target, era_hint, db=db)
    except (EgressError, McpError, TokenUnavailable, InsufficientScope) as exc:
        sent = target.credential is not None and not is_keyless(ctx.keyring, target.credential)
        failure = as_discovery_failure(exc, credential_sent=sent)
        ctx.metrics.discoveries.labels(outcome=str(failure.extra.get("reason", "invalid"))).inc()
        raise failure from None
    ctx.metrics.discoveries.labels(outcome="ok").inc()
    return result


async def discover(
    db: Database,
    session: AsyncSession,
    ctx: UpstreamContext,
    access: TenantAccess,
    data: DiscoverRequest,
) -> DiscoverResult:
    if data.credential_id is not None:  # an object named in a body is authorised (DESIGN §8)
        await access.require(f"credential:{data.credential_id}", "use")
    async with db.session(write=False) as read:
        target = await resolve_target(read, ctx, access.tenant_id, data.url, data.credential_id)
        url_origin = origin_of(target.url)
        remembered = await repository.get_era(read, access.tenant_id, url_origin)
    result = await run_discovery(
        ctx, access.tenant_id, target, remembered.era if remembered else None, db=db
    )

    await repository.remember_era(
        session, access.tenant_id, url_origin, result.era, result.protocol_version
    )
    await record_for(
        session,
        access,
        Action.MCP_DISCOVER,
        f"mcp:{url_origin}",
        {
            "origin": url_origin,
            "path": urlsplit(target.url).path,  # never the query: it may carry a secret
            "credential_id": str(data.credential_id) if data.credential_id else None,
            "era": result.era,
            "protocol_version": result.protocol_version,
            "tools": len(result.tools),
            "dropped_tools": result.dropped_total,
        },
    )
    return DiscoverResult(
        server_info=result.server_info,
        protocol_version=result.protocol_version,
        capabilities=result.capabilities,
        instructions=result.instructions,
        tools=result.tools,
        dropped_tools=[DroppedTool(**d) for d in result.dropped_tools],
        dropped_tools_total=result.dropped_total,
    )
