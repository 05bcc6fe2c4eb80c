"""decision_outcomes: the direct-mode decisions handed out, until reported or audited unreported
(DESIGN §10.5, §15).

A decision id is sealed under the keyring, not stored, so the hub keeps the SHA-256 of each id it
hands out (``state`` ``open``, with the audit fields of the call it allowed in ``call``: hashes
and versions, never argument values) until the id expires. The outcome's report moves the row to
``reported``, so a second report of the same call is refused instead of writing a second
``tool.call`` row; a row still ``open`` after the id expired is the call of a sidecar that never
reported, audited as ``unreported`` by the sweep (:mod:`hub.gateway.adapters.unreported`).
Rows of ids handed out before migration 0908 hold no ``call`` and are ``reported`` when their
report comes.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import JSONType, UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin

__all__ = ["DecisionOutcome"]


class DecisionOutcome(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "decision_outcomes"
    __table_args__ = (
        UniqueConstraint("tenant_id", "id"),
        UniqueConstraint("tenant_id", "decision_sha256"),
        # the sweep's reads: a tenant's rows past their expiry (migration 0908)
        Index("ix_decision_outcomes_tenant_id_expires_at", "tenant_id", "expires_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid(), ForeignKey("tenants.id"), nullable=False)
    decision_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    # ``open`` (handed out), ``reported`` or ``unreported`` (its tool.call row written)
    state: Mapped[str] = mapped_column(String(16), nullable=False, server_default="reported")
    call: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
