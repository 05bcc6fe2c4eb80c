"""audit_events: append-only record of mutations, denials and failures (never a secret)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, IdMixin


class AuditEvent(IdMixin, Base):
    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_tenant_at", "tenant_id", "at", "id"),)

    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid(), ForeignKey("tenants.id"), nullable=True
    )
    at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)
    actor_id: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    action: Mapped[str] = mapped_column(String(64), nullable=False)
    resource: Mapped[str] = mapped_column(String(512), nullable=False)
    outcome: Mapped[str] = mapped_column(String(16), nullable=False)
    request_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False, default=dict)
