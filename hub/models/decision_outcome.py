"""decision_outcomes: the direct-mode decisions whose outcome was reported (DESIGN §10.5, §15).

A decision id is sealed under the keyring, not stored, so the hub keeps only the SHA-256 of each
id whose outcome it recorded, until the id expires: a second report of the same call is refused
instead of writing a second ``tool.call`` row.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class DecisionOutcome(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "decision_outcomes"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        UniqueConstraint("tenant_id", "decision_sha256"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    decision_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
