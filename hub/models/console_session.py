"""console_sessions: a signed-in console browser, exchanged for an API key (DESIGN §14, §15).

The cookie carries a random token; only its SHA-256 is stored. A row is tied to the key it was
opened with: revoking the key deletes its rows (and every request checks the key anyway), and a
row not seen for ``HUB_CONSOLE_IDLE_S`` is expired.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, ForeignKeyConstraint, Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class ConsoleSession(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "console_sessions"
    __table_args__ = (
        Index("ix_console_sessions_api_key_id", "api_key_id"),
        # a tenant's session names its own tenant's principal and key (SECURITY §7.32); a
        # platform admin's has no tenant, and the plain keys below hold it
        ForeignKeyConstraint(
            ["tenant_id", "principal_id"], ["principals.tenant_id", "principals.id"]
        ),
        ForeignKeyConstraint(
            ["tenant_id", "api_key_id"], ["api_keys.tenant_id", "api_keys.id"], ondelete="CASCADE"
        ),
    )

    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid(), ForeignKey("tenants.id"), nullable=True
    )
    principal_id: Mapped[uuid.UUID] = mapped_column(
        Uuid(), ForeignKey("principals.id"), nullable=False
    )
    api_key_id: Mapped[uuid.UUID] = mapped_column(
        Uuid(), ForeignKey("api_keys.id", ondelete="CASCADE"), nullable=False
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
