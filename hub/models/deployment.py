"""deployments: an agent principal plus, per server, a pinned catalog version (DESIGN §3, §12)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class Deployment(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "deployments"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        ForeignKeyConstraint(["tenant_id", "agent_id"], ["principals.tenant_id", "principals.id"]),
        ForeignKeyConstraint(
            ["tenant_id", "sidecar_id"], ["principals.tenant_id", "principals.id"]
        ),
        Index("ix_deployments_tenant_created", "tenant_id", "created_at", "id"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    agent_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # the service principal whose key may lease this deployment's direct-mode credentials
    sidecar_id: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)


class DeploymentEntry(IdMixin, Base):
    __tablename__ = "deployment_entries"
    __table_args__ = (
        UniqueConstraint("deployment_id", "server_id"),
        ForeignKeyConstraint(
            ["tenant_id", "deployment_id"],
            ["deployments.tenant_id", "deployments.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(["tenant_id", "server_id"], ["servers.tenant_id", "servers.id"]),
        ForeignKeyConstraint(["tenant_id", "catalog_id"], ["catalogs.tenant_id", "catalogs.id"]),
        Index("ix_deployment_entries_server", "server_id"),
        CheckConstraint("arguments IN ('strict', 'schema')", name="arguments"),
        CheckConstraint("tool_names IN ('prefixed', 'plain')", name="tool_names"),
        CheckConstraint("mode IN ('relay', 'direct')", name="mode"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    deployment_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    server_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    catalog_id: Mapped[uuid.UUID] = mapped_column(Uuid(), nullable=False)
    position: Mapped[int] = mapped_column(Integer(), nullable=False)
    allow_without_ask: Mapped[list[str]] = mapped_column(JSONType, nullable=False, default=list)
    # "strict": undeclared top-level arguments are refused; "schema": the schema alone decides
    arguments: Mapped[str] = mapped_column(
        String(16), nullable=False, default="strict", server_default="strict"
    )
    # "prefixed": handle__tool wire names; "plain": the tools' own names (unique, valid)
    tool_names: Mapped[str] = mapped_column(
        String(16), nullable=False, default="prefixed", server_default="prefixed"
    )
    # "relay": calls go through the hub; "direct": the deployment's sidecar calls upstream itself
    mode: Mapped[str] = mapped_column(
        String(16), nullable=False, default="relay", server_default="relay"
    )
