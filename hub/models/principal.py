"""principals: users, agents and services of a tenant, plus the platform admin (no tenant)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    Uuid,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin

PRINCIPAL_KINDS = ("user", "agent", "service")
ROLE_TEMPLATES = ("tenant_admin", "operator", "deployer", "agent")


class Principal(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "principals"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        CheckConstraint("kind IN ('user', 'agent', 'service')", name="kind"),
        CheckConstraint(
            "role IS NULL OR role IN ('tenant_admin', 'operator', 'deployer', 'agent')", name="role"
        ),
        # the platform admin lives outside tenants; every other principal belongs to one
        CheckConstraint(
            "(is_platform_admin AND tenant_id IS NULL) OR (NOT is_platform_admin "
            "AND tenant_id IS NOT NULL)",
            name="platform_or_tenant",
        ),
        Index("ix_principals_tenant_created", "tenant_id", "created_at", "id"),
    )

    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid(), ForeignKey("tenants.id"), nullable=True
    )
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    role: Mapped[str | None] = mapped_column(String(32), nullable=True)
    is_platform_admin: Mapped[bool] = mapped_column(
        Boolean(), nullable=False, default=False, server_default=false()
    )
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # bumped on every grant change; decisions cache the compiled grants keyed by it (DESIGN §8)
    grants_version: Mapped[int] = mapped_column(
        Integer(), nullable=False, default=0, server_default=text("0")
    )

    @property
    def status(self) -> str:
        return "active" if self.disabled_at is None else "disabled"
