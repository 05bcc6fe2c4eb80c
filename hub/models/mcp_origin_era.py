"""mcp_origin_eras: the protocol era that worked last, per (tenant, upstream origin) (DESIGN §13).

Stored rather than cached in memory so every replica skips the era probe. Servers registered later
keep their own remembered era on their row; this table serves ad-hoc discovery by URL.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base


class McpOriginEra(Base):
    __tablename__ = "mcp_origin_eras"
    __table_args__ = (CheckConstraint("era IN ('modern', 'legacy')", name="era"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), primary_key=True)
    origin: Mapped[str] = mapped_column(String(512), primary_key=True)
    era: Mapped[str] = mapped_column(String(16), nullable=False)
    protocol_version: Mapped[str] = mapped_column(String(32), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)
