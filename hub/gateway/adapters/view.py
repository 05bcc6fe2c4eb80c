"""A deployment as the in-hub gateway sees it: its :class:`DeploymentView`, built per request.

Each request reads the deployment, its entries and their servers (one query of plain columns:
URLs, credentials and options can change at any moment, and a change must apply on the next call
on every replica). Catalogs are immutable, so their tools are kept in memory by id; and the view
itself — wire names, per-tool hashes, options and each tool's ``drifted`` flag and diff (the drift
marks of the pinned version, DESIGN §10.6) — is kept by a signature of everything it is computed
from (the marks by their ``drift_at``), so an unchanged deployment costs no recomputation.

What is kept is bounded by weight, not by count (``HUB_GATEWAY_CACHE_BYTES``, half for catalogs
and half for views): a catalog weighs the bytes of its tools' JSON, and a view the weight of the
catalogs it holds on to. A count bound let 512 catalogs of 300 ordinary tools hold about 600 MB,
past the chart's memory limit, and a catalog may be 16 MiB of JSON. The least recently used go
first (``cachetools.LRUCache``); an entry over its tier's budget is built and used, never kept.
Agents taking turns over more deployments than fit form a cycle an LRU keeps nothing of; each
call then reads its catalogs again (one query an entry), slower but bounded. Random replacement
was tried for that and kept too little to pay (3% of a cycle of six where two fit, simulated),
while it drops a hot entry as readily as a cold one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.catalogs import service as catalogs_service
from hub.core.tenancy import TenantId
from hub.core.weighed import Weighed, find, keep, weighed
from hub.deployments import service as deployments_service
from hub.deployments.wirenames import assign_wire_names, grant_key
from hub.gateway.engine.model import DeploymentView, ServerEntry, ToolEntry

__all__ = ["ViewLoader"]


#: what a tool costs beyond its JSON: its hash here, its entry and wire name in a view
_PER_TOOL = 256


@dataclass(frozen=True)
class _Catalog:
    version: int
    tools: tuple[dict[str, Any], ...]
    hashes: dict[str, str]
    weight: int  # the bytes of its tools' JSON and _PER_TOOL a tool (Python holds ~4x as much)


class ViewLoader:
    """Loads views; one per replica (its caches are per process, never shared state)."""

    def __init__(
        self, budget: int = 32 * 1024 * 1024, on_miss: Callable[[str, int], None] | None = None
    ) -> None:
        self.budget = budget
        self._on_miss = on_miss  # (tier, bytes that tier keeps now), for the metrics
        #: catalog id -> (_Catalog, weight); view signature -> (DeploymentView, weight)
        self._catalogs: Weighed[uuid.UUID, _Catalog] = weighed(budget // 2)
        self._views: Weighed[Any, DeploymentView] = weighed(budget // 2)

    @property
    def kept_bytes(self) -> int:
        """The weight kept now, both tiers (what ``HUB_GATEWAY_CACHE_BYTES`` bounds)."""
        return int(self._catalogs.currsize + self._views.currsize)

    async def _catalog(
        self, session: AsyncSession, tenant_id: TenantId, catalog_id: uuid.UUID
    ) -> _Catalog:
        found = find(self._catalogs, catalog_id)
        if found is not None:
            return found
        row = await catalogs_service.get_catalog_by_id(session, tenant_id, catalog_id)
        tools = tuple(row.tools)
        size = len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))
        catalog = _Catalog(row.version, tools, dict(row.tool_hashes), size + _PER_TOOL * len(tools))
        keep(self._catalogs, catalog_id, catalog, catalog.weight)
        if self._on_miss is not None:
            self._on_miss("catalogs", int(self._catalogs.currsize))
        return catalog

    async def load(
        self, session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
    ) -> DeploymentView | None:
        found = await deployments_service.view_rows(session, tenant_id, deployment_id)
        return await self.from_rows(session, tenant_id, deployment_id, found)

    async def from_rows(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        deployment_id: uuid.UUID,
        found: Sequence[Any],
    ) -> DeploymentView | None:
        """The view of rows read already (as :func:`~hub.deployments.service.view_rows` gives
        them, or the gateway's one read of key and deployment): None when there are none."""
        if not found:
            return None
        agent_id = found[0].agent_id
        rows = [(r, r) for r in found if r.catalog_id is not None]  # (entry, server) columns
        signature = deployments_service.view_signature(deployment_id, found)
        kept = find(self._views, signature)
        if kept is not None:
            return kept
        catalogs = [await self._catalog(session, tenant_id, e.catalog_id) for e, _s in rows]
        view = _build(tenant_id, deployment_id, agent_id, rows, catalogs)
        keep(self._views, signature, view, _view_weight(found, catalogs))
        if self._on_miss is not None:
            self._on_miss("views", int(self._views.currsize))
        return view


def _view_weight(found: Sequence[Any], catalogs: list[_Catalog]) -> int:
    """The catalogs a view holds, and its drift marks twice: the view's diffs, and the marks'
    JSON in the signature it is kept under (a mark carries a tool's definition before and after)."""
    marks = sum(len(json.dumps(r.drift)) for r in found if r.drift)
    return sum(c.weight for c in catalogs) + 2 * marks


def _approval_drift(mark: dict[str, Any]) -> dict[str, Any]:
    """What an approval of a drifted tool carries (DESIGN §15): the hashes, the changed fields,
    and the diff itself (kind, before and after, the new name of a renamed tool)."""
    keys = ("kind", "from_sha256", "to_sha256", "changed", "before", "after", "renamed_to")
    return {k: mark[k] for k in keys if k in mark}


def _build(
    tenant_id: TenantId,
    deployment_id: uuid.UUID,
    agent_id: uuid.UUID,
    rows: list[tuple[Any, Any]],
    catalogs: list[_Catalog],
) -> DeploymentView:
    pairs = list(zip(rows, catalogs, strict=True))
    naming = sorted(pairs, key=lambda p: (p[0][1].created_at, p[0][1].handle))
    wire = assign_wire_names(
        (s.handle, [str(t["name"]) for t in c.tools], e.tool_names == "plain")
        for (e, s), c in naming
    )
    servers: dict[str, ServerEntry] = {}
    tools: dict[str, ToolEntry] = {}
    for (entry, server), catalog in pairs:
        servers[server.handle] = ServerEntry(
            handle=server.handle,
            server_id=server.server_id,
            url=server.url,
            credential_id=server.credential_id,
            era=server.era,
            catalog_version=catalog.version,
            mode="direct" if entry.mode == "direct" else "relay",
        )
        listed = set(entry.allow_without_ask)
        marks: dict[str, Any] = entry.drift or {}
        for tool in catalog.tools:
            name = str(tool["name"])
            drift = marks.get(name)
            wire_name = wire[(server.handle, name)]
            tools[wire_name] = ToolEntry(
                wire_name=wire_name,
                handle=server.handle,
                name=name,
                grant_key=grant_key(server.handle, name),
                tool=tool,
                sha256=catalog.hashes[name],
                catalog_version=catalog.version,
                listed_without_ask=name in listed,
                arguments="schema" if entry.arguments == "schema" else "strict",
                drifted=drift is not None,
                drift=_approval_drift(drift) if drift is not None else None,
            )
    return DeploymentView(
        tenant_id=tenant_id.value,
        deployment_id=deployment_id,
        agent_id=agent_id,
        servers=servers,
        tools=tools,
    )
