"""audit_chain_heads: the last link of each audit chain, the row writers lock to append.

``chain`` is ``platform`` or ``tenant:<uuid>``. Appending to a chain locks its head row
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` write transactions are
serialised already), reads ``seq``/``last_hash``, inserts the next row and moves the head, all in
the writer's transaction, so concurrent writers on any replica never fork a chain. Verification
compares the head with the last row, so rows deleted from the end of a chain are found too.
"""

from __future__ import annotations

import uuid

from sqlalchemy import BigInteger, ForeignKey, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.models.base import Base


class AuditChainHead(Base):
    __tablename__ = "audit_chain_heads"

    chain: Mapped[str] = mapped_column(String(48), primary_key=True)
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid(), ForeignKey("tenants.id"), nullable=True
    )
    seq: Mapped[int] = mapped_column(BigInteger(), nullable=False)
    last_id: Mapped[uuid.UUID | None] = mapped_column(Uuid(), nullable=True)
    last_hash: Mapped[str] = mapped_column(String(64), nullable=False)
