"""audit_filter_indexes: the audit trail filtered by a rare outcome or action, at any length
(issue 13)

``GET …/audit?outcome=failed`` (and the console's filter, and ``hub audit tail --outcome``) walked
the tenant's rows by time and dropped the ones that did not match: 20 to 30 ms a page over
100,000 rows with no match, growing with the chain (a tenant whose agents make 350 calls a second
writes 30 million rows a day). Two partial indexes hold only the rows such filters look for:
outcomes other than ``success`` and actions other than ``tool.call`` (the rows most of a chain
is made of are in neither, so a tool call's audit insert maintains neither). Measured on the same
100,000 rows: 2 ms.

On PostgreSQL each is built ``CONCURRENTLY`` (outside a transaction): tool calls keep appending
to a large ``audit_events`` while it is built.

Revision ID: 0905
Revises: 0904
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0905"
down_revision: str | None = "0904"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: name -> (columns, predicate); the same as hub.models.audit_event's
_INDEXES = {
    "ix_audit_events_tenant_outcome_at": (
        ["tenant_id", "outcome", "at", "id"],
        "outcome <> 'success'",
    ),
    "ix_audit_events_tenant_action_at": (
        ["tenant_id", "action", "at", "id"],
        "action <> 'tool.call'",
    ),
}


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, (columns, predicate) in _INDEXES.items():
        where = sa.text(predicate)
        if postgresql:
            with op.get_context().autocommit_block():
                op.create_index(
                    name,
                    "audit_events",
                    columns,
                    postgresql_where=where,
                    postgresql_concurrently=True,
                )
        else:
            op.create_index(name, "audit_events", columns, sqlite_where=where)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name in _INDEXES:
        if postgresql:
            with op.get_context().autocommit_block():
                op.drop_index(name, "audit_events", postgresql_concurrently=True)
        else:
            op.drop_index(name, "audit_events")
