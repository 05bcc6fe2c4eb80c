"""gateway_read: a tool call's key and deployment in one round trip (issue 14)

Every ``tools/call`` read its caller's key (``hub_auth_key``) and then, in the scope that call
set, its deployment's entries, servers and drift marks: two round trips before the upstream call.
``hub_gateway_read(key_id, key_hash, deployment_id)`` returns both: the key's row (exactly
``hub_auth_key``'s, which it calls, so the connection's ``hub.tenant_id`` is set as before) and,
only when the stored hash equals ``key_hash`` (the HMAC the hub computed from the presented key),
the deployment's rows of the key's own tenant — one per entry in order, or one with NULL entry
columns, or none for an unknown deployment (the key's columns then come once with NULL view
columns). Authentication is still decided by the hub (constant-time compare, revocation, expiry,
disabled principal or tenant): this only saves the second round trip, and a key that fails it
never sees a row. EXECUTE is revoked from PUBLIC; ``hub db upgrade`` grants it to the app role.
PostgreSQL only.

Revision ID: 0902
Revises: 0901
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0902"
down_revision: str | None = "0901"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SIGNATURE = "hub_gateway_read(text, text, uuid)"
GATEWAY_READ = """
CREATE FUNCTION hub_gateway_read(p_key_id text, p_key_hash text, p_deployment_id uuid)
RETURNS TABLE (
    api_key_id uuid, key_hash text, revoked_at timestamptz, expires_at timestamptz,
    last_used_at timestamptz, principal_id uuid, tenant_id uuid, kind text, role text,
    is_platform_admin boolean, disabled_at timestamptz, grants_version integer,
    tenant_status text, scope text,
    agent_id uuid, catalog_id uuid, allow_without_ask jsonb, arguments text, tool_names text,
    mode text, server_id uuid, handle text, created_at timestamptz, url text,
    credential_id uuid, era text, drift jsonb, drift_at timestamptz, entry_position integer
)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT k.api_key_id, k.key_hash, k.revoked_at, k.expires_at, k.last_used_at,
           k.principal_id, k.tenant_id, k.kind, k.role, k.is_platform_admin, k.disabled_at,
           k.grants_version, k.tenant_status, k.scope,
           v.agent_id, v.catalog_id, v.allow_without_ask, v.arguments::text, v.tool_names::text,
           v.mode::text, v.server_id, v.handle::text, v.created_at, v.url::text,
           v.credential_id, v.era::text, v.drift, v.drift_at, v.entry_position
    FROM hub_auth_key(p_key_id) AS k
    LEFT JOIN LATERAL (
        SELECT d.agent_id, e.catalog_id, e.allow_without_ask, e.arguments, e.tool_names, e.mode,
               s.id AS server_id, s.handle, s.created_at AS created_at, s.url,
               s.credential_id, s.era, c.tools AS drift, c.updated_at AS drift_at,
               e.position AS entry_position
        FROM deployments d
        LEFT JOIN deployment_entries e
            ON e.tenant_id = d.tenant_id AND e.deployment_id = d.id
        LEFT JOIN servers s ON s.tenant_id = e.tenant_id AND s.id = e.server_id
        LEFT JOIN catalog_drift c ON c.tenant_id = e.tenant_id AND c.catalog_id = e.catalog_id
        WHERE k.key_hash = p_key_hash
          AND d.tenant_id = k.tenant_id
          AND d.id = p_deployment_id
    ) AS v ON true
    ORDER BY v.entry_position;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(GATEWAY_READ)
    op.execute(f"REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
