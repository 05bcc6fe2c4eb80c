"""catalogs: immutable, versioned snapshots of a server's tools (DESIGN §3, §13 "Catalog hash")."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKeyConstraint, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, IdMixin


class Catalog(IdMixin, Base):
    __tablename__ = "catalogs"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        UniqueConstraint("server_id", "version"),
        ForeignKeyConstraint(["tenant_id", "server_id"], ["servers.tenant_id", "servers.id"]),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    server_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    version: Mapped[int] = mapped_column(Integer(), nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    protocol_version: Mapped[str] = mapped_column(String(32), nullable=False)
    server_info: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False)
    capabilities: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False)
    instructions: Mapped[str | None] = mapped_column(Text(), nullable=True)
    tools: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, nullable=False)
    tool_hashes: Mapped[dict[str, str]] = mapped_column(JSONType, nullable=False)
    discovered_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    discovered_by: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
