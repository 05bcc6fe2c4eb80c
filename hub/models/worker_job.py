"""worker_jobs: background work that is due, claimed by leader-free workers (DESIGN §11, §15).

One row per job instance: its registered ``kind`` and an instance ``key`` (``""`` for a
singleton), when it is ``due_at``, and while a worker holds it, ``holder`` and ``lease_until``.
:mod:`hub.core.workers` claims, runs and finishes rows; it reaches this table through a
lightweight table clause of its own (core imports no model), checked against this model by
``tests/core/test_workers.py``.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base, CreatedAtMixin, IdMixin


class WorkerJob(IdMixin, CreatedAtMixin, Base):
    __tablename__ = "worker_jobs"
    __table_args__ = (
        UniqueConstraint("kind", "key"),
        Index("ix_worker_jobs_due", "due_at"),
    )

    kind: Mapped[str] = mapped_column(String(64), nullable=False)
    key: Mapped[str] = mapped_column(String(256), nullable=False, default="")
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid(), ForeignKey("tenants.id"), nullable=True
    )
    due_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    holder: Mapped[str | None] = mapped_column(String(128), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer(), nullable=False, default=0)
    # the exception's type name only: its message could quote a secret
    last_error: Mapped[str | None] = mapped_column(String(128), nullable=True)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
