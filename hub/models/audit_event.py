"""audit_events: append-only record of mutations, denials and failures (never a secret).

Each tenant's rows, and the platform's (``tenant_id`` NULL), form a hash chain (DESIGN §11):
``seq`` numbers a row within its chain from 1, ``prev_hash`` is the previous row's ``hash``
(64 zeros for the first) and ``hash = sha256(prev_hash ‖ canonical JSON of the row)``
(:mod:`hub.audit.chain`). ``audit_chain_heads`` holds each chain's last link.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, UniqueConstraint, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, IdMixin

#: the outcome and the action of most of a chain's rows: the partial indexes leave them out
COMMON_OUTCOME = "success"
COMMON_ACTION = "tool.call"


def _rows_without(column: str, common: str) -> Index:
    """The tenant's rows whose ``column`` is not ``common``, by time (a partial index)."""
    predicate = text(f"{column} <> '{common}'")
    return Index(
        f"ix_audit_events_tenant_{column}_at",
        "tenant_id",
        column,
        "at",
        "id",
        postgresql_where=predicate,
        sqlite_where=predicate,
    )


class AuditEvent(IdMixin, Base):
    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_tenant_at", "tenant_id", "at", "id"),
        # the rows a filter by a rare outcome or action looks for, and no others: most of a
        # chain is tool calls that succeeded (migration 0905)
        _rows_without("outcome", COMMON_OUTCOME),
        _rows_without("action", COMMON_ACTION),
        # one row per position in a tenant's chain (the platform chain's NULLs are not compared:
        # its head row lock is what keeps it linear)
        UniqueConstraint("tenant_id", "seq"),
    )

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
    seq: Mapped[int] = mapped_column(BigInteger(), nullable=False)
    prev_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    hash: Mapped[str] = mapped_column(String(64), nullable=False)
