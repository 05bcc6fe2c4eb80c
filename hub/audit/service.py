"""Recording audit events.

A successful mutation records its event with :func:`record` in the request's own transaction, so
the event commits (or rolls back) with the change. A denied or failed attempt is recorded with
:func:`record_failure` in a fresh short transaction after the request's rollback, so it survives.
Details hold identifiers and fingerprints only; callers must never put a secret in them.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit import repository
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.db import Database
from hub.core.logging import current_client_request_id
from hub.core.tenancy import TenantId
from hub.models import AuditEvent

__all__ = ["Outcome", "record", "record_failure", "record_for"]

log = logging.getLogger("hub.audit")

Outcome = Literal["success", "denied", "failed", "pending"]


def _event(
    *,
    tenant_id: TenantId | None,
    actor_id: uuid.UUID | None,
    action: str,
    resource: str,
    outcome: Outcome,
    request_id: str | None,
    details: dict[str, Any] | None,
) -> AuditEvent:
    client_request_id = current_client_request_id()
    if client_request_id is not None:
        details = {**(details or {}), "client_request_id": client_request_id}
    return AuditEvent(
        id=uuid.uuid4(),
        tenant_id=tenant_id.value if tenant_id is not None else None,
        at=clock.now(),
        actor_id=actor_id,
        action=action,
        resource=resource[:512],
        outcome=outcome,
        request_id=request_id,
        details=details or {},
    )


async def record(
    session: AsyncSession,
    *,
    tenant_id: TenantId | None,
    actor_id: uuid.UUID | None,
    action: str,
    resource: str,
    request_id: str | None,
    outcome: Outcome = "success",
    details: dict[str, Any] | None = None,
) -> None:
    """Record an event inside the caller's transaction."""
    await repository.insert_event(
        session,
        _event(
            tenant_id=tenant_id,
            actor_id=actor_id,
            action=action,
            resource=resource,
            outcome=outcome,
            request_id=request_id,
            details=details,
        ),
    )


async def record_for(
    session: AsyncSession,
    access: TenantAccess,
    action: str,
    resource: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Record a successful mutation by the caller of a tenant route, in its transaction."""
    await record(
        session,
        tenant_id=access.tenant_id,
        actor_id=access.actor_id,
        action=action,
        resource=resource,
        request_id=access.request_id,
        details=details,
    )


async def record_failure(
    db: Database,
    *,
    tenant_id: TenantId | None,
    actor_id: uuid.UUID | None,
    action: str,
    resource: str,
    request_id: str | None,
    outcome: Outcome,
    details: dict[str, Any] | None = None,
) -> None:
    """Record an event in a fresh short transaction of its own (never raises): a denied or
    failed attempt after its request rolled back, or a tool call after it ran."""
    try:
        async with db.session(write=True) as session:
            await record(
                session,
                tenant_id=tenant_id,
                actor_id=actor_id,
                action=action,
                resource=resource,
                request_id=request_id,
                outcome=outcome,
                details=details,
            )
    except Exception:  # the audit of a failure must not turn it into a 500
        log.exception("could not record audit event for %s", action)
