"""server_probes and catalog_drift: the drift watch's live hashes and marks (DESIGN §10.6, §15)

Revision ID: 0701
Revises: 0601
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from hub.core.rls_ddl import disable_tenant_rls, enable_tenant_rls

revision: str = "0701"
down_revision: str | None = "0601"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "server_probes",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("server_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("checked_at", TS, nullable=True),
        sa.Column("complete_at", TS, nullable=True),
        sa.Column("next_probe_at", TS, nullable=False),
        sa.Column("live_hashes", JSON, nullable=True),
        sa.Column("live_tools", JSON, nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.CheckConstraint("status IN ('ok', 'unknown')", name=op.f("ck_server_probes_status")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "server_id"],
            ["servers.tenant_id", "servers.id"],
            name=op.f("fk_server_probes_tenant_id_server_id_servers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_server_probes")),
        sa.UniqueConstraint("server_id", name=op.f("uq_server_probes_server_id")),
    )
    op.create_index("ix_server_probes_next_probe_at", "server_probes", ["next_probe_at"])
    op.create_table(
        "catalog_drift",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("catalog_id", sa.Uuid(), nullable=False),
        sa.Column("server_id", sa.Uuid(), nullable=False),
        sa.Column("tools", JSON, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "catalog_id"],
            ["catalogs.tenant_id", "catalogs.id"],
            name=op.f("fk_catalog_drift_tenant_id_catalog_id_catalogs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_drift")),
        sa.UniqueConstraint(
            "tenant_id", "catalog_id", name=op.f("uq_catalog_drift_tenant_id_catalog_id")
        ),
    )
    enable_tenant_rls(op, "server_probes")
    enable_tenant_rls(op, "catalog_drift")


def downgrade() -> None:
    disable_tenant_rls(op, "catalog_drift")
    disable_tenant_rls(op, "server_probes")
    op.drop_table("catalog_drift")
    op.drop_index("ix_server_probes_next_probe_at", table_name="server_probes")
    op.drop_table("server_probes")
