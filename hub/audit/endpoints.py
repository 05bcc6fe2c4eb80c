"""Reading the audit trail (DESIGN §4, §11): a tenant's chain, and the platform's.

- ``GET /tenants/{t}/audit`` — events oldest first (``order=newest``: newest first), filtered
  by ``action``, ``actor``, ``outcome``, ``since`` (inclusive), ``until`` (exclusive) and
  ``after_seq`` (rows placed after that one in the chain: a follower's "what is new"), with
  cursor pagination;
- ``GET /tenants/{t}/audit/verify`` — the hash chain checked from its first row to its head, or
  from a place an earlier check reported (``after_seq`` and ``after_hash``: its ``head_seq`` and
  ``head_hash``) to the head;
- ``GET /tenants/{t}/audit/export`` — the chain as NDJSON (one event per line, ``seq`` order,
  same filters), streamed for a SIEM.

All three need ``audit`` : ``read`` in the tenant (the platform admin passes). The platform's own
chain (events without a tenant: the platform admin's keys, bootstrap) is at ``/platform/audit``,
``…/verify`` and ``…/export``, for the platform admin only.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, Query
from fastapi.responses import StreamingResponse
from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit import service
from hub.audit.actions import Action, Outcome
from hub.audit.chain import Anchor
from hub.audit.repository import AuditFilters
from hub.audit.schemas import AuditEventRead, AuditVerifyRead
from hub.auth.caller import TenantAccess
from hub.authz.deps import PlatformAdminDep, authorize
from hub.authz.throttle import rest_router
from hub.core.db import Database
from hub.core.deps import DatabaseDep, SessionDep
from hub.core.errors import BadRequest
from hub.core.pagination import PageParams, PageParamsDep, newest_first_of
from hub.core.schemas import Envelope, ListEnvelope, UtcDatetime
from hub.core.tenancy import TenantId

__all__ = ["platform_router", "router"]

router = rest_router(prefix="/tenants/{t}/audit", tags=["audit"])
platform_router = rest_router(prefix="/platform/audit", tags=["audit"])

AuditReader = Annotated[TenantAccess, authorize("audit", "read")]
NDJSON = "application/x-ndjson"
_EXPORT: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The chain's events, one JSON object per line, in chain order",
        "content": {NDJSON: {"schema": {"type": "string"}}},
    }
}


def audit_filters(
    action: Annotated[Action | None, Query()] = None,
    actor: Annotated[uuid.UUID | None, Query()] = None,
    outcome: Annotated[Outcome | None, Query()] = None,
    since: Annotated[UtcDatetime | None, Query()] = None,
    until: Annotated[UtcDatetime | None, Query()] = None,
    after_seq: Annotated[
        int | None,
        Query(
            ge=0,
            le=2**63 - 1,  # a seq is a 64-bit integer on both databases
            description="Only rows after this one in the chain (its `seq`). Rows are numbered "
            "in the order they were written, so polling with the highest `seq` seen misses "
            "none, even a row whose `at` is earlier than one already seen.",
        ),
    ] = None,
) -> AuditFilters:
    return AuditFilters(
        action=action.value if action else None,
        actor_id=actor,
        outcome=outcome,
        since=since,
        until=until,
        after_seq=after_seq,
    )


FiltersDep = Annotated[AuditFilters, Depends(audit_filters)]


class ListOrder(StrEnum):
    """``oldest`` first (the chain's order, the default) or ``newest`` first (what a person
    looking at a long trail wants; a page's cursor continues in the same direction)."""

    oldest = "oldest"
    newest = "newest"


OrderDep = Annotated[
    ListOrder | None,
    Query(
        description="oldest or newest first; without it, a cursor's own order (else oldest). "
        "A cursor sent with the other order is 400."
    ),
]


def _newest(order: ListOrder | None, page: PageParams) -> bool:
    return newest_first_of(None if order is None else order is ListOrder.newest, page)


_HASH = "^[0-9a-f]{64}$"


def verify_start(
    after_seq: Annotated[
        int | None,
        Query(
            ge=0,
            le=2**63 - 1,
            description="Check from the row after this one (an earlier check's `head_seq`); "
            "with `after_hash`.",
        ),
    ] = None,
    after_hash: Annotated[
        str | None,
        Query(
            pattern=_HASH,
            description="The hash row `after_seq` had (that check's `head_hash`), kept outside "
            "the hub: a chain rewritten since does not continue from it.",
        ),
    ] = None,
) -> Anchor | None:
    if (after_seq is None) != (after_hash is None):
        raise BadRequest(
            "after_seq and after_hash go together: an earlier check's head_seq and head_hash"
        )
    if after_seq is None or after_hash is None:
        return None
    return Anchor(after_seq, after_hash)


StartDep = Annotated[Anchor | None, Depends(verify_start)]


def _verified(result: service.Verification) -> Envelope[AuditVerifyRead]:
    return Envelope(
        data=AuditVerifyRead(
            ok=result.ok,
            checked=result.checked,
            first_bad_id=result.first_bad_id,
            reason=result.reason,
            head_hash=result.head_hash,
            head_seq=result.head_seq,
        )
    )


async def _release(session: AsyncSession) -> None:
    """End the request's session before a walk, which reads on sessions of its own: it held
    a pooled connection for the walk's whole length, so as many walks as the pool holds
    connections waited on each other for the pool's 30 s and answered 503 (a review, stop 52:
    a pool of four, five verifies at once). An export's ends before its stream begins."""
    await session.close()


def _ndjson(db: Database, tenant_id: TenantId | None, filters: AuditFilters) -> StreamingResponse:
    return StreamingResponse(service.export_lines(db, tenant_id, filters), media_type=NDJSON)


@router.get("", name="audit.list")
async def list_audit(
    session: SessionDep,
    page: PageParamsDep,
    filters: FiltersDep,
    access: AuditReader,
    order: OrderDep = None,
) -> ListEnvelope[AuditEventRead]:
    """List the tenant's audit events, oldest first (``order=newest``: newest first)."""
    newest = _newest(order, page)
    result = await service.list_events(
        session, access.tenant_id, filters, page, newest_first=newest
    )
    return ListEnvelope.of(result, AuditEventRead)


@router.get("/verify", name="audit.verify")
async def verify_audit(
    db: DatabaseDep, session: SessionDep, access: AuditReader, start: StartDep
) -> Envelope[AuditVerifyRead]:
    """Check the tenant's audit hash chain (all of it, or from ``after_seq``) and name the first
    row that breaks it."""
    await _release(session)
    return _verified(await service.verify_chain(db, access.tenant_id, start))


@router.get("/export", name="audit.export", response_class=StreamingResponse, responses=_EXPORT)
async def export_audit(db: DatabaseDep, filters: FiltersDep, access: AuditReader) -> Any:
    """Stream the tenant's audit events as NDJSON, in chain order."""
    return _ndjson(db, access.tenant_id, filters)


@platform_router.get("", name="platform_audit.list")
async def list_platform_audit(
    session: SessionDep,
    page: PageParamsDep,
    filters: FiltersDep,
    caller: PlatformAdminDep,
    order: OrderDep = None,
) -> ListEnvelope[AuditEventRead]:
    """List the platform's own audit events (no tenant), oldest first (or ``order=newest``)."""
    newest = _newest(order, page)
    result = await service.list_events(session, None, filters, page, newest_first=newest)
    return ListEnvelope.of(result, AuditEventRead)


@platform_router.get("/verify", name="platform_audit.verify")
async def verify_platform_audit(
    db: DatabaseDep, session: SessionDep, caller: PlatformAdminDep, start: StartDep
) -> Envelope[AuditVerifyRead]:
    """Check the platform's audit hash chain (all of it, or from ``after_seq``)."""
    await _release(session)
    return _verified(await service.verify_chain(db, None, start))


@platform_router.get(
    "/export", name="platform_audit.export", response_class=StreamingResponse, responses=_EXPORT
)
async def export_platform_audit(
    db: DatabaseDep, filters: FiltersDep, caller: PlatformAdminDep
) -> Any:
    """Stream the platform's audit events as NDJSON, in chain order."""
    return _ndjson(db, None, filters)
