"""oauth_clients: the hub's client registration at one authorization server, per tenant (DESIGN §9).

One row per (tenant, issuer): a client registered by RFC 7591 dynamic registration, or given by
an operator (pre-registered). MCP (2026-07-28, "Client Registration") binds client credentials
to the authorization server that issued them, so a new issuer means a new row, and a row is never
used with another issuer. A client-ID metadata document needs no row (its client id is the
hub's own URL). ``redirect_uri`` is the one registered; when ``HUB_PUBLIC_URL`` moves, a
dynamic registration is made again. The client secret is encrypted like a credential field,
with its own AAD prefix (``hub/oauth-client/v1``).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, LargeBinary, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class OAuthClient(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "oauth_clients"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        UniqueConstraint("tenant_id", "issuer"),
        CheckConstraint("registration IN ('dynamic', 'pre_registered')", name="registration"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    issuer: Mapped[str] = mapped_column(String(2048), nullable=False)
    client_id: Mapped[str] = mapped_column(String(2048), nullable=False)
    auth_method: Mapped[str] = mapped_column(String(32), nullable=False)
    registration: Mapped[str] = mapped_column(String(16), nullable=False)
    redirect_uri: Mapped[str] = mapped_column(String(2048), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)
    client_secret_key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    client_secret_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
    client_secret_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary(), nullable=True)
