"""open_decisions: a direct-mode decision is recorded when it is handed out (issue 14, stop 51)

``decision_outcomes`` held only the ids whose outcome was reported, so a sidecar that died (or
never meant to report) after a call was allowed left no audit row of that call at all. A decision
is now recorded as it is handed out: ``state`` ``open``, with ``call``, the audit fields of the
call it allowed (hashes and versions, never argument values); the report moves it to
``reported``, and a sweep audits one still ``open`` after its expiry as ``unreported``. The rows
already there are reported ones (the server default). The index serves the sweep's reads of a
tenant's rows past their expiry. The table holds about one decision lifetime of calls, so the
index is built in the migration's transaction.

Revision ID: 0908
Revises: 0907
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0908"
down_revision: str | None = "0907"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_INDEX = "ix_decision_outcomes_tenant_id_expires_at"


def upgrade() -> None:
    with op.batch_alter_table("decision_outcomes") as batch_op:
        batch_op.add_column(
            sa.Column("state", sa.String(length=16), server_default="reported", nullable=False)
        )
        batch_op.add_column(sa.Column("call", JSON, nullable=True))
    op.create_index(_INDEX, "decision_outcomes", ["tenant_id", "expires_at"])


def downgrade() -> None:
    op.drop_index(_INDEX, "decision_outcomes")
    with op.batch_alter_table("decision_outcomes") as batch_op:
        batch_op.drop_column("call")
        batch_op.drop_column("state")
