"""Bodies of the audit routes (DESIGN §11, §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AuditEventRead", "AuditVerifyRead"]


class AuditEventRead(BaseModel):
    """One audit row, with its place in its chain (``seq``, ``prev_hash``, ``hash``)."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    tenant_id: uuid.UUID | None
    seq: int
    at: datetime
    actor_id: uuid.UUID | None
    action: str
    resource: str
    #: the hub writes one of :data:`~hub.audit.actions.Outcome`; read as any string, so that a
    #: row a newer version wrote (an outcome added since) reads instead of failing the page or
    #: cutting an export short (seen: 0908's ``unreported`` under the version before it)
    outcome: str = Field(
        description="success, denied, failed, pending or unreported (a newer hub may add others)"
    )
    request_id: str | None
    details: dict[str, Any]
    prev_hash: str
    hash: str


class AuditVerifyRead(BaseModel):
    """The chain check: ``ok``, the rows ``checked`` and the first row that breaks the chain.

    ``reason`` says how it breaks (``hash_mismatch``: a row was changed; ``broken_link`` or
    ``sequence_gap``: the row before it was deleted or replaced; ``missing_rows``: rows were cut
    from the end, ``first_bad_id`` naming the last one the head remembers; ``beyond_head``: a row
    was added without moving the head). ``head_seq`` and ``head_hash`` are the chain's last row
    and hash, for anchoring elsewhere (a SIEM, a ticket) so a later rewrite of the whole chain
    shows too; given back as ``after_seq`` and ``after_hash``, the next check starts there and
    reads only the rows written since (``checked`` counts those).
    """

    ok: bool
    checked: int
    first_bad_id: uuid.UUID | None
    reason: str | None = None
    head_hash: str | None = None
    head_seq: int | None = None
