"""grants: allow / ask / deny of an action on a resource pattern, per principal (DESIGN §8)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    ForeignKeyConstraint,
    Index,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class Grant(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "grants"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        # one grant per (principal, resource, action), expired rows included (DESIGN §13)
        UniqueConstraint("principal_id", "resource", "action"),
        ForeignKeyConstraint(
            ["tenant_id", "principal_id"], ["principals.tenant_id", "principals.id"]
        ),
        CheckConstraint("effect IN ('allow', 'ask', 'deny')", name="effect"),
        Index("ix_grants_tenant_created", "tenant_id", "created_at", "id"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    principal_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    resource: Mapped[str] = mapped_column(String(512), nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)
    effect: Mapped[str] = mapped_column(String(8), nullable=False)
    conditions: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False, default=dict)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_by: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
