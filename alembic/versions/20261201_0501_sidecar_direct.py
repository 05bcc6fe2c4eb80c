"""sidecar direct mode: a per-entry mode and the deployment's sidecar principal (DESIGN §15)

Revision ID: 0501
Revises: 0401
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0501"
down_revision: str | None = "0401"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("deployment_entries") as batch_op:
        batch_op.add_column(
            sa.Column("mode", sa.String(length=16), server_default="relay", nullable=False)
        )
        batch_op.create_check_constraint(
            op.f("ck_deployment_entries_mode"), "mode IN ('relay', 'direct')"
        )
    with op.batch_alter_table("deployments") as batch_op:
        batch_op.add_column(sa.Column("sidecar_id", sa.Uuid(), nullable=True))
        batch_op.create_foreign_key(
            op.f("fk_deployments_tenant_id_sidecar_id_principals"),
            "principals",
            ["tenant_id", "sidecar_id"],
            ["tenant_id", "id"],
        )


def downgrade() -> None:
    with op.batch_alter_table("deployments") as batch_op:
        batch_op.drop_constraint(
            op.f("fk_deployments_tenant_id_sidecar_id_principals"), type_="foreignkey"
        )
        batch_op.drop_column("sidecar_id")
    with op.batch_alter_table("deployment_entries") as batch_op:
        batch_op.drop_constraint(op.f("ck_deployment_entries_mode"), type_="check")
        batch_op.drop_column("mode")
