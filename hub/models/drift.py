"""The drift watch's state (DESIGN §10.6, §15 "Drift watch").

``server_probes``: one row per server some deployment references — when it was last probed, how
that ended (``ok`` after a complete discovery, ``unknown`` after a failed or cut-short one), when
it is due again (jitter, backoff), and the live per-tool hashes and Tool objects of the last
*complete* discovery. ``catalog_drift``: per pinned catalog version, the tools whose live definition
differs from the snapshot (changed, gone, renamed) with their diff; a deployment pinned to that
version sees them drifted, and re-pinning to another version leaves them behind.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, IdMixin


class ServerProbe(IdMixin, Base):
    __tablename__ = "server_probes"
    __table_args__ = (
        UniqueConstraint("server_id"),
        ForeignKeyConstraint(
            ["tenant_id", "server_id"], ["servers.tenant_id", "servers.id"], ondelete="CASCADE"
        ),
        CheckConstraint("status IN ('ok', 'unknown')", name="status"),
        Index("ix_server_probes_next_probe_at", "next_probe_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    server_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    # the discovery failure reason of the last probe when it failed (a fixed code, never text)
    reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    failures: Mapped[int] = mapped_column(Integer(), nullable=False, default=0)
    checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    complete_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    next_probe_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    # of the last complete discovery: {tool name: sha256} and the Tool objects verbatim
    live_hashes: Mapped[dict[str, str] | None] = mapped_column(JSONType, nullable=True)
    live_tools: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType, nullable=True)


class CatalogDrift(IdMixin, Base):
    __tablename__ = "catalog_drift"
    __table_args__ = (
        UniqueConstraint("tenant_id", "catalog_id"),
        ForeignKeyConstraint(
            ["tenant_id", "catalog_id"], ["catalogs.tenant_id", "catalogs.id"], ondelete="CASCADE"
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    catalog_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    server_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    # {tool name: {"kind", "from_sha256", "to_sha256", "changed", "before", "after", …}}
    tools: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
