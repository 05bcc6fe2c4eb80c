"""Deployment rules: an agent principal, one pinned catalog per server, names that exist.

Bad input is refused clearly: an unknown agent, server handle or catalog version is 404; a
principal that is not an agent, a server listed twice, or an ``allow_without_ask`` name missing from
its catalog is 400. Every change is audited.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.catalogs import service as catalogs_service
from hub.core import clock
from hub.core.errors import BadRequest, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.deployments import repository
from hub.deployments.repository import VIEW_COLUMNS, ViewRow
from hub.deployments.schemas import (
    DeploymentCreate,
    DeploymentRead,
    DeploymentUpdate,
    EntryIn,
    EntryRead,
)
from hub.deployments.wirenames import plain_name_problem
from hub.models import Catalog, Deployment, DeploymentEntry, Server
from hub.principals import service as principals_service
from hub.servers import service as servers_service

__all__ = [
    "VIEW_COLUMNS",
    "ResolvedEntry",
    "ViewRow",
    "create_deployment",
    "delete_deployment",
    "deployment_read",
    "get_deployment",
    "get_deployment_or_none",
    "list_deployments",
    "resolved_entries",
    "sidecar_of",
    "update_deployment",
    "view_rows",
    "view_signature",
]


@dataclass(frozen=True)
class ResolvedEntry:
    entry: DeploymentEntry
    server: Server
    catalog: Catalog
    #: the pinned version's drift marks, ``{tool name: diff}`` (DESIGN §10.6)
    drift: Mapping[str, Any] = field(default_factory=dict)

    def drifted(self, tool_name: str) -> bool:
        """Whether the drift watch marked this tool of the pinned version drifted."""
        return tool_name in self.drift


def deployment_read(deployment: Deployment, entries: list[ResolvedEntry]) -> DeploymentRead:
    """The API's read of ``deployment`` with its resolved entries (the REST answer and the
    console page alike)."""
    return DeploymentRead(
        id=deployment.id,
        agent_id=deployment.agent_id,
        sidecar_id=deployment.sidecar_id,
        name=deployment.name,
        entries=[
            EntryRead(
                server=e.server.handle,
                catalog_version=e.catalog.version,
                allow_without_ask=list(e.entry.allow_without_ask),
                arguments=e.entry.arguments,  # type: ignore[arg-type]
                tool_names=e.entry.tool_names,  # type: ignore[arg-type]
                mode=e.entry.mode,  # type: ignore[arg-type]
            )
            for e in entries
        ],
        created_at=deployment.created_at,
        updated_at=deployment.updated_at,
    )


async def _check_agent(session: AsyncSession, access: TenantAccess, agent_id: uuid.UUID) -> None:
    await access.require(f"principal:{agent_id}", "read")  # an object named in a body
    agent = await principals_service.get_principal(session, access, agent_id)
    if agent.kind != "agent":
        raise BadRequest("agent_id must name a principal of kind 'agent'")
    if agent.disabled_at is not None:
        raise BadRequest("agent_id names a deleted principal")


async def _check_sidecar(
    session: AsyncSession, access: TenantAccess, sidecar_id: uuid.UUID | None
) -> None:
    if sidecar_id is None:
        return
    await access.require(f"principal:{sidecar_id}", "read")  # an object named in a body
    sidecar = await principals_service.get_principal(session, access, sidecar_id)
    if sidecar.kind != "service":
        raise BadRequest("sidecar_id must name a principal of kind 'service'")
    if sidecar.disabled_at is not None:
        raise BadRequest("sidecar_id names a deleted principal")


def _check_direct(entries: list[EntryIn], sidecar_id: uuid.UUID | None) -> None:
    if sidecar_id is None and any(e.mode == "direct" for e in entries):
        raise BadRequest("a direct-mode entry needs the deployment's sidecar_id")


async def _build_entries(
    session: AsyncSession, access: TenantAccess, deployment_id: uuid.UUID, entries: list[EntryIn]
) -> list[DeploymentEntry]:
    handles = [e.server for e in entries]
    if len(set(handles)) != len(handles):
        raise BadRequest("a server may appear only once in a deployment")
    rows = []
    naming: list[tuple[str, list[str], bool]] = []
    for position, entry in enumerate(entries):
        server = await servers_service.get_server(session, access.tenant_id, entry.server)
        await servers_service.require_credential_use(access, server.credential_id)
        catalog = await catalogs_service.get_catalog(
            session, access.tenant_id, entry.server, entry.catalog_version
        )
        names = {str(t.get("name")) for t in catalog.tools}
        if not set(entry.allow_without_ask) <= names:
            raise BadRequest("allow_without_ask names a tool missing from that catalog")
        naming.append((entry.server, list(names), entry.tool_names == "plain"))
        rows.append(
            DeploymentEntry(
                id=uuid.uuid4(),
                tenant_id=access.tenant_id.value,
                deployment_id=deployment_id,
                server_id=catalog.server_id,
                catalog_id=catalog.id,
                position=position,
                allow_without_ask=sorted(set(entry.allow_without_ask)),
                arguments=entry.arguments,
                tool_names=entry.tool_names,
                mode=entry.mode,
            )
        )
    problem = plain_name_problem(naming)
    if problem is not None:
        raise BadRequest(problem)
    return rows


async def create_deployment(
    session: AsyncSession, access: TenantAccess, data: DeploymentCreate
) -> Deployment:
    await _check_agent(session, access, data.agent_id)
    await _check_sidecar(session, access, data.sidecar_id)
    _check_direct(data.entries, data.sidecar_id)
    now = clock.now()
    deployment = Deployment(
        id=uuid.uuid4(),
        tenant_id=access.tenant_id.value,
        agent_id=data.agent_id,
        sidecar_id=data.sidecar_id,
        name=data.name,
        created_at=now,
        updated_at=now,
    )
    entries = await _build_entries(session, access, deployment.id, data.entries)
    session.add(deployment)
    await session.flush()
    session.add_all(entries)
    await session.flush()
    await _audit(session, access, Action.DEPLOYMENT_CREATE, deployment, len(entries))
    return deployment


async def _audit(
    session: AsyncSession,
    access: TenantAccess,
    action: Action,
    deployment: Deployment,
    entries: int,
) -> None:
    await record_for(
        session,
        access,
        action,
        f"deployment:{deployment.id}",
        {"agent_id": str(deployment.agent_id), "entries": entries},
    )


async def get_deployment(
    session: AsyncSession,
    tenant_id: TenantId,
    deployment_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> Deployment:
    deployment = await repository.get_deployment(
        session, tenant_id, deployment_id, for_update=for_update
    )
    if deployment is None:
        raise NotFound("deployment not found")
    return deployment


async def get_deployment_or_none(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> Deployment | None:
    return await repository.get_deployment(session, tenant_id, deployment_id)


async def list_deployments(
    session: AsyncSession,
    access: TenantAccess,
    params: PageParams,
    *,
    agent_id: uuid.UUID | None = None,
) -> Page[Deployment]:
    return await repository.list_deployments(session, access.tenant_id, params, agent_id=agent_id)


async def update_deployment(
    session: AsyncSession, access: TenantAccess, deployment_id: uuid.UUID, data: DeploymentUpdate
) -> Deployment:
    deployment = await get_deployment(session, access.tenant_id, deployment_id)
    changes = data.model_dump(exclude_unset=True)
    if "name" in changes:
        deployment.name = data.name
    if "sidecar_id" in changes:
        await _check_sidecar(session, access, data.sidecar_id)
        if data.entries is None:
            resolved = await resolved_entries(session, access.tenant_id, [deployment])
            direct = [e for e in resolved[deployment.id] if e.entry.mode == "direct"]
            if data.sidecar_id is None and direct:
                raise BadRequest("a direct-mode entry needs the deployment's sidecar_id")
            for e in direct:  # naming who may lease a credential needs its use (DESIGN §15)
                await servers_service.require_credential_use(access, e.server.credential_id)
        deployment.sidecar_id = data.sidecar_id
    count = -1
    if data.entries is not None:
        _check_direct(data.entries, deployment.sidecar_id)
        entries = await _build_entries(session, access, deployment.id, data.entries)
        await repository.delete_entries(session, access.tenant_id, deployment.id)
        session.add_all(entries)
        count = len(entries)
    deployment.updated_at = clock.now()
    await session.flush()
    await _audit(session, access, Action.DEPLOYMENT_UPDATE, deployment, count)
    return deployment


async def delete_deployment(
    session: AsyncSession, access: TenantAccess, deployment_id: uuid.UUID
) -> None:
    deployment = await get_deployment(session, access.tenant_id, deployment_id)
    await repository.delete_entries(session, access.tenant_id, deployment.id)
    await session.delete(deployment)
    await session.flush()
    await _audit(session, access, Action.DEPLOYMENT_DELETE, deployment, 0)


async def view_rows(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> Sequence[ViewRow]:
    """A deployment's agent, entries and servers as plain rows, in one query (the gateway's
    per-call read): ``agent_id``, the entry's ``catalog_id``, ``allow_without_ask``,
    ``arguments``, ``tool_names`` and the server's ``server_id``, ``handle``, ``created_at``,
    ``url``, ``credential_id``, ``era``, and the pinned version's drift marks ``drift`` (``{tool
    name: diff}`` or None; a tool is ``drifted`` when it is a key) and ``drift_at`` — no rows
    for an unknown deployment, one row with no entry (``catalog_id`` None) for a deployment
    without entries."""
    return await repository.view_rows(session, tenant_id, deployment_id)


def view_signature(deployment_id: uuid.UUID, rows: Sequence[ViewRow]) -> Hashable:
    """Everything a deployment's view (and its bundle) is computed from, as one hashable value,
    given :func:`view_rows`' rows: the agent and each entry's columns in order, the drift marks
    by their time and their content (two writes may share a timestamp). Catalogs are immutable,
    so their ids stand for them."""
    return (
        deployment_id,
        rows[0].agent_id if rows else None,
        tuple(
            (
                r.catalog_id,
                tuple(r.allow_without_ask),
                r.arguments,
                r.tool_names,
                r.mode,
                r.server_id,
                r.handle,
                r.created_at,
                r.url,
                r.credential_id,
                r.era,
                r.drift_at,
                None if r.drift is None else json.dumps(r.drift, sort_keys=True),
            )
            for r in rows
            if r.catalog_id is not None
        ),
    )


async def resolved_entries(
    session: AsyncSession, tenant_id: TenantId, deployments: Sequence[Deployment]
) -> dict[uuid.UUID, list[ResolvedEntry]]:
    """Each deployment's entries with their server and catalog rows and the pinned versions'
    drift marks, in entry order."""
    rows = await repository.entries_of(session, tenant_id, [d.id for d in deployments])
    servers = await servers_service.servers_by_ids(session, tenant_id, [r.server_id for r in rows])
    marks = await repository.drift_marks(session, tenant_id, list({r.catalog_id for r in rows}))
    out: dict[uuid.UUID, list[ResolvedEntry]] = {d.id: [] for d in deployments}
    for row in rows:
        catalog = await catalogs_service.get_catalog_by_id(session, tenant_id, row.catalog_id)
        drift = marks.get(row.catalog_id, {})
        out[row.deployment_id].append(ResolvedEntry(row, servers[row.server_id], catalog, drift))
    return out


async def sidecar_of(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> tuple[uuid.UUID, int] | None:
    """The deployment's sidecar principal (not disabled) and its ``grants_version``, or None."""
    return await repository.sidecar_of(session, tenant_id, deployment_id)
