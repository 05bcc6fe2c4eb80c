"""servers: registered remote MCP servers, addressed by an immutable per-tenant handle (DESIGN §3).

A deleted server keeps its row (``deleted_at``) so its handle is never silently reused: grants on
``tool:<handle>.*`` written for it must not start applying to another server.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class Server(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "servers"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        UniqueConstraint("tenant_id", "handle"),
        ForeignKeyConstraint(
            ["tenant_id", "credential_id"], ["credentials.tenant_id", "credentials.id"]
        ),
        CheckConstraint("era IS NULL OR era IN ('modern', 'legacy')", name="era"),
        Index("ix_servers_tenant_created", "tenant_id", "created_at", "id"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    handle: Mapped[str] = mapped_column(String(63), nullable=False)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    credential_id: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    era: Mapped[str | None] = mapped_column(String(16), nullable=True)
    protocol_version: Mapped[str | None] = mapped_column(String(32), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
