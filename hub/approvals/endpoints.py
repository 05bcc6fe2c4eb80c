"""Tenant routes for approvals (DESIGN §10.3, §12): list, read, decide."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query

from hub.approvals import service
from hub.approvals.deps import ApprovalContextDep
from hub.approvals.schemas import ApprovalDecision, ApprovalRead, ApprovalStatus
from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep
from hub.core.pagination import PageParamsDep
from hub.core.paths import parse_id
from hub.core.schemas import Envelope, ListEnvelope

router = rest_router(prefix="/tenants/{t}/approvals", tags=["approvals"])


@router.get("", name="approval.list")
async def list_approvals(
    session: SessionDep,
    ctx: ApprovalContextDep,
    page: PageParamsDep,
    access: Annotated[TenantAccess, authorize("approval", "read")],
    status: Annotated[ApprovalStatus | None, Query()] = None,
    deployment_id: Annotated[uuid.UUID | None, Query()] = None,
    agent_id: Annotated[uuid.UUID | None, Query()] = None,
) -> ListEnvelope[ApprovalRead]:
    """List approvals, with the arguments each would forward; filter by status, deployment or
    agent."""
    result = await service.list_approvals(
        session, ctx, access, page, status=status, deployment_id=deployment_id, agent_id=agent_id
    )
    return ListEnvelope(data=list(result.items), next_cursor=result.next_cursor)


@router.get("/{a}", name="approval.get")
async def get_approval(
    a: str,
    session: SessionDep,
    ctx: ApprovalContextDep,
    access: Annotated[TenantAccess, authorize("approval", "read", item="a")],
) -> Envelope[ApprovalRead]:
    """One approval, with the exact arguments the call would forward."""
    return Envelope(data=await service.get_approval(session, ctx, access.tenant_id, parse_id(a)))


@router.post("/{a}/decision", name="approval.decide")
async def decide_approval(
    a: str,
    body: ApprovalDecision,
    session: SessionDep,
    ctx: ApprovalContextDep,
    access: Annotated[TenantAccess, authorize("approval", "decide", item="a")],
) -> Envelope[ApprovalRead]:
    """Approve or deny a pending approval (people only; approving needs the tool's ``call``)."""
    decided = await service.decide_approval(session, ctx, access, parse_id(a), body)
    return Envelope(data=decided)
