"""row-level security on every tenant table, and the SECURITY DEFINER reads (DESIGN §11, §15)

Every table with a ``tenant_id`` gets RLS enabled, forced and the ``tenant_scope`` policy
(:mod:`hub.core.rls_ddl`). Three reads happen before a tenant is known and go through functions
owned by the migration role, ``SECURITY DEFINER`` with a fixed ``search_path``:

- ``hub_auth_key(key_id)``: the key row, its principal and tenant status (authentication); it
  also sets the connection's ``hub.tenant_id`` to the key's tenant (the nil UUID for the
  platform admin's, empty for an unknown key) and returns it, so the request's scope costs no
  statement of its own: whoever fails to authenticate gets a 401 and runs nothing else;
- ``hub_oauth_state_tenant(state_hash)``: the tenant of an OAuth flow (the callback);
- ``hub_claim_jobs(kinds, lease_seconds, now, lim, holder)``: due jobs claimed with
  ``FOR UPDATE SKIP LOCKED`` and leased to ``holder`` (the workers).

EXECUTE on them is revoked from PUBLIC; ``hub db upgrade`` grants it (and the tables) to
``HUB_DATABASE_APP_ROLE``. PostgreSQL only: SQLite has no RLS and the app reads it directly.

Revision ID: 0401
Revises: 0302
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

from hub.core.rls_ddl import disable_tenant_rls, enable_tenant_rls

revision: str = "0401"
down_revision: str | None = "0302"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TENANT_TABLES = (
    "audit_chain_heads",
    "audit_events",
    "credentials",
    "mcp_origin_eras",
    "oauth_clients",
    "principals",
    "worker_jobs",
    "api_keys",
    "deployments",
    "grants",
    "servers",
    "approvals",
    "catalogs",
    "oauth_authorizations",
    "deployment_entries",
)

AUTH_KEY = """
CREATE FUNCTION hub_auth_key(p_key_id text)
RETURNS TABLE (
    api_key_id uuid, key_hash text, revoked_at timestamptz, expires_at timestamptz,
    last_used_at timestamptz, principal_id uuid, tenant_id uuid, kind text, role text,
    is_platform_admin boolean, disabled_at timestamptz, grants_version integer,
    tenant_status text, scope text
)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT found.*, set_config(
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
    ) AS found ON true
$$
"""

OAUTH_STATE_TENANT = """
CREATE FUNCTION hub_oauth_state_tenant(p_state_hash text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT a.tenant_id FROM oauth_authorizations a WHERE a.state_hash = p_state_hash
$$
"""

CLAIM_JOBS = """
CREATE FUNCTION hub_claim_jobs(
    p_kinds text[], p_lease_seconds double precision[], p_now timestamptz, p_limit integer,
    p_holder text
)
RETURNS TABLE (
    id uuid, kind text, key text, tenant_id uuid, due_at timestamptz, attempts integer
)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    WITH due AS (
        SELECT j.id FROM worker_jobs j
        WHERE j.kind = ANY (p_kinds) AND j.due_at <= p_now
          AND (j.lease_until IS NULL OR j.lease_until < p_now)
        ORDER BY j.due_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), leases AS (
        SELECT l.kind, l.seconds FROM unnest(p_kinds, p_lease_seconds) AS l (kind, seconds)
    )
    UPDATE worker_jobs w
    SET holder = p_holder, lease_until = p_now + make_interval(secs => leases.seconds)
    FROM due, leases
    WHERE w.id = due.id AND leases.kind = w.kind
    RETURNING w.id, w.kind::text, w.key::text, w.tenant_id, w.due_at, w.attempts
$$
"""

FUNCTIONS = {
    "hub_auth_key(text)": AUTH_KEY,
    "hub_oauth_state_tenant(text)": OAUTH_STATE_TENANT,
    "hub_claim_jobs(text[], double precision[], timestamptz, integer, text)": CLAIM_JOBS,
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TENANT_TABLES:
        enable_tenant_rls(op, table)
    for signature, ddl in FUNCTIONS.items():
        op.execute(ddl)
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for signature in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
    for table in TENANT_TABLES:
        disable_tenant_rls(op, table)
