"""every_tenant_counts: counts over every tenant in one statement, and the tenants with tokens due
(issue 13)

``/readyz`` checks that the keyring holds every key id a stored row names, and ``/metrics``
reports approvals pending, drifted tools and the key-rotation backlog, all over every tenant.
Under row-level security a transaction sees one tenant's rows, so each of these walked the
tenants one scope after the other (``hub.core.tenant_passes``): measured on PostgreSQL, a
``/readyz`` took 3.3 s with 1,000 tenants and 14 s with 4,000 (the chart's probe gives up after
6 s), and the first ``/metrics`` 2.7 s and 5.1 s (the gauges' 5 s deadline). These functions
return only counts, key ids, drift marks and tenant ids, never a secret nor a row of a tenant's
own:

- ``hub_credential_key_ids()``: ``(key_id, n)``, the credential fields sealed under each key id;
- ``hub_oauth_key_ids()``: the same for the OAuth tables' sealed fields;
- ``hub_pending_approvals(now)``: approvals pending and not expired at ``now``;
- ``hub_pinned_drift_marks()``: the drift marks of every catalog version a deployment pins;
- ``hub_oauth_due_tenants(due_before, now)``: the tenants holding an OAuth token the refresher
  would claim (the most urgent first), so that its pass every 30 s visits those tenants only,
  not one write transaction per tenant.

``SECURITY DEFINER`` as the owner, ``STABLE``, with a fixed ``search_path``; EXECUTE is revoked
from PUBLIC and ``hub db upgrade`` grants it to the app role. PostgreSQL only: SQLite has no
row-level security, and counts in one pass already.

Revision ID: 0904
Revises: 0903
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0904"
down_revision: str | None = "0903"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HEADER = "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"


FUNCTIONS = (
    (
        "hub_credential_key_ids()",
        "TABLE (key_id text, n bigint)",
        """SELECT used.key_id, count(*) FROM (
        SELECT secret_key_id::text AS key_id FROM credentials WHERE secret_key_id IS NOT NULL
        UNION ALL
        SELECT refresh_token_key_id::text FROM credentials WHERE refresh_token_key_id IS NOT NULL
        UNION ALL
        SELECT client_secret_key_id::text FROM credentials WHERE client_secret_key_id IS NOT NULL
    ) AS used GROUP BY used.key_id""",
    ),
    (
        "hub_oauth_key_ids()",
        "TABLE (key_id text, n bigint)",
        """SELECT used.key_id, count(*) FROM (
        SELECT client_secret_key_id::text AS key_id FROM oauth_clients
            WHERE client_secret_key_id IS NOT NULL
        UNION ALL
        SELECT verifier_key_id::text FROM oauth_authorizations WHERE verifier_key_id IS NOT NULL
        UNION ALL
        SELECT client_secret_key_id::text FROM oauth_authorizations
            WHERE client_secret_key_id IS NOT NULL
    ) AS used GROUP BY used.key_id""",
    ),
    (
        "hub_pending_approvals(p_now timestamptz)",
        "bigint",
        "SELECT count(*) FROM approvals a WHERE a.status = 'pending' AND a.expires_at > p_now",
    ),
    (
        "hub_oauth_due_tenants(p_due_before timestamptz, p_now timestamptz)",
        "SETOF uuid",
        """SELECT c.tenant_id FROM credentials c
    WHERE c.type = 'oauth_token' AND c.status = 'active'
      AND c.oauth_token_endpoint IS NOT NULL AND c.refresh_token_ciphertext IS NOT NULL
      AND c.expires_at IS NOT NULL AND c.expires_at < p_due_before
      AND (c.refresh_lease_until IS NULL OR c.refresh_lease_until < p_now)
    GROUP BY c.tenant_id ORDER BY min(c.expires_at), c.tenant_id""",
    ),
    (
        "hub_pinned_drift_marks()",
        "SETOF jsonb",
        """SELECT c.tools FROM catalog_drift c
    WHERE EXISTS (
        SELECT 1 FROM deployment_entries e
        WHERE e.tenant_id = c.tenant_id AND e.catalog_id = c.catalog_id
    )""",
    ),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for signature, returns, body in FUNCTIONS:
        op.execute(f"CREATE FUNCTION {signature}\nRETURNS {returns}\n{_HEADER} AS $$\n{body}\n$$")
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for signature, _returns, _body in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
