"""identity and grants: tenants, principals, api_keys, audit_events, grants

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

# audit_events is append-only: on PostgreSQL a trigger refuses UPDATE and DELETE outright.
AUDIT_GUARD_FN = """
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only';
END;
$$
"""
AUDIT_GUARD_TRIGGER = """
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()
"""


def upgrade() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("slug", sa.String(length=63), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint("status IN ('active', 'disabled')", name=op.f("ck_tenants_status")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("slug", name=op.f("uq_tenants_slug")),
    )
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("at", TS, nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=True),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("resource", sa.String(length=512), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("request_id", sa.String(length=128), nullable=True),
        sa.Column("details", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_audit_events_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_tenant_at", "audit_events", ["tenant_id", "at", "id"])
    op.create_table(
        "principals",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=True),
        sa.Column("is_platform_admin", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("disabled_at", TS, nullable=True),
        sa.Column("grants_version", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint("kind IN ('user', 'agent', 'service')", name=op.f("ck_principals_kind")),
        sa.CheckConstraint(
            "role IS NULL OR role IN ('tenant_admin', 'operator', 'deployer', 'agent')",
            name=op.f("ck_principals_role"),
        ),
        sa.CheckConstraint(
            "(is_platform_admin AND tenant_id IS NULL) OR (NOT is_platform_admin "
            "AND tenant_id IS NOT NULL)",
            name=op.f("ck_principals_platform_or_tenant"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_principals_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_principals")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_principals_tenant_id_id")),
    )
    op.create_index("ix_principals_tenant_created", "principals", ["tenant_id", "created_at", "id"])
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("principal_id", sa.Uuid(), nullable=False),
        sa.Column("key_id", sa.String(length=12), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=24), nullable=False),
        sa.Column("last4", sa.String(length=4), nullable=False),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["principal_id"], ["principals.id"], name=op.f("fk_api_keys_principal_id_principals")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "principal_id"],
            ["principals.tenant_id", "principals.id"],
            name=op.f("fk_api_keys_tenant_id_principal_id_principals"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_api_keys_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_id", name=op.f("uq_api_keys_key_id")),
    )
    op.create_index(
        "ix_api_keys_principal_created", "api_keys", ["principal_id", "created_at", "id"]
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("principal_id", sa.Uuid(), nullable=False),
        sa.Column("resource", sa.String(length=512), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("effect", sa.String(length=8), nullable=False),
        sa.Column("conditions", JSON, nullable=False),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("created_by", sa.Uuid(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint("effect IN ('allow', 'ask', 'deny')", name=op.f("ck_grants_effect")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "principal_id"],
            ["principals.tenant_id", "principals.id"],
            name=op.f("fk_grants_tenant_id_principal_id_principals"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grants")),
        sa.UniqueConstraint(
            "principal_id",
            "resource",
            "action",
            name=op.f("uq_grants_principal_id_resource_action"),
        ),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_grants_tenant_id_id")),
    )
    op.create_index("ix_grants_tenant_created", "grants", ["tenant_id", "created_at", "id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(AUDIT_GUARD_FN)
        op.execute(AUDIT_GUARD_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER audit_events_append_only ON audit_events")
        op.execute("DROP FUNCTION audit_events_append_only()")
    op.drop_index("ix_grants_tenant_created", table_name="grants")
    op.drop_table("grants")
    op.drop_index("ix_api_keys_principal_created", table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_index("ix_principals_tenant_created", table_name="principals")
    op.drop_table("principals")
    op.drop_index("ix_audit_events_tenant_at", table_name="audit_events")
    op.drop_table("audit_events")
    op.drop_table("tenants")
