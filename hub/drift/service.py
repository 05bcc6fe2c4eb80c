"""The drift read of one deployment: its entries' drift marks and probe states (DESIGN §10.6)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.tenancy import TenantId
from hub.deployments import service as deployments_service
from hub.deployments.wirenames import grant_key
from hub.drift import repository
from hub.drift.schemas import DeploymentDriftRead, DriftedTool, ServerProbeRead

__all__ = ["deployment_drift"]


async def deployment_drift(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> DeploymentDriftRead:
    """Drifted tools of the deployment's pinned versions (404 for an unknown deployment)."""
    deployment = await deployments_service.get_deployment(session, tenant_id, deployment_id)
    entries = (await deployments_service.resolved_entries(session, tenant_id, [deployment]))[
        deployment.id
    ]
    tools: list[DriftedTool] = []
    servers: list[ServerProbeRead] = []
    for e in entries:
        handle = e.server.handle
        for name, mark in sorted(e.drift.items()):
            tools.append(
                DriftedTool(
                    server=handle,
                    tool=name,
                    grant_key=grant_key(handle, name),
                    catalog_version=e.catalog.version,
                    kind=mark["kind"],
                    from_sha256=mark["from_sha256"],
                    to_sha256=mark.get("to_sha256"),
                    changed=list(mark.get("changed", [])),
                    before=dict(mark.get("before", {})),
                    after=dict(mark.get("after", {})),
                    renamed_to=mark.get("renamed_to"),
                    detected_at=datetime.fromisoformat(mark["detected_at"]),
                )
            )
        probe = await repository.get_probe(session, tenant_id, e.server.id)
        servers.append(
            ServerProbeRead(
                server=handle,
                status="never" if probe is None else probe.status,  # type: ignore[arg-type]
                reason=probe.reason if probe is not None else None,
                checked_at=probe.checked_at if probe is not None else None,
                complete_at=probe.complete_at if probe is not None else None,
                next_probe_at=probe.next_probe_at if probe is not None else None,
            )
        )
    return DeploymentDriftRead(deployment_id=deployment.id, tools=tools, servers=servers)
