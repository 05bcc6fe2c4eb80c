"""console_session_tenant_keys: a tenant's console session names its own tenant's rows (stop 46)

Every other reference between two tenant-owned tables is a composite foreign key
``(tenant_id, x_id)`` → ``(tenant_id, id)`` (SECURITY §7.32), so the database itself refuses a row
of one tenant pointing at another's. ``console_sessions`` pointed at its principal and its API key
by id alone. It now also has the composite keys (the plain ones stay: a platform admin's session
has no tenant, and a composite key with a NULL in it is not checked), which need ``api_keys`` to
be unique by ``(tenant_id, id)``.

Revision ID: 0907
Revises: 0906
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0907"
down_revision: str | None = "0906"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.create_unique_constraint(op.f("uq_api_keys_tenant_id_id"), ["tenant_id", "id"])
    with op.batch_alter_table("console_sessions") as batch_op:
        batch_op.create_foreign_key(
            op.f("fk_console_sessions_tenant_id_principal_id_principals"),
            "principals",
            ["tenant_id", "principal_id"],
            ["tenant_id", "id"],
        )
        batch_op.create_foreign_key(
            op.f("fk_console_sessions_tenant_id_api_key_id_api_keys"),
            "api_keys",
            ["tenant_id", "api_key_id"],
            ["tenant_id", "id"],
            ondelete="CASCADE",
        )


def downgrade() -> None:
    with op.batch_alter_table("console_sessions") as batch_op:
        batch_op.drop_constraint(
            op.f("fk_console_sessions_tenant_id_api_key_id_api_keys"), type_="foreignkey"
        )
        batch_op.drop_constraint(
            op.f("fk_console_sessions_tenant_id_principal_id_principals"), type_="foreignkey"
        )
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.drop_constraint(op.f("uq_api_keys_tenant_id_id"), type_="unique")
