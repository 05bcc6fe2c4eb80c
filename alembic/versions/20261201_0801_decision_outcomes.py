"""decision_outcomes: the direct-mode decisions whose outcome was reported (DESIGN §10.5, §15)

Revision ID: 0801
Revises: 0701
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from hub.core.rls_ddl import disable_tenant_rls, enable_tenant_rls

revision: str = "0801"
down_revision: str | None = "0701"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "decision_outcomes",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("decision_sha256", sa.String(length=64), nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_decision_outcomes_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decision_outcomes")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_decision_outcomes_tenant_id_id")),
        sa.UniqueConstraint(
            "tenant_id",
            "decision_sha256",
            name=op.f("uq_decision_outcomes_tenant_id_decision_sha256"),
        ),
    )
    enable_tenant_rls(op, "decision_outcomes")


def downgrade() -> None:
    disable_tenant_rls(op, "decision_outcomes")
    op.drop_table("decision_outcomes")
