"""Discovery rules (DESIGN §5): check the target, pin, fetch with the MCP client, remember, audit.

Order: static URL checks (400) → the credential, if any, must be usable (404, all cases alike) →
the pin: the origin of the credential's ``api_base_url``, or the URL's own origin with no credential
or the keyless sentinel; a URL outside it is 422 ``origin_refused`` before any I/O → the whole
discovery under one deadline through the pinned fetcher, with no database transaction open → the era
that worked and the audit row, written afterwards in the request's short transaction. Failures are
422 with a reason and the hub's own message. Server registration and catalog snapshots reuse
:func:`resolve_target` and :func:`run_discovery`, so they validate and fetch exactly the same way.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.core.errors import BadRequest
from hub.core.metrics import Metrics
from hub.core.tenancy import TenantId
from hub.credentials.pinning import ensure_within_pin, pin_origin
from hub.credentials.vault import decrypt_for_use, load_usable_credential
from hub.discovery import repository
from hub.discovery.failures import as_discovery_failure
from hub.discovery.schemas import DiscoverRequest, DiscoverResult, DroppedTool
from hub.egress import EgressConfig, EgressError, UrlRejected, origin_of, validate_url
from hub.mcp import DiscoveryResult, Era, McpClient, McpError
from hub.models import Credential

__all__ = ["DiscoveryContext", "Target", "discover", "resolve_target", "run_discovery"]


@dataclass(frozen=True)
class DiscoveryContext:
    client: McpClient
    keyring: Keyring
    egress: EgressConfig
    deadline_s: float
    metrics: Metrics


@dataclass(frozen=True)
class Target:
    """A checked upstream: normalised URL, the origin requests are pinned to, the credential."""

    url: str
    pin: str
    credential: Credential | None


async def resolve_target(
    session: AsyncSession,
    ctx: DiscoveryContext,
    tenant_id: TenantId,
    url: str,
    credential_id: uuid.UUID | None,
) -> Target:
    """400 for a bad URL, 404 for an unusable credential, 422 for a URL off the credential's pin."""
    try:
        checked = validate_url(url, ctx.egress)
    except UrlRejected:
        raise BadRequest(
            "url must be absolute https (http only to loopback when allowed)"
        ) from None
    credential = None
    if credential_id is not None:
        credential = await load_usable_credential(session, tenant_id, credential_id)
    pin = pin_origin(ctx.keyring, credential, checked)
    ensure_within_pin(ctx.egress, pin, checked)
    return Target(url=checked, pin=pin, credential=credential)


async def run_discovery(
    ctx: DiscoveryContext, tenant_id: TenantId, target: Target, era_hint: str | None
) -> DiscoveryResult:
    """Discover ``target`` (no transaction may be open); failures become the 422 of DESIGN §5."""
    hint: Era | None = "modern" if era_hint == "modern" else "legacy" if era_hint else None

    async def run(bearer: str | None) -> DiscoveryResult:
        return await ctx.client.discover(
            target.url,
            pin=target.pin,
            bearer=bearer,
            deadline_s=ctx.deadline_s,
            era_hint=hint,
            scope=str(tenant_id),  # one tenant cannot hold every slot of a shared origin
        )

    started = time.perf_counter()
    try:
        if target.credential is None:
            result = await run(None)
        else:
            result = await decrypt_for_use(ctx.keyring, target.credential, run)
    except (EgressError, McpError) as exc:
        failure = as_discovery_failure(exc)
        ctx.metrics.discoveries.labels(outcome=str(failure.extra.get("reason", "invalid"))).inc()
        raise failure from None
    finally:
        ctx.metrics.upstream.labels(operation="discovery").observe(time.perf_counter() - started)
    ctx.metrics.discoveries.labels(outcome="ok").inc()
    return result


async def discover(
    db: Database,
    session: AsyncSession,
    ctx: DiscoveryContext,
    access: TenantAccess,
    data: DiscoverRequest,
) -> DiscoverResult:
    async with db.session(write=False) as read:
        target = await resolve_target(read, ctx, access.tenant_id, data.url, data.credential_id)
        url_origin = origin_of(target.url)
        remembered = await repository.get_era(read, access.tenant_id, url_origin)
    result = await run_discovery(
        ctx, access.tenant_id, target, remembered.era if remembered else None
    )

    await repository.remember_era(
        session, access.tenant_id, url_origin, result.era, result.protocol_version
    )
    await record_for(
        session,
        access,
        "mcp.discover",
        f"mcp:{url_origin}",
        {
            "origin": url_origin,
            "path": urlsplit(target.url).path,  # never the query: it may carry a secret
            "credential_id": str(data.credential_id) if data.credential_id else None,
            "era": result.era,
            "protocol_version": result.protocol_version,
            "tools": len(result.tools),
            "dropped_tools": len(result.dropped_tools),
        },
    )
    return DiscoverResult(
        server_info=result.server_info,
        protocol_version=result.protocol_version,
        capabilities=result.capabilities,
        instructions=result.instructions,
        tools=result.tools,
        dropped_tools=[DroppedTool(**d) for d in result.dropped_tools],
    )
