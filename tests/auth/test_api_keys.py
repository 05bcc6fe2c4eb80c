"""API keys: format, shown once, hash only, uniform 401, revocation, rolling, throttled touch."""

from __future__ import annotations

from datetime import timedelta

import httpx2
from sqlalchemy import select, text, update

from hub.auth.key_format import generate_key, hash_key, parse_key
from hub.core import clock
from hub.core.db import Database
from hub.models import ApiKey, Principal, Tenant
from tests.conftest import ClockControl
from tests.support.databases import as_owner, owner_session
from tests.support.factories import PEPPER, make_platform_admin, make_principal, make_tenant
from tests.support.queries import count_statements


def _assert_uniform_401(responses: list[httpx2.Response]) -> None:
    bodies = []
    for response in responses:
        assert response.status_code == 401
        error = response.json()["error"]
        assert error.pop("request_id") == response.headers["x-request-id"]
        bodies.append(error)
        assert response.headers.get("www-authenticate") == "Bearer"
    assert all(body == bodies[0] for body in bodies)
    assert bodies[0] == {"code": "unauthorized", "message": "a valid API key is required"}


def test_key_format_and_checksum() -> None:
    key, key_id = generate_key()
    assert key.startswith(f"hub_{key_id}_")
    assert len(key) == 4 + 12 + 1 + 32 + 6
    parsed = parse_key(key)
    assert parsed is not None
    assert parsed.key_id == key_id
    assert key not in repr(parsed)
    tampered = key[:20] + ("A" if key[20] != "A" else "B") + key[21:]
    assert parse_key(tampered) is None
    assert parse_key("hub_garbage") is None
    assert parse_key(None) is None


async def test_key_is_shown_once_and_only_its_hmac_stored(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    created = await client.post(
        f"/tenants/{tenant.id}/principals/{admin.principal_id}/keys",
        json={},
        headers=admin.headers,
    )
    assert created.status_code == 201
    data = created.json()["data"]
    key = data["key"]
    assert data["prefix"] == key[:16]
    assert data["last4"] == key[-4:]
    listed = await client.get(
        f"/tenants/{tenant.id}/principals/{admin.principal_id}/keys", headers=admin.headers
    )
    assert listed.status_code == 200
    assert key not in listed.text
    assert {"prefix", "last4", "created_at", "expires_at", "last_used_at"} <= set(
        listed.json()["data"][0]
    )
    async with as_owner(database.engine) as owner, owner.connect() as conn:  # every row
        rows = (await conn.execute(text("SELECT * FROM api_keys"))).mappings().all()
    dumped = repr(rows)
    assert key not in dumped
    assert key[17:49] not in dumped  # the secret part, on its own
    [row] = [r for r in rows if r["prefix"] == data["prefix"]]
    assert row["key_hash"] == hash_key(PEPPER, key)
    me = await client.get("/whoami", headers={"x-api-key": key})
    assert me.status_code == 200


async def test_every_failure_is_the_same_401(
    client: httpx2.AsyncClient, database: Database, clock_control: ClockControl
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    revoked = await make_principal(database, tenant.id)
    expiring = await make_principal(database, tenant.id)
    disabled = await make_principal(database, tenant.id)
    off_tenant = await make_tenant(database)
    in_disabled_tenant = await make_principal(database, off_tenant.id)
    async with owner_session(database) as session:
        await session.execute(
            update(ApiKey)
            .where(ApiKey.principal_id == revoked.principal_id)
            .values(revoked_at=clock.now())
        )
        await session.execute(
            update(ApiKey)
            .where(ApiKey.principal_id == expiring.principal_id)
            .values(expires_at=clock.now() + timedelta(seconds=5))
        )
        await session.execute(
            update(Principal)
            .where(Principal.id == disabled.principal_id)
            .values(disabled_at=clock.now())
        )
        await session.execute(
            update(Tenant).where(Tenant.id == off_tenant.id).values(status="disabled")
        )
    clock_control.advance(10)
    good = admin.key
    unknown, _ = generate_key()
    wrong_secret = good[:21] + ("a" if good[21] != "a" else "b") + good[22:]
    body = wrong_secret[:-6]
    import zlib

    from hub.auth.key_format import _base62

    wrong_secret = body + _base62(zlib.crc32(body.encode()), 6)  # valid checksum, wrong secret
    bad_checksum = good[:-1] + ("A" if good[-1] != "A" else "B")
    cases: list[dict[str, str]] = [
        {},
        {"authorization": "Bearer"},
        {"authorization": "Basic abc"},
        {"authorization": "Bearer garbage"},
        {"authorization": f"Bearer {bad_checksum}"},
        {"authorization": f"Bearer {unknown}"},
        {"authorization": f"Bearer {wrong_secret}"},
        {"authorization": f"Bearer {revoked.key}"},
        {"authorization": f"Bearer {expiring.key}"},
        {"authorization": f"Bearer {disabled.key}"},
        {"authorization": f"Bearer {in_disabled_tenant.key}"},
        {"authorization": f"Bearer {good}", "x-api-key": unknown},
    ]
    responses = [await client.get("/whoami", headers=h) for h in cases]
    _assert_uniform_401(responses)
    ok = await client.get("/whoami", headers={"authorization": f"Bearer {good}", "x-api-key": good})
    assert ok.status_code == 200


async def test_a_repeated_key_header_is_the_same_401_whatever_its_values(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """Two ``Authorization`` or two ``x-api-key`` headers are ambiguous (which one a proxy
    checked and which one the hub read may differ): refused, even when both carry good keys."""
    tenant = await make_tenant(database)
    bot = await make_principal(database, tenant.id, role="agent", kind="agent")
    owner = await make_principal(database, tenant.id)
    cases: list[list[tuple[str, str]]] = []
    for name, prefix in (("authorization", "Bearer "), ("x-api-key", "")):
        for second in (owner.key, "garbage", bot.key):
            cases.append([(name, prefix + bot.key), (name, prefix + second)])
    cases.append([("x-api-key", owner.key), ("authorization", f"Bearer {owner.key}")] * 2)
    responses = [await client.get("/whoami", headers=h) for h in cases]
    _assert_uniform_401(responses)
    ok = await client.get("/whoami", headers=[("authorization", f"Bearer {bot.key}")])
    assert ok.status_code == 200


async def test_bad_checksum_makes_no_query(client: httpx2.AsyncClient, database: Database) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    bad = admin.key[:-1] + ("A" if admin.key[-1] != "A" else "B")
    with count_statements(database) as statements:
        response = await client.get("/whoami", headers={"x-api-key": bad})
    assert response.status_code == 401
    assert statements == []


async def test_revocation_is_effective_on_the_next_request(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    created = await client.post(
        f"/tenants/{tenant.id}/principals/{admin.principal_id}/keys", json={}, headers=admin.headers
    )
    second = created.json()["data"]
    headers = {"authorization": f"Bearer {second['key']}"}
    assert (await client.get("/whoami", headers=headers)).status_code == 200
    revoke = await client.delete(
        f"/tenants/{tenant.id}/principals/{admin.principal_id}/keys/{second['id']}",
        headers=admin.headers,
    )
    assert revoke.status_code == 204
    assert (await client.get("/whoami", headers=headers)).status_code == 401
    assert (await client.get("/whoami", headers=admin.headers)).status_code == 200


async def test_rolled_key_works_until_its_expiry(
    client: httpx2.AsyncClient, database: Database, clock_control: ClockControl
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    async with owner_session(database, write=False) as session:
        key_row = (
            await session.execute(select(ApiKey).where(ApiKey.principal_id == admin.principal_id))
        ).scalar_one()
    old_expiry = clock.now() + timedelta(hours=1)
    rolled = await client.post(
        f"/tenants/{tenant.id}/principals/{admin.principal_id}/keys/{key_row.id}/roll",
        json={"old_key_expires_at": old_expiry.isoformat()},
        headers=admin.headers,
    )
    assert rolled.status_code == 201
    new_headers = {"authorization": f"Bearer {rolled.json()['data']['key']}"}
    assert (await client.get("/whoami", headers=admin.headers)).status_code == 200
    assert (await client.get("/whoami", headers=new_headers)).status_code == 200
    clock_control.advance(3601)
    assert (await client.get("/whoami", headers=admin.headers)).status_code == 401
    assert (await client.get("/whoami", headers=new_headers)).status_code == 200


async def test_last_used_is_written_at_most_once_a_minute(
    client: httpx2.AsyncClient, database: Database, clock_control: ClockControl
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    with count_statements(database) as statements:
        for _ in range(100):
            clock_control.advance(0.1)
            assert (await client.get("/whoami", headers=admin.headers)).status_code == 200
    updates = [s for s in statements if s.lstrip().upper().startswith("UPDATE API_KEYS")]
    assert len(updates) == 1
    clock_control.advance(61)
    with count_statements(database) as statements:
        await client.get("/whoami", headers=admin.headers)
    assert len([s for s in statements if "UPDATE api_keys" in s]) == 1


async def test_platform_admin_can_replace_its_own_key(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    listed = await client.get("/platform/keys", headers=admin.headers)
    assert listed.status_code == 200
    [old] = listed.json()["data"]
    new = await client.post("/platform/keys", json={}, headers=admin.headers)
    assert new.status_code == 201
    new_headers = {"x-api-key": new.json()["data"]["key"]}
    revoke = await client.delete(f"/platform/keys/{old['id']}", headers=new_headers)
    assert revoke.status_code == 204
    assert (await client.get("/whoami", headers=admin.headers)).status_code == 401
    me = await client.get("/whoami", headers=new_headers)
    assert me.json()["data"]["is_platform_admin"] is True
