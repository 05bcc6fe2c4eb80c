"""The deployments pages: each deployment, and each of its tools with the agent's effective
decision and its reasons (DESIGN §10.1, §14) — the answer of ``grants/check`` with a
``deployment_id``, through the grants service — and each tool's drift state (DESIGN §10.6): what
the drift watch found changed, gone or renamed since the version was pinned."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from starlette.responses import Response

from hub.catalogs.schemas import CatalogRead
from hub.console.routing import console_router
from hub.console.web import TenantConsole, TenantConsoleDep, render
from hub.core.pagination import PageParams
from hub.core.paths import parse_id
from hub.deployments import service
from hub.deployments.schemas import DeploymentRead
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.grants.deps import EffectiveCheckDep, PolicyCacheDep
from hub.grants.effective import EffectiveCheck
from hub.grants.schemas import GrantCheck, GrantDecision
from hub.principals.service import principal_label

__all__ = ["router"]

router = console_router("/t/{t}/deployments")

MAX_TOOLS = 200


@dataclass(frozen=True)
class ToolRow:
    server: str
    name: str
    description: str | None
    decision: GrantDecision | None
    drift: str | None  # the drift mark's kind ("changed", "gone", "renamed"), None when none


async def _agent_name(page: TenantConsole, agent_id: uuid.UUID) -> str:
    return await principal_label(page.session, page.access.tenant_id, agent_id) or str(agent_id)


@router.get("", name="console.deployments")
async def deployments(page: TenantConsoleDep) -> Response:
    await page.require("deployment:*", "read")
    result = await service.list_deployments(
        page.session, page.access, PageParams(limit=200, cursor=None)
    )
    entries = await service.resolved_entries(page.session, page.access.tenant_id, result.items)
    items = [service.deployment_read(d, entries[d.id]) for d in result.items]
    names = {d.agent_id: await _agent_name(page, d.agent_id) for d in items}
    return render(
        page,
        page.request,
        "deployments/list.html",
        items=items,
        names=names,
        more=result.next_cursor,
    )


def _drift_kind(entry: service.ResolvedEntry, name: str) -> str | None:
    if not entry.drifted(name):
        return None
    mark = entry.drift[name]
    kind = mark.get("kind") if isinstance(mark, dict) else None
    return kind if isinstance(kind, str) else "changed"


async def _tools(
    page: TenantConsole,
    read: DeploymentRead,
    entries: list[service.ResolvedEntry],
    cache: PolicyCache,
    effective: EffectiveCheck,
) -> tuple[list[ToolRow], list[str]]:
    """The rows of the first :data:`MAX_TOOLS` tools of each server, and the servers cut so."""
    may_check = await page.may("grant:*", "read")
    rows: list[ToolRow] = []
    cut: list[str] = []
    for entry in entries:
        catalog = CatalogRead.model_validate(entry.catalog)
        if len(catalog.tools) > MAX_TOOLS:
            cut.append(entry.server.handle)
        for tool in catalog.tools[:MAX_TOOLS]:
            name = str(tool.get("name", ""))
            decision = None
            if may_check:
                check = GrantCheck(
                    principal_id=read.agent_id,
                    resource=f"tool:{entry.server.handle}.{name}",
                    action="call",
                    deployment_id=read.id,
                )
                decision = await grants_service.check_grant(
                    page.session, cache, page.access, check, effective
                )
            description = tool.get("description")
            rows.append(
                ToolRow(
                    entry.server.handle,
                    name,
                    description if isinstance(description, str) else None,
                    decision,
                    _drift_kind(entry, name),
                )
            )
    return rows, cut


@router.get("/{d}", name="console.deployment")
async def deployment(
    d: str, page: TenantConsoleDep, cache: PolicyCacheDep, effective: EffectiveCheckDep
) -> Response:
    await page.require_item("deployment", d, "read")
    row = await service.get_deployment(page.session, page.access.tenant_id, parse_id(d))
    entries = (await service.resolved_entries(page.session, page.access.tenant_id, [row]))[row.id]
    read = service.deployment_read(row, entries)
    tools, cut = await _tools(page, read, entries, cache, effective)
    return render(
        page,
        page.request,
        "deployments/detail.html",
        item=read,
        agent=await _agent_name(page, read.agent_id),
        tools=tools,
        cut=cut,
        max_tools=MAX_TOOLS,
        checked=any(t.decision is not None for t in tools) or not tools,
    )
