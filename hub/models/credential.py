"""credentials: encrypted secrets for reaching upstream servers (DESIGN §3, §9).

Each encrypted field is three columns (key id, nonce, ciphertext; see ``hub.core.crypto``) whose
AAD binds tenant, credential id and field name. ``version`` is the optimistic lock: every change a
client makes bumps it (an OAuth re-authorisation too); key rotation and token refreshes do not.

An ``oauth_token`` credential made by the hub's OAuth flow (``hub/oauth``) also has its OAuth
columns — issuer, token endpoint, client id and authentication method, RFC 8707 resource,
scopes, the MCP server URL it was authorised for — which only the hub writes (no PATCH reaches
them), and the refresh lease: ``refresh_lease_until`` and ``refresh_lease_holder`` name the one
caller (on any replica) refreshing the token right now (DESIGN §15 "Leases").
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin

ENCRYPTED_FIELDS = ("secret", "refresh_token", "client_secret")


class Credential(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "credentials"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        CheckConstraint("status IN ('active', 'error', 'revoked')", name="status"),
        Index("ix_credentials_tenant_created", "tenant_id", "created_at", "id"),
        Index("ix_credentials_secret_key_id", "secret_key_id"),
        Index("ix_credentials_refresh_due", "type", "status", "expires_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    type: Mapped[str] = mapped_column(String(32), nullable=False)
    api_base_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="active")
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, nullable=False, default=dict)
    version: Mapped[int] = mapped_column(
        Integer(), nullable=False, default=1, server_default=text("1")
    )
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)

    secret_key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    secret_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    secret_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    refresh_token_key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    refresh_token_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    refresh_token_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    client_secret_key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    client_secret_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    client_secret_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)

    # OAuth (hub-written only)
    oauth_issuer: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    oauth_token_endpoint: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    oauth_client_id: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    oauth_auth_method: Mapped[str | None] = mapped_column(String(32), nullable=True)
    oauth_resource: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    oauth_scopes: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    oauth_server_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    refresh_lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    refresh_lease_holder: Mapped[str | None] = mapped_column(String(64), nullable=True)

    @property
    def has_secret(self) -> bool:
        return self.secret_ciphertext is not None

    @property
    def has_refresh_token(self) -> bool:
        return self.refresh_token_ciphertext is not None

    @property
    def is_oauth(self) -> bool:
        """Made (or re-authorised) by the hub's OAuth flow: it knows how to refresh itself."""
        return self.type == "oauth_token" and self.oauth_token_endpoint is not None
