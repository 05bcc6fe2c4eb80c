"""approvals (DESIGN §10.3) and the per-entry argument and naming options of deployments

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "approvals",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("deployment_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("grant_key", sa.String(length=512), nullable=False),
        sa.Column("handle", sa.String(length=64), nullable=False),
        sa.Column("tool_name", sa.String(length=512), nullable=False),
        sa.Column("wire_name", sa.String(length=64), nullable=False),
        sa.Column("arguments_key_id", sa.String(length=32), nullable=False),
        sa.Column("arguments_nonce", sa.LargeBinary(), nullable=False),
        sa.Column("arguments_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("arguments_sha256", sa.String(length=64), nullable=False),
        sa.Column("tool_sha256", sa.String(length=64), nullable=False),
        sa.Column("catalog_version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("requested_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("decided_by", sa.Uuid(), nullable=True),
        sa.Column("decided_at", TS, nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("use_by", TS, nullable=True),
        sa.Column("used_at", TS, nullable=True),
        sa.Column("drift", JSON, nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'approved', 'denied', 'used')", name=op.f("ck_approvals_status")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "agent_id"],
            ["principals.tenant_id", "principals.id"],
            name=op.f("fk_approvals_tenant_id_agent_id_principals"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "deployment_id"],
            ["deployments.tenant_id", "deployments.id"],
            name=op.f("fk_approvals_tenant_id_deployment_id_deployments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approvals")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_approvals_tenant_id_id")),
    )
    op.create_index(
        "ix_approvals_binding",
        "approvals",
        ["deployment_id", "agent_id", "grant_key", "arguments_sha256", "tool_sha256"],
    )
    op.create_index(
        "ix_approvals_tenant_requested", "approvals", ["tenant_id", "requested_at", "id"]
    )
    with op.batch_alter_table("deployment_entries") as batch_op:
        batch_op.add_column(
            sa.Column("arguments", sa.String(length=16), server_default="strict", nullable=False)
        )
        batch_op.add_column(
            sa.Column("tool_names", sa.String(length=16), server_default="prefixed", nullable=False)
        )
        batch_op.create_check_constraint(
            op.f("ck_deployment_entries_arguments"), "arguments IN ('strict', 'schema')"
        )
        batch_op.create_check_constraint(
            op.f("ck_deployment_entries_tool_names"), "tool_names IN ('prefixed', 'plain')"
        )


def downgrade() -> None:
    with op.batch_alter_table("deployment_entries") as batch_op:
        batch_op.drop_constraint(op.f("ck_deployment_entries_tool_names"), type_="check")
        batch_op.drop_constraint(op.f("ck_deployment_entries_arguments"), type_="check")
        batch_op.drop_column("tool_names")
        batch_op.drop_column("arguments")
    op.drop_index("ix_approvals_tenant_requested", table_name="approvals")
    op.drop_index("ix_approvals_binding", table_name="approvals")
    op.drop_table("approvals")
