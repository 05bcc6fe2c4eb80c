"""The row-level-security DDL every tenant table gets (DESIGN §11, §15), for the migrations.

A migration that creates a table with a ``tenant_id`` column adds its policy with one call::

    from hub.core.rls_ddl import enable_tenant_rls, disable_tenant_rls

    def upgrade() -> None:
        op.create_table("widgets", ...)
        enable_tenant_rls(op, "widgets")

RLS is enabled and forced (the table's owner is held to the policy too, unless it has
``BYPASSRLS``), and one policy, ``tenant_scope``, admits a row for reading and writing when its
``tenant_id`` is the transaction's ``hub.tenant_id`` — or, for the rows that belong to no tenant
(``tenant_id`` NULL: the platform admin, its keys, the platform audit chain), when the scope is
the platform's (the nil UUID, :data:`hub.core.rls.PLATFORM_VALUE`). An unset or empty setting
sees nothing and can write nothing. SQLite has no RLS: the calls do nothing there.

``tests/test_rls.py`` checks that every table with a ``tenant_id`` column has RLS enabled and
forced with this policy, so a table whose migration forgot the call fails the suite.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "POLICY_NAME",
    "SCOPE_EXPR",
    "disable_tenant_rls",
    "enable_tenant_rls",
    "policy_sql",
    "tenant_rls_sql",
]

POLICY_NAME: Final = "tenant_scope"
SCOPE_EXPR: Final = "NULLIF(current_setting('hub.tenant_id', true), '')::uuid"
_PLATFORM = "'00000000-0000-0000-0000-000000000000'::uuid"
_ADMITTED = f"(tenant_id = {SCOPE_EXPR} OR (tenant_id IS NULL AND {SCOPE_EXPR} = {_PLATFORM}))"


def _ident(table: str) -> str:
    if not table.replace("_", "").isalnum() or not table.isascii():
        raise ValueError(f"not a plain table name: {table!r}")
    return f'"{table}"'


def policy_sql(table: str) -> str:
    """``CREATE POLICY tenant_scope`` on ``table``."""
    return (
        f"CREATE POLICY {POLICY_NAME} ON {_ident(table)} USING {_ADMITTED} WITH CHECK {_ADMITTED}"
    )


def tenant_rls_sql(table: str) -> list[str]:
    """The statements that put ``table`` under the tenant policy."""
    name = _ident(table)
    return [
        f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY",
        policy_sql(table),
    ]


def enable_tenant_rls(op: Any, table: str) -> None:
    """Enable, force and add the tenant policy on ``table`` (PostgreSQL; a no-op on SQLite)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in tenant_rls_sql(table):
        op.execute(statement)


def disable_tenant_rls(op: Any, table: str) -> None:
    """Undo :func:`enable_tenant_rls` (a migration's downgrade)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    name = _ident(table)
    op.execute(f"DROP POLICY IF EXISTS {POLICY_NAME} ON {name}")
    op.execute(f"ALTER TABLE {name} NO FORCE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {name} DISABLE ROW LEVEL SECURITY")
