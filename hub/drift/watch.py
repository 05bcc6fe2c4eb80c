"""One probe of one server, and what it marks (DESIGN §10.6, §15 "Drift watch").

:meth:`DriftWatch.probe` re-discovers a server through the same path as discovery and catalog
snapshots (:func:`hub.discovery.service.run_discovery`: the egress fetcher, the pinned credential,
an OAuth token refreshed when due), with no transaction open, counted against the tenant's
``discovery`` rate limit. Then, in one short write transaction:

- a **complete** discovery stores the live per-tool hashes and Tool objects on the server's
  ``server_probes`` row (``ok``) and compares every catalog version a deployment pins with them
  (:func:`hub.drift.compare.drifted_tools`): each newly drifted tool is recorded as a
  ``catalog.drift`` audit event and counted in ``hub_drift_tools_total{kind}``; a tool whose live
  definition is back to its pin is cleared (audited too); the marks of versions no deployment
  pins any more are dropped;
- a **failed** or cut-short one (peer error, timeout, anything short of the whole list) records
  ``unknown`` with its reason and changes no mark.

The next probe is due after ``HUB_DRIFT_INTERVAL_S`` less up to 15 % jitter (so servers and
replicas spread out); after a failure, after a backoff doubling from 30 s up to the interval; when
the rate limit refuses, once it allows again.
"""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record
from hub.catalogs.canonical import tool_sha256
from hub.core import clock
from hub.core.db import Database
from hub.core.errors import HubError
from hub.core.metrics import Metrics
from hub.core.tenancy import TenantId
from hub.discovery.service import run_discovery
from hub.drift import repository
from hub.drift.compare import DriftRecord, drifted_tools
from hub.mcp import DiscoveryResult
from hub.models import Catalog, CatalogDrift, Server, ServerProbe
from hub.ratelimit import RateLimiter
from hub.servers import service as servers_service
from hub.upstream import UpstreamContext, resolve_target

__all__ = ["DriftWatch", "ProbeResult"]

log = logging.getLogger("hub.drift")

FIRST_BACKOFF_S = 30.0
JITTER = 0.15

ProbeStatus = Literal["ok", "unknown", "rate_limited", "gone"]


@dataclass(frozen=True)
class ProbeResult:
    """How a probe ended; ``live_hashes`` only after a complete discovery."""

    status: ProbeStatus
    reason: str | None = None
    live_hashes: dict[str, str] | None = None
    newly_drifted: int = 0


class DriftWatch:
    """The drift watch of one replica (a component): probes servers, marks drifted tools."""

    def __init__(
        self,
        ctx: UpstreamContext,
        metrics: Metrics,
        interval_s: float,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.ctx = ctx
        self.metrics = metrics
        self.interval_s = interval_s
        self.limiter = limiter

    # ------------------------------------------------------------------ scheduling
    def _next_ok(self) -> timedelta:
        jitter = random.uniform(1 - JITTER, 1.0)  # noqa: S311 (spreading load, not a secret)
        return timedelta(seconds=self.interval_s * jitter)

    def _next_failed(self, failures: int) -> timedelta:
        backoff = min(self.interval_s, FIRST_BACKOFF_S * 2 ** max(0, failures - 1))
        jitter = random.uniform(1 - JITTER, 1.0)  # noqa: S311
        return timedelta(seconds=backoff * jitter)

    # ------------------------------------------------------------------ one probe
    async def probe(self, db: Database, tenant_id: TenantId, server_id: uuid.UUID) -> ProbeResult:
        """Probe one server (no transaction may be open) and store what it found."""
        async with db.session(write=False) as read:
            server = await servers_service.get_server_by_id(read, tenant_id, server_id)
            if server is None or server.deleted_at is not None:
                return ProbeResult("gone")
            try:
                target = await resolve_target(
                    read, self.ctx, tenant_id, server.url, server.credential_id
                )
            except HubError as exc:
                return await self._failed(db, tenant_id, server, _reason(exc))
        if self.limiter is not None:
            decision = await self.limiter.check("discovery", str(tenant_id.value))
            if not decision.allowed:
                self.metrics.drift_probes.labels(outcome="rate_limited").inc()
                await self._postpone(db, tenant_id, server, decision.retry_after_s)
                return ProbeResult("rate_limited", "rate_limited")
        try:
            found = await run_discovery(self.ctx, tenant_id, target, server.era, db=db)
        except HubError as exc:  # failed or cut short: nothing is marked
            return await self._failed(db, tenant_id, server, _reason(exc))
        return await self._complete(db, tenant_id, server, found)

    async def relist(
        self, db: Database, tenant_id: TenantId, server_id: uuid.UUID
    ) -> dict[str, str] | None:
        """Probe now (an upstream ``-32020``): the live hashes, or None when incomplete (or when
        storing it failed, e.g. a replica probing the same server at the same moment)."""
        try:
            result = await self.probe(db, tenant_id, server_id)
        except Exception:
            log.exception("drift watch: the re-list after -32020 failed")
            return None
        return result.live_hashes

    async def record_unknown(
        self, db: Database, tenant_id: TenantId, server_id: uuid.UUID, reason: str
    ) -> None:
        """Record a probe that could not run at all (an unexpected error) as ``unknown``."""
        async with db.session(write=False) as read:
            server = await servers_service.get_server_by_id(read, tenant_id, server_id)
        if server is not None:
            await self._failed(db, tenant_id, server, reason)

    async def _row(self, session: AsyncSession, tenant_id: TenantId, server: Server) -> ServerProbe:
        row = await repository.get_probe(session, tenant_id, server.id, for_update=True)
        if row is None:
            row = ServerProbe(
                id=uuid.uuid4(),
                tenant_id=tenant_id.value,
                server_id=server.id,
                status="unknown",
                failures=0,
                next_probe_at=clock.now(),
            )
            session.add(row)
        return row

    async def _postpone(
        self, db: Database, tenant_id: TenantId, server: Server, seconds: float
    ) -> None:
        async with db.session(write=True) as session:
            row = await self._row(session, tenant_id, server)
            row.next_probe_at = clock.now() + timedelta(seconds=max(1.0, seconds))

    async def _failed(
        self, db: Database, tenant_id: TenantId, server: Server, reason: str
    ) -> ProbeResult:
        now = clock.now()
        self.metrics.drift_probes.labels(outcome="unknown").inc()
        async with db.session(write=True) as session:
            row = await self._row(session, tenant_id, server)
            row.status, row.reason, row.checked_at = "unknown", reason, now
            row.failures = (row.failures or 0) + 1
            row.next_probe_at = now + self._next_failed(row.failures)
        log.info(
            "drift watch: probe of a server did not complete (%s); nothing marked",
            reason,
            extra={"tenant_id": str(tenant_id.value), "server_id": str(server.id)},
        )
        return ProbeResult("unknown", reason)

    async def _complete(
        self, db: Database, tenant_id: TenantId, server: Server, found: DiscoveryResult
    ) -> ProbeResult:
        now = clock.now()
        live = [dict(t) for t in found.tools]
        hashes = {str(t["name"]): tool_sha256(t) for t in live}
        newly = 0
        self.metrics.drift_probes.labels(outcome="ok").inc()
        async with db.session(write=True) as session:
            row = await self._row(session, tenant_id, server)
            row.status, row.reason, row.failures = "ok", None, 0
            row.checked_at = row.complete_at = now
            row.next_probe_at = now + self._next_ok()
            row.live_hashes, row.live_tools = hashes, live
            catalogs = await repository.pinned_catalogs(session, tenant_id, server.id)
            await repository.forget_drift(session, tenant_id, server.id, [c.id for c in catalogs])
            for catalog in catalogs:
                marks = drifted_tools(catalog.tools, catalog.tool_hashes, live)
                newly += await self._mark(session, tenant_id, server, catalog, marks)
        return ProbeResult("ok", live_hashes=hashes, newly_drifted=newly)

    async def _mark(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        server: Server,
        catalog: Catalog,
        marks: dict[str, DriftRecord],
    ) -> int:
        """Store the catalog version's marks; audit what changed; how many tools newly drifted."""
        now = clock.now()
        existing = await repository.catalog_drift(session, tenant_id, catalog.id)
        before: dict[str, DriftRecord] = dict(existing.tools) if existing is not None else {}
        fresh = {
            name: {**mark, "detected_at": now.isoformat()}
            for name, mark in marks.items()
            if before.get(name, {}).get("to_sha256", "-") != mark["to_sha256"]
            or before.get(name, {}).get("kind") != mark["kind"]
        }
        cleared = sorted(before.keys() - marks.keys())
        if not fresh and not cleared:
            return 0
        merged = {name: before[name] for name in marks if name not in fresh}
        merged.update(fresh)
        if existing is None and merged:
            session.add(
                CatalogDrift(
                    id=uuid.uuid4(),
                    tenant_id=tenant_id.value,
                    catalog_id=catalog.id,
                    server_id=server.id,
                    tools=merged,
                    updated_at=now,
                )
            )
        elif existing is not None and merged:
            existing.tools, existing.updated_at = merged, now
        elif existing is not None:
            await session.delete(existing)
        await session.flush()
        deployments = await repository.deployments_pinning(session, tenant_id, catalog.id)
        for name, mark in sorted(fresh.items()):
            self.metrics.drift_tools.labels(kind=mark["kind"]).inc()
            await self._audit(session, tenant_id, server, catalog, name, deployments, mark)
        for name in cleared:
            await self._audit(session, tenant_id, server, catalog, name, deployments, None)
        return len(fresh)

    async def _audit(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        server: Server,
        catalog: Catalog,
        tool: str,
        deployments: list[str],
        mark: DriftRecord | None,
    ) -> None:
        details = {
            "server": server.handle,
            "catalog_version": catalog.version,
            "tool": tool,
            "deployments": deployments,
            "state": "drifted" if mark is not None else "cleared",
        }
        if mark is not None:
            details.update(
                kind=mark["kind"],
                from_sha256=mark["from_sha256"],
                to_sha256=mark["to_sha256"],
                changed=mark["changed"],
            )
            if "renamed_to" in mark:
                details["renamed_to"] = mark["renamed_to"]
        await record(
            session,
            tenant_id=tenant_id,
            actor_id=None,
            action=Action.CATALOG_DRIFT,
            resource=f"catalog:{server.handle}",
            request_id=None,
            details=details,
        )


def _reason(exc: HubError) -> str:
    reason = exc.extra.get("reason")
    return reason if isinstance(reason, str) else exc.code
