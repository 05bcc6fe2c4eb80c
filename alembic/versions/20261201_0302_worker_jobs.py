"""worker_jobs: due background work claimed by leader-free workers (DESIGN §11, §15)

Revision ID: 0302
Revises: 0301
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0302"
down_revision: str | None = "0301"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "worker_jobs",
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=256), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("due_at", TS, nullable=False),
        sa.Column("lease_until", TS, nullable=True),
        sa.Column("holder", sa.String(length=128), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(length=128), nullable=True),
        sa.Column("last_run_at", TS, nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_worker_jobs_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker_jobs")),
        sa.UniqueConstraint("kind", "key", name=op.f("uq_worker_jobs_kind_key")),
    )
    op.create_index("ix_worker_jobs_due", "worker_jobs", ["due_at"])


def downgrade() -> None:
    op.drop_index("ix_worker_jobs_due", table_name="worker_jobs")
    op.drop_table("worker_jobs")
