"""The audit writer (hub.audit.writer): events queued by calls are appended to their chains in
submission order, the events that arrive while a transaction runs share the next one, one bad
event does not take its batch with it, and waiting or draining returns once all are written."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter
from sqlalchemy import event, select

from hub.audit.actions import Action
from hub.audit.chain import NewEvent
from hub.audit.service import entry_of, record, verify_chain
from hub.audit.writer import AuditWriter, Pending
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.models import AuditEvent
from tests.support.databases import owner_session
from tests.support.factories import make_tenant, scope_of
from tests.support.queries import count_statements


def _entry(scope: TenantId, i: int, **details: Any) -> Any:
    return entry_of(
        tenant_id=scope,
        actor_id=None,
        action=Action.TOOL_CALL,
        resource=f"tool:peer.t{i}",
        request_id=f"req-{i}",
        outcome="success",
        details={"i": i, **details},
    )


async def _resources(db: Database, scope: TenantId) -> list[str]:
    query = (
        select(AuditEvent.resource)
        .where(AuditEvent.tenant_id == scope.value)
        .order_by(AuditEvent.seq)
    )
    async with owner_session(db, write=False) as session:
        return list((await session.execute(query)).scalars().all())


@pytest.fixture
async def tenant(database: Database) -> TenantId:
    return scope_of((await make_tenant(database)).id)


def _count_commits(db: Database) -> list[int]:
    commits = [0]

    def on_commit(_conn: Any) -> None:
        commits[0] += 1

    event.listen(db.engine.sync_engine, "commit", on_commit)
    return commits


async def test_queued_events_share_a_transaction_and_keep_their_order(
    database: Database, tenant: TenantId
) -> None:
    writer = AuditWriter()
    commits = _count_commits(database)
    pending = Pending()
    for i in range(30):  # submitted before the writer's task first runs: one batch
        writer.submit(database, _entry(tenant, i), pending)
    await pending.wait()
    assert commits[0] == 1  # one head lock and one commit for all thirty
    assert await _resources(database, tenant) == [f"tool:peer.t{i}" for i in range(30)]
    verified = await verify_chain(database, tenant)
    assert verified.ok
    assert verified.checked == 30


async def test_events_arriving_during_a_write_go_in_the_next_transaction(
    database: Database, tenant: TenantId
) -> None:
    writer = AuditWriter()
    commits = _count_commits(database)

    async def call(i: int) -> None:
        pending = Pending()
        await asyncio.sleep(0.001 * (i % 5))
        writer.submit(database, _entry(tenant, i), pending)
        await pending.wait()

    await asyncio.gather(*(call(i) for i in range(40)))
    assert commits[0] < 40  # batched, not one commit per event
    assert sorted(await _resources(database, tenant)) == sorted(
        f"tool:peer.t{i}" for i in range(40)
    )
    assert (await verify_chain(database, tenant)).ok


async def test_chains_of_several_tenants_in_one_batch(database: Database, tenant: TenantId) -> None:
    other = scope_of((await make_tenant(database)).id)
    writer = AuditWriter()
    pending = Pending()
    for i in range(6):
        writer.submit(database, _entry(tenant if i % 2 else other, i), pending)
    await pending.wait()
    assert await _resources(database, tenant) == ["tool:peer.t1", "tool:peer.t3", "tool:peer.t5"]
    assert await _resources(database, other) == ["tool:peer.t0", "tool:peer.t2", "tool:peer.t4"]
    assert (await verify_chain(database, tenant)).ok
    assert (await verify_chain(database, other)).ok


async def test_one_bad_event_loses_only_itself(
    database: Database, tenant: TenantId, caplog: pytest.LogCaptureFixture
) -> None:
    writer = AuditWriter()
    pending = Pending()
    writer.submit(database, _entry(tenant, 0), pending)
    writer.submit(database, _entry(tenant, 1, bad=object()), pending)  # not JSON: cannot hash
    writer.submit(database, _entry(tenant, 2), pending)
    with caplog.at_level(logging.ERROR, logger="hub.audit"):
        await asyncio.wait_for(pending.wait(), 30)
    assert await _resources(database, tenant) == ["tool:peer.t0", "tool:peer.t2"]
    assert "could not record audit event for tool.call" in caplog.text
    assert (await verify_chain(database, tenant)).ok


async def test_drain_waits_for_everything_submitted(database: Database, tenant: TenantId) -> None:
    writer = AuditWriter()
    for i in range(5):
        writer.submit(database, _entry(tenant, i), Pending())  # nobody waits for these
    await writer.drain()
    assert len(await _resources(database, tenant)) == 5
    await writer.drain()  # nothing queued: returns at once


async def test_on_postgresql_an_event_is_one_statement_once_the_head_is_known(
    database: Database, tenant: TenantId
) -> None:
    if database.is_sqlite:
        pytest.skip("SQLite appends in one write transaction")
    writer = AuditWriter()
    first = Pending()
    writer.submit(database, _entry(tenant, 0), first)  # creates the chain's head
    await first.wait()
    with count_statements(database) as sent:  # through the engine and past it, both
        for i in range(1, 11):
            pending = Pending()
            writer.submit(database, _entry(tenant, i), pending)
            await pending.wait()
    # the connection's RLS scope is set when it changes
    statements = [s for s in sent if "set_config" not in s]
    assert len(statements) == 10
    assert all(s.lstrip().startswith("WITH moved_head") for s in statements)
    assert await _resources(database, tenant) == [f"tool:peer.t{i}" for i in range(11)]
    assert (await verify_chain(database, tenant)).ok


async def test_a_head_moved_by_another_writer_is_read_again(
    database: Database, tenant: TenantId
) -> None:
    writer = AuditWriter()
    for i in range(3):
        pending = Pending()
        writer.submit(database, _entry(tenant, i), pending)
        await pending.wait()
        # another replica (the locking path of a REST mutation) appends behind the writer's back
        async with owner_session(database) as session:
            await record(
                session,
                tenant_id=tenant,
                actor_id=None,
                action=Action.GRANT_CREATE,
                resource=f"grant:{i}",
                request_id=None,
            )
    resources = await _resources(database, tenant)
    assert resources == [r for i in range(3) for r in (f"tool:peer.t{i}", f"grant:{i}")]
    verified = await verify_chain(database, tenant)
    assert verified.ok
    assert verified.checked == 6


def _unused_port() -> int:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_database_keeps_the_rows_and_the_wait_still_ends(
    tenant: TenantId, caplog: pytest.LogCaptureFixture
) -> None:
    """The requests are let go at once; what is still kept when the process stops (the drain's
    grace) is lost, counted and logged, by action only."""
    away = Database.from_url(
        f"postgresql+asyncpg://hub@127.0.0.1:{_unused_port()}/hub", pool_size=1
    )
    lost = Counter("lost", "events lost", registry=CollectorRegistry())
    writer = AuditWriter(lost)
    pending = Pending()
    try:
        with caplog.at_level(logging.ERROR, logger="hub.audit"):
            for i in range(3):
                writer.submit(away, _entry(tenant, i, canary="not-in-logs"), pending)
            await asyncio.wait_for(pending.wait(), 30)
            assert writer.retained == 3
            await writer.drain(grace_s=0.5)
    finally:
        await away.dispose()
    assert writer.retained == 0
    assert lost._value.get() == 3
    messages = [r.getMessage() for r in caplog.records if r.name == "hub.audit"]
    assert messages[0] == "audit: the database is away; 3 events kept to write later"
    assert messages[-1] == "audit: 3 events lost (the process stopped): tool.call"
    assert "not-in-logs" not in caplog.text


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def test_rows_kept_while_the_database_is_away_are_written_once_it_is_back(
    database: Database, tenant: TenantId
) -> None:
    """An SRE's walk (stop 50): two calls answered as successes while PostgreSQL restarted left
    no audit row. The writer keeps them and writes them, in order, when the server is back."""
    if database.is_sqlite:
        pytest.skip("a database server that goes away and comes back")
    url = database.engine.url
    port = _unused_port()
    away = Database.from_url(url.set(port=port).render_as_string(hide_password=False), pool_size=1)
    lost = Counter("lost", "events lost", registry=CollectorRegistry())
    writer = AuditWriter(lost)
    pending = Pending()

    async def pipe(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", url.port or 5432)
        await asyncio.gather(_forward(client_r, server_w), _forward(server_r, client_w))

    try:
        for i in range(3):
            writer.submit(away, _entry(tenant, i), pending)
        await asyncio.wait_for(pending.wait(), 30)  # let go while the server is away
        assert await _resources(database, tenant) == []
        assert writer.retained == 3
        back = await asyncio.start_server(pipe, "127.0.0.1", port)  # the server is back
        async with back:
            await asyncio.wait_for(writer.drain(), 30)
            await away.dispose()
    finally:
        await away.dispose()
    assert await _resources(database, tenant) == [f"tool:peer.t{i}" for i in range(3)]
    assert (await verify_chain(database, tenant)).ok
    assert lost._value.get() == 0


def test_a_new_event_carries_every_column_of_the_table() -> None:
    """The appends insert a :class:`~hub.audit.chain.NewEvent` column by column: a column
    added to ``audit_events`` but not to it would fail every append, and a field the table does
    not have would never be written. Both sides are held to the same set here."""
    columns = {column.key for column in AuditEvent.__table__.columns}
    assert {f.name for f in dataclasses.fields(NewEvent)} == columns
