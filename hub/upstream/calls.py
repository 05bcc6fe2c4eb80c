"""Running one MCP operation against a resolved :class:`~hub.upstream.target.Target`.

The credential is decrypted only for the call that sends it, after
:func:`~hub.upstream.tokens.with_fresh_credential` made sure an OAuth token is fresh (and after
an upstream 401, refreshed once and retried); no database transaction may be open while these
run. Failures propagate as the fetcher's :class:`~hub.egress.EgressError`, the client's
:class:`~hub.mcp.McpError`, or :class:`~hub.upstream.tokens.TokenUnavailable` /
:class:`~hub.upstream.tokens.InsufficientScope`; each caller maps them to its own answer
(discovery's 422, the gateway's ``upstream_failed``).

``db`` is what an OAuth refresh writes to; ``None`` sends the credential as stored (no refresh).

A discovery is redacted before it leaves :func:`discover`, as a tool result is before it leaves
the gateway's upstream port: an upstream that echoes the bearer into its ``serverInfo``, its
instructions or a tool's description or schema would otherwise have it stored in the catalog,
served by the catalog and bundle routes and the console, and listed to every agent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace

from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.egress import ConnectFailed, ConnectionLost
from hub.mcp import CallResult, DiscoveryResult, era_from_hint
from hub.mcp.redaction import Redactor
from hub.mcp.wire import Json
from hub.upstream.context import UpstreamContext
from hub.upstream.target import Target
from hub.upstream.tokens import with_fresh_credential

__all__ = ["call_tool", "discover"]


async def discover(
    ctx: UpstreamContext,
    tenant_id: TenantId,
    target: Target,
    era_hint: str | None,
    *,
    db: Database | None = None,
) -> DiscoveryResult:
    """Discover ``target`` under the discovery deadline (timed in the upstream metric)."""
    hint = era_from_hint(era_hint)

    async def run(bearer: str | None) -> DiscoveryResult:
        found = await ctx.client.discover(
            target.url,
            pin=target.pin,
            bearer=bearer,
            deadline_s=ctx.deadline_s,
            era_hint=hint,
            scope=str(tenant_id),  # one tenant cannot hold every slot of a shared origin
        )
        return _redacted(found, bearer) if bearer else found

    started = time.perf_counter()
    try:
        return await with_fresh_credential(ctx, db, tenant_id, target, run)
    except ConnectionLost:
        # a discovery only reads: no outcome is in doubt when its connection breaks, and its
        # reasons (hub.discovery.reasons) call that a connection the hub could not use
        raise ConnectFailed() from None
    finally:
        ctx.metrics.upstream.labels(operation="discovery").observe(time.perf_counter() - started)


def _redacted(found: DiscoveryResult, bearer: str) -> DiscoveryResult:
    """``found`` with every form of ``bearer`` replaced, wherever the server wrote it."""
    redactor = Redactor([bearer])
    instructions = found.instructions
    return replace(
        found,
        server_info=redactor.value(found.server_info),
        capabilities=redactor.value(found.capabilities),
        instructions=None if instructions is None else redactor.text(instructions),
        tools=redactor.value(found.tools),
        dropped_tools=redactor.value(found.dropped_tools),
    )


async def call_tool(
    ctx: UpstreamContext,
    tenant_id: TenantId,
    target: Target,
    name: str,
    arguments: Mapping[str, Json],
    *,
    tool: Mapping[str, Json] | None,
    era_hint: str | None,
    db: Database | None = None,
) -> CallResult:
    """One ``tools/call`` on ``target`` under the tool-call deadline.

    With ``db``, an OAuth credential is refreshed when due and once after an upstream 401, and
    the call retried once (a 401 means the server ran nothing)."""
    hint = era_from_hint(era_hint)

    async def run(bearer: str | None) -> CallResult:
        return await ctx.client.call_tool(
            target.url,
            name,
            arguments,
            pin=target.pin,
            bearer=bearer,
            deadline_s=ctx.call_deadline_s,
            tool=tool,
            era_hint=hint,
            scope=str(tenant_id),
        )

    started = time.perf_counter()
    try:
        return await with_fresh_credential(ctx, db, tenant_id, target, run)
    finally:
        ctx.metrics.upstream.labels(operation="tool_call").observe(time.perf_counter() - started)
