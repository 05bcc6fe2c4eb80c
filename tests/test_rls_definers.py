"""Row-level security's ``SECURITY DEFINER`` functions (DESIGN §11, §15): the reads before a
tenant is known (the key, the console cookie, the job claims, the probes' counts, the OAuth
refresher's tenants) go through them, each sets the scope of the tenant it found, and nobody but
the app's role may call them.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select, text

from hub.auth.key_format import parse_key
from hub.auth.repository import insert_console_session
from hub.core import clock, rls
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.core.jobs import schedule
from hub.credentials.repository import count_by_key_id_all_tenants
from hub.credentials.rotation import fields_by_key_id
from hub.credentials.service import sealed_columns
from hub.models import ApiKey, ConsoleSession, Credential, Server, WorkerJob
from hub.oauth.repository import tenants_due_every_tenant
from hub.oauth.rotation import oauth_fields_by_key_id
from tests.conftest import TEST_KEY
from tests.support.databases import owner_session
from tests.support.factories import make_principal, make_tenant, scope_of
from tests.support.rls_world import own_engine, two_tenants


@pytest.fixture
def pg(database: Database) -> Database:
    if database.is_sqlite:
        pytest.skip("row-level security is PostgreSQL's")
    return database


async def test_the_definer_functions_are_not_public(pg: Database) -> None:
    async with pg.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT p.proname, p.prosecdef, has_function_privilege('public', p.oid, "
                    "'EXECUTE'), has_function_privilege(current_user, p.oid, 'EXECUTE'), "
                    "pg_get_userbyid(p.proowner) <> current_user FROM pg_proc p "
                    "WHERE p.proname LIKE 'hub\\_%' ORDER BY p.proname"
                )
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("hub_auth_key", True, False, True, True),
        ("hub_claim_jobs", True, False, True, True),
        ("hub_console_session", True, False, True, True),
        ("hub_credential_key_ids", True, False, True, True),
        ("hub_gateway_read", True, False, True, True),
        ("hub_oauth_due_tenants", True, False, True, True),
        ("hub_oauth_key_ids", True, False, True, True),
        ("hub_oauth_state_tenant", True, False, True, True),
        ("hub_pending_approvals", True, False, True, True),
        ("hub_pinned_drift_marks", True, False, True, True),
    ]


async def test_job_claims_cross_tenants_through_the_definer(pg: Database) -> None:
    a, b = await two_tenants(pg)
    for tenant in (a, b):
        with rls.scope(scope_of(tenant)):
            async with pg.session() as session:
                await schedule(
                    session, "rls.probe", str(tenant), due_at=clock.now(), tenant_id=tenant
                )
    now = clock.now() + timedelta(seconds=1)
    async with pg.session() as session:  # no scope: the worker's claim
        claimed = (
            await session.execute(
                text("SELECT tenant_id FROM hub_claim_jobs(:k, :l, :now, 10, 'me')"),
                {"k": ["rls.probe"], "l": [30.0], "now": now},
            )
        ).scalars()
        assert set(claimed) == {a, b}
    async with owner_session(pg, write=False) as session:
        holders = (await session.execute(select(WorkerJob.holder))).scalars().all()
    assert holders == ["me", "me"]


def _sealed_credential(tenant: uuid.UUID, name: str, kind: str, field: str) -> Credential:
    """A credential row of ``tenant`` whose ``field`` is sealed under key ``t1``."""
    cid, now = uuid.uuid4(), clock.now()
    return Credential(
        id=cid,
        tenant_id=tenant,
        name=name,
        type=kind,
        status="active",
        meta={},
        version=1,
        created_at=now,
        updated_at=now,
        **sealed_columns(Keyring.parse(f"t1:{TEST_KEY}"), tenant, cid, field, "x"),
    )


async def test_the_probes_counts_see_every_tenant_through_the_definers(pg: Database) -> None:
    """``/readyz``'s key ids and the gauges' counts, read as the app role with no scope (as a
    probe reads them): every tenant's rows, through the definers of migration 0904."""
    a, b = await two_tenants(pg)
    async with owner_session(pg) as session:
        for tenant, secrets in ((a, 1), (b, 2)):
            for i in range(secrets):
                session.add(_sealed_credential(tenant, f"c{i}", "api_key", "secret"))
    async with pg.session(write=False) as session:  # what a scope-less read alone would see
        assert await count_by_key_id_all_tenants(session) == {}
    assert await fields_by_key_id(pg) == {"t1": 3}
    assert await oauth_fields_by_key_id(pg) == {}


async def test_the_refresher_finds_the_tenants_with_tokens_due(pg: Database) -> None:
    """Its pass visits only the tenants the definer names, the most urgent first; the claim
    itself stays in each tenant's scope."""
    a, b = await two_tenants(pg)
    c = (await make_tenant(pg)).id  # a token that is not due
    now = clock.now()
    async with owner_session(pg) as session:
        for tenant, expires_in in ((a, 300), (b, 60), (c, 86_400)):
            credential = _sealed_credential(tenant, "o", "oauth_token", "refresh_token")
            credential.oauth_token_endpoint = "https://auth.example.com/token"
            credential.expires_at = now + timedelta(seconds=expires_in)
            session.add(credential)
    async with pg.session(write=False) as session:  # the app role, no scope
        due = await tenants_due_every_tenant(session, now + timedelta(seconds=600), now)
    assert due == [b, a]


async def test_the_key_read_sets_the_scope_of_its_tenant(pg: Database) -> None:
    a, _b = await two_tenants(pg)
    actor = await make_principal(pg, a)
    parsed = parse_key(actor.key)
    assert parsed is not None
    key_id = parsed.key_id
    async with own_engine(pg) as engine, engine.connect() as conn:
        row = (
            await conn.execute(text("SELECT tenant_id, scope FROM hub_auth_key(:k)"), {"k": key_id})
        ).one()
        seen = (await conn.execute(select(Server.tenant_id))).scalars().all()
        unknown = (
            await conn.execute(text("SELECT api_key_id, scope FROM hub_auth_key('nope')"))
        ).one()
        after_unknown = (await conn.execute(select(Server.tenant_id))).scalars().all()
        await conn.rollback()
    assert (row.tenant_id, row.scope) == (a, str(a))
    assert seen == [a]
    assert tuple(unknown) == (None, "")
    assert after_unknown == []


async def test_the_console_cookie_read_sets_the_scope_of_its_tenant(pg: Database) -> None:
    a, _b = await two_tenants(pg)
    actor = await make_principal(pg, a)
    async with owner_session(pg, write=False) as session:
        key_row = (
            await session.execute(
                select(ApiKey.id).where(ApiKey.principal_id == actor.principal_id)
            )
        ).scalar_one()
    async with owner_session(pg) as session:
        await insert_console_session(
            session,
            tenant_id=a,
            principal_id=actor.principal_id,
            api_key_id=key_row,
            token_hash="ab" * 32,
            now=clock.now(),
        )
    async with pg.session(write=False) as session:  # no scope: the cookie comes first
        hidden = (await session.execute(select(ConsoleSession.id))).scalars().all()
    assert hidden == []  # the table is under the tenant policy
    async with own_engine(pg) as engine, engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT api_key_id, scope FROM hub_console_session(:h)"), {"h": "ab" * 32}
            )
        ).one()
        seen = (await conn.execute(select(Server.tenant_id))).scalars().all()
        unknown = (await conn.execute(text("SELECT id, scope FROM hub_console_session('x')"))).one()
        after_unknown = (await conn.execute(select(Server.tenant_id))).scalars().all()
        await conn.rollback()
    assert (row.api_key_id, row.scope) == (key_row, str(a))
    assert seen == [a]
    assert tuple(unknown) == (None, "")
    assert after_unknown == []
