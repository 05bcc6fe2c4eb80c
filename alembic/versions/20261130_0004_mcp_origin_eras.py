"""mcp_origin_eras: remembered protocol era per (tenant, origin)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_origin_eras",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("origin", sa.String(length=512), nullable=False),
        sa.Column("era", sa.String(length=16), nullable=False),
        sa.Column("protocol_version", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("era IN ('modern', 'legacy')", name=op.f("ck_mcp_origin_eras_era")),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_mcp_origin_eras_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("tenant_id", "origin", name=op.f("pk_mcp_origin_eras")),
    )


def downgrade() -> None:
    op.drop_table("mcp_origin_eras")
