"""audit_events is append-only: this module can insert and read, nothing else."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from hub.models import AuditEvent

__all__ = ["insert_event"]


async def insert_event(session: AsyncSession, event: AuditEvent) -> None:
    session.add(event)
    await session.flush()
