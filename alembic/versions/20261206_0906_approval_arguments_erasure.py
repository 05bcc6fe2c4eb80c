"""approval_arguments_erasure: the approvals whose arguments are still held, by expiry (stop 45)

An approval keeps the call's arguments, encrypted, for approvers to read; up to 2 MiB each, and an
agent may keep 50 pending at a time, so one agent could leave gigabytes a day that nothing
removed. The ``approvals.erase_arguments`` job now erases them ``HUB_APPROVAL_ARGUMENTS_KEEP_S``
after the approval could last be used. This partial index holds only the rows whose arguments
are still there, so each pass reads what it erases and not the tenant's whole history.

On PostgreSQL it is built ``CONCURRENTLY`` (outside a transaction): ask calls keep adding rows.

Revision ID: 0906
Revises: 0905
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0906"
down_revision: str | None = "0905"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAME = "ix_approvals_tenant_held_arguments"
_COLUMNS = ["tenant_id", "expires_at"]
_PREDICATE = "arguments_key_id <> ''"  # as hub.models.approval.HELD_ARGUMENTS


def upgrade() -> None:
    where = sa.text(_PREDICATE)
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.create_index(
                _NAME, "approvals", _COLUMNS, postgresql_where=where, postgresql_concurrently=True
            )
    else:
        op.create_index(_NAME, "approvals", _COLUMNS, sqlite_where=where)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.drop_index(_NAME, "approvals", postgresql_concurrently=True)
    else:
        op.drop_index(_NAME, "approvals")
