"""The audit trail filtered by a rare outcome or action reads the partial indexes of migration 0905,
in a plan made for any value of the filter (PostgreSQL's generic plan of a prepared statement,
SQLite's plan), and answers what a filter over every row answers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import event, text

from hub.audit import service
from hub.audit.actions import Action, Outcome
from hub.audit.repository import AuditFilters
from hub.audit.service import Entry, record_entries
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.pagination import PageParams
from hub.core.tenancy import TenantId
from tests.support.databases import as_owner
from tests.support.factories import make_tenant, scope_of

#: (filters, the index they should read)
CASES = [
    (AuditFilters(outcome="denied"), "ix_audit_events_tenant_outcome_at"),
    (AuditFilters(action=Action.PRINCIPAL_CREATE.value), "ix_audit_events_tenant_action_at"),
]


def _entry(tenant: TenantId, n: int) -> Entry:
    """Mostly tool calls that succeeded; every 200th a denied call, every 250th a principal made."""
    action = Action.PRINCIPAL_CREATE if n % 250 == 249 else Action.TOOL_CALL
    outcome: Outcome = "denied" if n % 200 == 199 else "success"
    return Entry(tenant, uuid.uuid4(), action, f"r:{n}", None, outcome, {"n": n}, clock.now())


@pytest.fixture
async def chain(database: Database) -> TenantId:
    tenant = scope_of((await make_tenant(database)).id)
    await record_entries(database, tenant, [_entry(tenant, n) for n in range(1_000)])
    async with as_owner(database.engine) as owner, owner.connect() as conn:
        await conn.execute(text("ANALYZE audit_events"))
        await conn.commit()
    return tenant


@contextmanager
def _sent(database: Database) -> Iterator[list[tuple[str, Any]]]:
    sent: list[tuple[str, Any]] = []

    def listener(*args: Any) -> None:
        sent.append((str(args[2]), args[3]))

    event.listen(database.engine.sync_engine, "before_cursor_execute", listener)
    try:
        yield sent
    finally:
        event.remove(database.engine.sync_engine, "before_cursor_execute", listener)


def _literal(value: Any) -> str:
    if isinstance(value, bool | int | float):
        return str(value)
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    return "'" + str(value).replace("'", "''") + "'"


async def _plan(database: Database, statement: str, parameters: Any) -> str:
    async with as_owner(database.engine) as owner, owner.connect() as conn:
        if database.is_sqlite:
            rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            return "\n".join(str(row[-1]) for row in rows)
        await conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        await conn.exec_driver_sql(f"PREPARE listed AS {statement}")
        values = ", ".join(_literal(v) for v in parameters)
        rows = await conn.exec_driver_sql(f"EXPLAIN EXECUTE listed({values})")
        return "\n".join(str(row[0]) for row in rows)


@pytest.mark.parametrize(("filters", "index"), CASES)
@pytest.mark.parametrize("newest", [False, True])
async def test_a_rare_filter_reads_its_partial_index(
    database: Database, chain: TenantId, filters: AuditFilters, index: str, newest: bool
) -> None:
    with rls.scope(chain), _sent(database) as sent:
        async with database.session(write=False) as session:
            page = await service.list_events(
                session, chain, filters, PageParams(limit=50, cursor=None), newest_first=newest
            )
    [(statement, parameters)] = [(s, p) for s, p in sent if "FROM audit_events" in s]
    assert index in await _plan(database, statement, parameters)
    assert page.items  # and it finds rows


@pytest.mark.parametrize(("filters", "index"), CASES)
async def test_an_indexed_filter_answers_what_a_filter_over_every_row_does(
    database: Database, chain: TenantId, filters: AuditFilters, index: str
) -> None:
    with rls.scope(chain):
        async with database.session(write=False) as session:
            every = await service.list_events(
                session, chain, AuditFilters(), PageParams(limit=5_000, cursor=None)
            )
            found = await service.list_events(
                session, chain, filters, PageParams(limit=5_000, cursor=None)
            )
    wanted = [
        e.id
        for e in every.items
        if (filters.outcome is None or e.outcome == filters.outcome)
        and (filters.action is None or e.action == filters.action)
    ]
    assert [e.id for e in found.items] == wanted
    assert len(wanted) in (4, 5)  # 1,000 rows: five denied, four principals made
