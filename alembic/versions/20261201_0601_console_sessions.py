"""console_sessions: the console's server-side sessions (DESIGN §14, §15)

Revision ID: 0601
Revises: 0501
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from hub.core.rls_ddl import disable_tenant_rls, enable_tenant_rls

revision: str = "0601"
down_revision: str | None = "0501"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)

# A console request presents its cookie before its tenant is known, so row-level security would
# hide the row: like ``hub_auth_key`` (0401), the lookup runs as the owner, sets the connection's
# ``hub.tenant_id`` to the session's tenant (the nil UUID for the platform admin's, empty for an
# unknown token) and returns it. EXECUTE is revoked from PUBLIC; ``hub db upgrade`` grants it.
SESSION_LOOKUP_SIGNATURE = "hub_console_session(text)"
SESSION_LOOKUP = """
CREATE FUNCTION hub_console_session(p_token_hash text)
RETURNS TABLE (id uuid, api_key_id uuid, last_seen_at timestamptz, scope text)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT found.id, found.api_key_id, found.last_seen_at, set_config(
        'hub.tenant_id',
        CASE
            WHEN found.id IS NULL THEN ''
            ELSE COALESCE(found.tenant_id::text, '00000000-0000-0000-0000-000000000000')
        END,
        false
    )
    FROM (SELECT 1) AS one
    LEFT JOIN (
        SELECT s.id, s.api_key_id, s.last_seen_at, s.tenant_id
        FROM console_sessions s
        WHERE s.token_hash = p_token_hash
    ) AS found ON true
$$
"""


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("principal_id", sa.Uuid(), nullable=False),
        sa.Column("api_key_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("last_seen_at", TS, nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["api_key_id"],
            ["api_keys.id"],
            name=op.f("fk_console_sessions_api_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["principal_id"],
            ["principals.id"],
            name=op.f("fk_console_sessions_principal_id_principals"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_console_sessions_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_console_sessions_token_hash")),
    )
    op.create_index("ix_console_sessions_api_key_id", "console_sessions", ["api_key_id"])
    enable_tenant_rls(op, "console_sessions")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(SESSION_LOOKUP)
        op.execute(f"REVOKE ALL ON FUNCTION {SESSION_LOOKUP_SIGNATURE} FROM PUBLIC")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP FUNCTION IF EXISTS {SESSION_LOOKUP_SIGNATURE}")
    disable_tenant_rls(op, "console_sessions")
    op.drop_index("ix_console_sessions_api_key_id", table_name="console_sessions")
    op.drop_table("console_sessions")
