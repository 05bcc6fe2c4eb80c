"""``GET /tenants/{t}/deployments/{d}/drift`` (DESIGN §10.6), authorised as the deployment's
read: ``deployment:<d>`` : ``read``; another tenant's deployment reads as 404."""

from __future__ import annotations

from typing import Annotated

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep
from hub.core.paths import parse_id
from hub.core.schemas import Envelope
from hub.drift import service
from hub.drift.schemas import DeploymentDriftRead

router = rest_router(prefix="/tenants/{t}/deployments", tags=["deployments"])


@router.get("/{d}/drift", name="deployment.drift")
async def get_drift(
    d: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("deployment", "read", item="d")],
) -> Envelope[DeploymentDriftRead]:
    """The deployment's drifted tools (changed, gone or renamed upstream since their catalog
    version was snapshotted) with their diffs, and each server's last drift-watch probe."""
    found = await service.deployment_drift(session, access.tenant_id, parse_id(d))
    return Envelope(data=found)
