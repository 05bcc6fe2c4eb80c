"""oauth_authorizations: one authorization-code flow, from its URL to its callback (DESIGN §9, §15).

The row is the flow's whole memory, because the callback carries nothing but ``state``: the state
itself is never stored, only its SHA-256 (``state_hash``, unique), so a database read does not
yield a usable callback. It binds the flow to its tenant, initiator, server (or the credential
being re-authorised, or the name of a new one), the issuer whose ``iss`` the callback must carry
(RFC 9207), the redirect URI, the client id, how it was had (``client_registration``: a
client an operator pre-registered is kept for the tenant and issuer only once its code is
redeemed) and its authentication method, the RFC 8707 resource and the scopes asked for. The
PKCE verifier and the client secret are encrypted with the row's own
AAD (``hub/oauth-state/v1``). A row is redeemed at most once: ``status`` moves from ``pending``
to ``redeeming`` by one conditional update that only one callback can win, then to
``completed`` or ``failed`` (with ``reason``); after ``expires_at`` (10 minutes) it is dead.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    LargeBinary,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin

AUTHORIZATION_STATUSES = ("pending", "redeeming", "completed", "failed")


class OAuthAuthorization(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "oauth_authorizations"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        UniqueConstraint("state_hash"),
        ForeignKeyConstraint(["tenant_id", "server_id"], ["servers.tenant_id", "servers.id"]),
        ForeignKeyConstraint(
            ["tenant_id", "credential_id"], ["credentials.tenant_id", "credentials.id"]
        ),
        CheckConstraint("status IN ('pending', 'redeeming', 'completed', 'failed')", name="status"),
        Index("ix_oauth_authorizations_credential", "tenant_id", "credential_id", "created_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    state_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="pending")
    reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    initiator_id: Mapped[uuid.UUID] = mapped_column(
        Uuid(), ForeignKey("principals.id"), nullable=False
    )
    server_id: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    # the credential re-authorised in place (step-up, a server's own), then the one written
    credential_id: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    credential_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    step_up: Mapped[bool] = mapped_column(Boolean(), nullable=False, default=False)
    server_url: Mapped[str] = mapped_column(String(2048), nullable=False)
    resource: Mapped[str] = mapped_column(String(2048), nullable=False)
    issuer: Mapped[str] = mapped_column(String(2048), nullable=False)
    iss_required: Mapped[bool] = mapped_column(Boolean(), nullable=False, default=False)
    token_endpoint: Mapped[str] = mapped_column(String(2048), nullable=False)
    client_id: Mapped[str] = mapped_column(String(2048), nullable=False)
    auth_method: Mapped[str] = mapped_column(String(32), nullable=False)
    client_registration: Mapped[str | None] = mapped_column(String(32), nullable=True)
    scopes: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    redirect_uri: Mapped[str] = mapped_column(String(2048), nullable=False)
    verifier_key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    verifier_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    verifier_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    client_secret_key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    client_secret_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    client_secret_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
