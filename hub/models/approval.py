"""approvals: one ``ask`` tool call waiting for, or bound by, a person's decision (DESIGN §10.3).

An approval is bound to (deployment, agent, grant key, arguments sha256, tool definition sha256):
only the identical call on the identical tool can use it, once (``used_at``). The arguments are
kept encrypted (AAD bound to the approval id) so approvers can see exactly what would run.
``status`` is stored as ``pending``/``approved``/``denied``/``used``; ``expired`` is computed on
read from ``expires_at`` (pending) and ``use_by`` (approved) (DESIGN §15). The arguments are
erased (empty key id, nonce and ciphertext) ``HUB_APPROVAL_ARGUMENTS_KEEP_S`` after the approval
could last be used; the row, its hashes and its decision stay.
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
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, IdMixin

STORED_STATUSES = ("pending", "approved", "denied", "used")
#: ``arguments_key_id`` is empty once the arguments are erased (hub.approvals.erasure)
HELD_ARGUMENTS = text("arguments_key_id <> ''")


class Approval(IdMixin, Base):
    __tablename__ = "approvals"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        ForeignKeyConstraint(
            ["tenant_id", "deployment_id"],
            ["deployments.tenant_id", "deployments.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(["tenant_id", "agent_id"], ["principals.tenant_id", "principals.id"]),
        CheckConstraint("status IN ('pending', 'approved', 'denied', 'used')", name="status"),
        Index("ix_approvals_tenant_requested", "tenant_id", "requested_at", "id"),
        # the approvals whose arguments are still held, by expiry: what the erasure job walks
        Index(
            "ix_approvals_tenant_held_arguments",
            "tenant_id",
            "expires_at",
            postgresql_where=HELD_ARGUMENTS,
            sqlite_where=HELD_ARGUMENTS,
        ),
        Index(
            "ix_approvals_binding",
            "deployment_id",
            "agent_id",
            "grant_key",
            "arguments_sha256",
            "tool_sha256",
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    deployment_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    agent_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    grant_key: Mapped[str] = mapped_column(String(512), nullable=False)
    handle: Mapped[str] = mapped_column(String(64), nullable=False)
    tool_name: Mapped[str] = mapped_column(String(512), nullable=False)
    wire_name: Mapped[str] = mapped_column(String(64), nullable=False)
    arguments_key_id: Mapped[str] = mapped_column(String(32), nullable=False)
    arguments_nonce: Mapped[bytes] = mapped_column(LargeBinary(), nullable=False)
    arguments_ciphertext: Mapped[bytes] = mapped_column(LargeBinary(), nullable=False)
    arguments_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    tool_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    catalog_version: Mapped[int] = mapped_column(Integer(), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    decided_by: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    note: Mapped[str | None] = mapped_column(Text(), nullable=True)
    use_by: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # the drift of the tool when the approval was asked: {"from_sha256", "to_sha256", "changed"}
    drift: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
