"""An approval's status as read, computed from what is stored and the clock (DESIGN §15).

Stored: ``pending``, ``approved``, ``denied``, ``used``. Read: a ``pending`` row whose
``expires_at`` has passed, and an ``approved`` row whose ``use_by`` has passed, are ``expired``.
The same rules are SQL conditions (:func:`status_condition`) so lists filter on what they show.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_

from hub.approvals.schemas import ApprovalStatus
from hub.models import Approval

__all__ = ["is_live_pending", "is_usable", "status_condition", "status_of"]


def status_of(row: Approval, now: datetime) -> ApprovalStatus:
    if row.status == "pending" and row.expires_at <= now:
        return "expired"
    if row.status == "approved" and (row.use_by is None or row.use_by <= now):
        return "expired"
    status: ApprovalStatus = row.status  # type: ignore[assignment]
    return status


def is_live_pending(row: Approval, now: datetime) -> bool:
    return row.status == "pending" and row.expires_at > now


def is_usable(row: Approval, now: datetime) -> bool:
    """Rule (a) of DESIGN §10.3: approved, never used, inside its use window."""
    return (
        row.status == "approved"
        and row.used_at is None
        and row.use_by is not None
        and row.use_by > now
    )


def status_condition(status: ApprovalStatus, now: datetime) -> Any:
    """The SQL condition matching rows whose read status is ``status`` at ``now``."""
    if status == "pending":
        return and_(Approval.status == "pending", Approval.expires_at > now)
    if status == "approved":
        return and_(Approval.status == "approved", Approval.use_by > now)
    if status == "expired":
        return or_(
            and_(Approval.status == "pending", Approval.expires_at <= now),
            and_(Approval.status == "approved", Approval.use_by <= now),
        )
    return Approval.status == status
