"""servers catalogs deployments

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "deployments",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_id"],
            ["principals.tenant_id", "principals.id"],
            name=op.f("fk_deployments_tenant_id_agent_id_principals"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_deployments_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployments")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_deployments_tenant_id_id")),
    )
    op.create_index(
        "ix_deployments_tenant_created", "deployments", ["tenant_id", "created_at", "id"]
    )

    op.create_table(
        "servers",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("handle", sa.String(length=63), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("credential_id", sa.Uuid(), nullable=True),
        sa.Column("era", sa.String(length=16), nullable=True),
        sa.Column("protocol_version", sa.String(length=32), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("deleted_at", TS, nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint(
            "era IS NULL OR era IN ('modern', 'legacy')", name=op.f("ck_servers_era")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "credential_id"],
            ["credentials.tenant_id", "credentials.id"],
            name=op.f("fk_servers_tenant_id_credential_id_credentials"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_servers_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_servers")),
        sa.UniqueConstraint("tenant_id", "handle", name=op.f("uq_servers_tenant_id_handle")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_servers_tenant_id_id")),
    )
    op.create_index("ix_servers_tenant_created", "servers", ["tenant_id", "created_at", "id"])

    op.create_table(
        "catalogs",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("server_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("protocol_version", sa.String(length=32), nullable=False),
        sa.Column("server_info", JSON, nullable=False),
        sa.Column("capabilities", JSON, nullable=False),
        sa.Column("instructions", sa.Text(), nullable=True),
        sa.Column("tools", JSON, nullable=False),
        sa.Column("tool_hashes", JSON, nullable=False),
        sa.Column("discovered_at", TS, nullable=False),
        sa.Column("discovered_by", sa.Uuid(), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "server_id"],
            ["servers.tenant_id", "servers.id"],
            name=op.f("fk_catalogs_tenant_id_server_id_servers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalogs")),
        sa.UniqueConstraint("server_id", "version", name=op.f("uq_catalogs_server_id_version")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_catalogs_tenant_id_id")),
    )
    op.create_table(
        "deployment_entries",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("deployment_id", sa.Uuid(), nullable=False),
        sa.Column("server_id", sa.Uuid(), nullable=False),
        sa.Column("catalog_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("allow_without_ask", JSON, nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "catalog_id"],
            ["catalogs.tenant_id", "catalogs.id"],
            name=op.f("fk_deployment_entries_tenant_id_catalog_id_catalogs"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "deployment_id"],
            ["deployments.tenant_id", "deployments.id"],
            name=op.f("fk_deployment_entries_tenant_id_deployment_id_deployments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "server_id"],
            ["servers.tenant_id", "servers.id"],
            name=op.f("fk_deployment_entries_tenant_id_server_id_servers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployment_entries")),
        sa.UniqueConstraint(
            "deployment_id", "server_id", name=op.f("uq_deployment_entries_deployment_id_server_id")
        ),
    )
    op.create_index("ix_deployment_entries_server", "deployment_entries", ["server_id"])


def downgrade() -> None:
    op.drop_index("ix_deployment_entries_server", table_name="deployment_entries")

    op.drop_table("deployment_entries")
    op.drop_table("catalogs")
    op.drop_index("ix_servers_tenant_created", table_name="servers")

    op.drop_table("servers")
    op.drop_index("ix_deployments_tenant_created", table_name="deployments")

    op.drop_table("deployments")
