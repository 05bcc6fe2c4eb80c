"""plpgsql_lookups: the per-request SECURITY DEFINER lookups keep their plans (issue 13)

``hub_auth_key`` (0401) runs on every authenticated request and ``hub_console_session`` (0601) on
every console request. As ``LANGUAGE sql`` functions with a ``SET search_path`` clause they can
never be inlined, and PostgreSQL parses and plans a non-inlined SQL function's body on every
call: measured on the bench database, ``SELECT * FROM hub_auth_key($1)`` took 289-325 µs a call
against 88-104 µs for ``SELECT $1::text`` on the same connection. A plpgsql body keeps its
prepared plan for the connection's life: 151 µs. Same arguments, result columns, owner, search
path and privileges (``CREATE OR REPLACE`` keeps the grants); only the language changes.
PostgreSQL only, like the functions.

Revision ID: 0901
Revises: 0801
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0901"
down_revision: str | None = "0801"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HEADER = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"

#: (signature, RETURNS clause, body: one SELECT) of each lookup
LOOKUPS = (
    (
        "hub_auth_key(p_key_id text)",
        """TABLE (
    api_key_id uuid, key_hash text, revoked_at timestamptz, expires_at timestamptz,
    last_used_at timestamptz, principal_id uuid, tenant_id uuid, kind text, role text,
    is_platform_admin boolean, disabled_at timestamptz, grants_version integer,
    tenant_status text, scope text
)""",
        """SELECT found.*, set_config(
        'hub.tenant_id',
        CASE
            WHEN found.principal_id IS NULL THEN ''
            ELSE COALESCE(found.tenant_id::text, '00000000-0000-0000-0000-000000000000')
        END,
        false
    )
    FROM (SELECT 1) AS one
    LEFT JOIN (
        SELECT k.id, k.key_hash::text, k.revoked_at, k.expires_at, k.last_used_at,
               p.id AS principal_id, p.tenant_id, p.kind::text, p.role::text,
               p.is_platform_admin, p.disabled_at, p.grants_version, t.status::text
        FROM api_keys k
        JOIN principals p ON p.id = k.principal_id
        LEFT JOIN tenants t ON t.id = p.tenant_id
        WHERE k.key_id = p_key_id
    ) AS found ON true""",
    ),
    (
        "hub_console_session(p_token_hash text)",
        "TABLE (id uuid, api_key_id uuid, last_seen_at timestamptz, scope text)",
        """SELECT found.id, found.api_key_id, found.last_seen_at, set_config(
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
    ) AS found ON true""",
    ),
)


def _ddl(signature: str, returns: str, body: str, *, plpgsql: bool) -> str:
    if plpgsql:
        # the output columns are in scope as variables: qualify every column (the bodies do)
        code = f"#variable_conflict use_column\nBEGIN\n    RETURN QUERY {body};\nEND"
        language = "plpgsql"
    else:
        code, language = body, "sql"
    return (
        f"CREATE OR REPLACE FUNCTION {signature}\nRETURNS {returns}\n"
        f"LANGUAGE {language} VOLATILE {_HEADER} AS $$\n{code}\n$$"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for signature, returns, body in LOOKUPS:
        op.execute(_ddl(signature, returns, body, plpgsql=True))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for signature, returns, body in LOOKUPS:
        op.execute(_ddl(signature, returns, body, plpgsql=False))
