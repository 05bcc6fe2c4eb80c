"""Encryption at rest: row binding, tampering, rotation, readiness, concurrency (SECURITY §7)."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import select, update

from hub.app import create_app
from hub.core.components import components_of
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.core.settings import ConfigError, Settings
from hub.credentials.exceptions import CredentialUnusable
from hub.credentials.rotation import remaining_by_key_id, rotate_credentials
from hub.credentials.vault import decrypt_for_use, load_usable_credential
from hub.models import Credential
from tests.conftest import TEST_KEY, make_settings
from tests.support.databases import owner_session
from tests.support.factories import make_principal, make_tenant, scope_of
from tests.support.hubcommand import hub_argv

K2 = base64.b64encode(b"2" * 32).decode()
K0 = base64.b64encode(b"0" * 32).decode()


async def _create(
    client: httpx2.AsyncClient, t: uuid.UUID, headers: dict[str, str], secret: str, **extra: object
) -> uuid.UUID:
    body: dict[str, object] = {
        "name": "c",
        "type": "api_key",
        "secret": secret,
        "api_base_url": "https://a.example",
    }
    body.update(extra)
    response = await client.post(f"/tenants/{t}/credentials", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return uuid.UUID(response.json()["data"]["id"])


async def _plain(
    db: Database, keyring: Keyring, tenant_id: uuid.UUID, cid: uuid.UUID
) -> str | None:
    async with owner_session(db, write=False) as session:
        credential = await load_usable_credential(session, scope_of(tenant_id), cid)

    async def use(bearer: str | None) -> str | None:
        return bearer

    return await decrypt_for_use(keyring, credential, use)


def _ring(spec: str, active: str) -> Keyring:
    return Keyring.parse(spec, active)


async def test_ciphertext_moved_to_another_row_or_field_fails_uniformly(
    client: httpx2.AsyncClient, database: Database, app: FastAPI
) -> None:
    keyring: Keyring = components_of(app).get(Keyring)
    ta, tb = await make_tenant(database), await make_tenant(database)
    a, b = await make_principal(database, ta.id), await make_principal(database, tb.id)
    a1 = await _create(client, ta.id, a.headers, "secret-a1-0123456789")
    a2 = await _create(client, ta.id, a.headers, "secret-a2-0123456789")
    b1 = await _create(client, tb.id, b.headers, "secret-b1-0123456789")
    assert await _plain(database, keyring, ta.id, a1) == "secret-a1-0123456789"

    async def copy_secret(src: uuid.UUID, dst: uuid.UUID, field: str = "secret") -> None:
        async with owner_session(database) as session:
            row = (
                await session.execute(select(Credential).where(Credential.id == src))
            ).scalar_one()
            await session.execute(
                update(Credential)
                .where(Credential.id == dst)
                .values(
                    **{
                        f"{field}_key_id": row.secret_key_id,
                        f"{field}_nonce": row.secret_nonce,
                        f"{field}_ciphertext": row.secret_ciphertext,
                    }
                )
            )

    await copy_secret(a1, b1)  # another tenant's row
    await copy_secret(a1, a2)  # another credential of the same tenant
    errors = []
    for tenant_id, cid in [(tb.id, b1), (ta.id, a2)]:
        with pytest.raises(CredentialUnusable) as info:
            await _plain(database, keyring, tenant_id, cid)
        errors.append((str(info.value), info.value.__cause__, info.value.__context__))
    # another field of the same row: the secret's ciphertext read as the refresh token
    async with owner_session(database, write=False) as session:
        row = (await session.execute(select(Credential).where(Credential.id == a1))).scalar_one()
    from hub.core.crypto import CredentialUnavailable, Sealed, credential_aad

    sealed = Sealed(
        row.secret_key_id or "", bytes(row.secret_nonce or b""), bytes(row.secret_ciphertext or b"")
    )
    with pytest.raises(CredentialUnavailable):
        keyring.decrypt(sealed, credential_aad(ta.id, a1, "refresh_token"))
    assert errors[0] == errors[1]
    assert errors[0][1] is None
    assert "secret-a1-0123456789" not in repr(errors)


async def test_single_bit_flip_fails_uniformly(
    client: httpx2.AsyncClient, database: Database, app: FastAPI
) -> None:
    keyring: Keyring = components_of(app).get(Keyring)
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    cid = await _create(client, tenant.id, admin.headers, "flip-me-0123456789ab")
    async with owner_session(database, write=False) as session:
        row = (await session.execute(select(Credential).where(Credential.id == cid))).scalar_one()
    original_nonce, original_ct = (
        bytes(row.secret_nonce or b""),
        bytes(row.secret_ciphertext or b""),
    )
    cases = [
        ("secret_nonce", original_nonce, 0),
        ("secret_ciphertext", original_ct, 0),
        ("secret_ciphertext", original_ct, len(original_ct) - 1),  # inside the tag
    ]
    messages = set()
    for column, value, index in cases:
        flipped = bytearray(value)
        flipped[index] ^= 0x01
        async with owner_session(database) as session:
            await session.execute(
                update(Credential).where(Credential.id == cid).values({column: bytes(flipped)})
            )
        with pytest.raises(CredentialUnusable) as info:
            await _plain(database, keyring, tenant.id, cid)
        messages.add(str(info.value))
        async with owner_session(database) as session:
            await session.execute(
                update(Credential).where(Credential.id == cid).values({column: value})
            )
    assert len(messages) == 1
    assert await _plain(database, keyring, tenant.id, cid) == "flip-me-0123456789ab"


async def test_keyless_sentinel_decrypts_to_no_bearer(
    client: httpx2.AsyncClient, database: Database, app: FastAPI
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    cid = await _create(
        client, tenant.id, admin.headers, "NO_TOKEN", metadata={"mcp": {"auth": "none"}}
    )
    assert await _plain(database, components_of(app).get(Keyring), tenant.id, cid) is None


async def test_unusable_credentials_read_as_404(
    client: httpx2.AsyncClient, database: Database, clock_control: object
) -> None:
    from hub.core.errors import NotFound

    tenant, other = await make_tenant(database), await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    other_admin = await make_principal(database, other.id)
    password = await _create(client, tenant.id, admin.headers, "pw", type="secret")
    errored = await _create(client, tenant.id, admin.headers, "x-0123456789abcdefg", status="error")
    expired = await _create(
        client, tenant.id, admin.headers, "x-0123456789abcdefg", expires_at="2000-01-01T00:00:00Z"
    )
    foreign = await _create(client, other.id, other_admin.headers, "x-0123456789abcdefg")
    for cid in [password, errored, expired, foreign, uuid.uuid4()]:
        async with owner_session(database, write=False) as session:
            with pytest.raises(NotFound):
                await load_usable_credential(session, scope_of(tenant.id), cid)


async def _app_client(settings: Settings, database: Database) -> tuple[FastAPI, httpx2.AsyncClient]:
    app = create_app(settings, database=database)
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://hub")
    return app, client


async def test_rotation_round_trip(database: Database, db_url: str) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    k1_settings = make_settings(db_url)
    app1, client1 = await _app_client(k1_settings, database)
    async with app1.router.lifespan_context(app1), client1:
        ids = [
            await _create(client1, tenant.id, admin.headers, f"s-{i}-0123456789abcdef")
            for i in range(25)
        ]
    k1 = Keyring.parse(f"t1:{TEST_KEY}", "t1")
    both = Keyring.parse(f"t1:{TEST_KEY},k2:{K2}", "k2")
    assert await remaining_by_key_id(database, both) == {"t1": 25}
    for cid, i in zip(ids, range(25), strict=True):
        assert await _plain(database, both, tenant.id, cid) == f"s-{i}-0123456789abcdef"
    first = await rotate_credentials(database, both, batch_size=7)
    assert first.rewrapped_rows == 25
    second = await rotate_credentials(database, both, batch_size=7)
    assert second.rewrapped_rows == 0
    assert await remaining_by_key_id(database, both) == {}
    only_k2 = Keyring.parse(f"k2:{K2}", "k2")
    for cid, i in zip(ids, range(25), strict=True):
        assert await _plain(database, only_k2, tenant.id, cid) == f"s-{i}-0123456789abcdef"
    with pytest.raises(CredentialUnusable):
        await _plain(database, k1, tenant.id, ids[0])
    # versions are untouched by rotation
    async with owner_session(database, write=False) as session:
        versions = (await session.execute(select(Credential.version))).scalars().all()
    assert set(versions) == {1}


async def test_readyz_fails_naming_a_missing_key(database: Database, db_url: str) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    app, client = await _app_client(make_settings(db_url), database)
    async with app.router.lifespan_context(app), client:
        cid = await _create(client, tenant.id, admin.headers, "whatever-0123456789ab")
        assert (await client.get("/readyz")).status_code == 200
        async with owner_session(database) as session:
            await session.execute(
                update(Credential).where(Credential.id == cid).values(secret_key_id="k0")
            )
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert "k0" in response.json()["error"]["message"]


async def test_concurrent_rotations_and_updates_lose_nothing(
    database: Database, db_url: str
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    app1, client1 = await _app_client(make_settings(db_url), database)
    async with app1.router.lifespan_context(app1), client1:
        ids = [
            await _create(client1, tenant.id, admin.headers, f"v0-{i}-0123456789abcdef")
            for i in range(40)
        ]
    rotating = make_settings(
        db_url, encryption_keys=SecretStr(f"t1:{TEST_KEY},k2:{K2}"), active_key_id="k2"
    )
    both = Keyring.from_settings(rotating)
    app2, client2 = await _app_client(rotating, database)

    async def update_all() -> dict[uuid.UUID, str]:
        expected = {}
        for i, cid in enumerate(ids):
            if i % 2 == 0:
                url = f"/tenants/{tenant.id}/credentials/{cid}"
                response = await client2.patch(
                    url,
                    json={"secret": f"v1-{i}-0123456789abcdef", "name": f"n{i}"},
                    headers=admin.headers,
                )
                assert response.status_code == 200
                expected[cid] = f"v1-{i}-0123456789abcdef"
            else:
                expected[cid] = f"v0-{i}-0123456789abcdef"
        return expected

    async with app2.router.lifespan_context(app2), client2:
        results = await asyncio.gather(
            rotate_credentials(database, both, batch_size=3),
            rotate_credentials(database, both, batch_size=5),
            update_all(),
        )
    expected = results[2]
    assert results[0].rewrapped_rows + results[1].rewrapped_rows <= 40
    assert await remaining_by_key_id(database, both) == {}
    for cid, value in expected.items():
        assert await _plain(database, both, tenant.id, cid) == value
    async with owner_session(database, write=False) as session:
        rows = (await session.execute(select(Credential))).scalars().all()
    assert {r.secret_key_id for r in rows} == {"k2"}
    assert sorted(r.version for r in rows) == [1] * 20 + [2] * 20


def test_malformed_keyring_refuses_to_start() -> None:
    with pytest.raises(ConfigError) as info:
        create_app(make_settings(encryption_keys=SecretStr("k1:not-base64!!")))
    assert "not-base64" not in str(info.value)


def test_crypto_rotate_cli(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env["HUB_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}"
    env["HUB_API_KEY_PEPPER"] = "p" * 40
    env["HUB_ENCRYPTION_KEYS"] = f"t1:{TEST_KEY}"
    hub = hub_argv()  # python -m hub.cli, forked warm (tests.support.hubcommand)
    subprocess.run([*hub, "db", "upgrade"], env=env, check=True, capture_output=True)
    seed = (
        "import asyncio, uuid\n"
        "from hub.core.db import Database\n"
        "from hub.core.crypto import Keyring\n"
        "from hub.credentials.service import sealed_columns\n"
        "from hub.models import Credential, Tenant\n"
        "from hub.core import clock\n"
        "async def main():\n"
        "    db = Database.from_url('" + env["HUB_DATABASE_URL"] + "')\n"
        "    ring = Keyring.parse('t1:" + TEST_KEY + "')\n"
        "    async with db.session() as s:\n"
        "        t = Tenant(id=uuid.uuid4(), slug='s', name='s', status='active',\n"
        "                   created_at=clock.now())\n"
        "        s.add(t); await s.flush()\n"
        "        for i in range(5):\n"
        "            cid = uuid.uuid4()\n"
        "            s.add(Credential(id=cid, tenant_id=t.id, name='c', type='api_key',\n"
        "                status='active', meta={}, version=1, created_at=clock.now(),\n"
        "                updated_at=clock.now(),\n"
        "                **sealed_columns(ring, t.id, cid, 'secret', 'x')))\n"
        "    await db.dispose()\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", seed], env=env, check=True)
    env["HUB_ENCRYPTION_KEYS"] = f"t1:{TEST_KEY},k2:{K2}"
    env["HUB_ACTIVE_KEY_ID"] = "k2"
    first = subprocess.run([*hub, "crypto", "rotate"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "fields to rewrap: 5" in first.stderr
    assert "rewrapped rows: 5" in first.stderr
    assert "remaining: 0" in first.stderr
    again = subprocess.run([*hub, "crypto", "rotate"], env=env, capture_output=True, text=True)
    assert again.returncode == 0
    assert "rewrapped rows: 0" in again.stderr
    env["HUB_ENCRYPTION_KEYS"] = f"k2:{K2},k0:{K0}"
    env["HUB_ACTIVE_KEY_ID"] = "k0"
    missing = subprocess.run([*hub, "crypto", "rotate"], env=env, capture_output=True, text=True)
    assert missing.returncode == 0
    assert "rewrapped rows: 5" in missing.stderr


async def test_a_secret_without_a_provider_origin_is_never_sent(
    client: httpx2.AsyncClient, database: Database, app: FastAPI
) -> None:
    from hub.core.errors import DiscoveryFailed
    from hub.upstream.pinning import pin_origin

    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    cid = await _create(client, tenant.id, admin.headers, "a-secret-0123456789ab")
    async with owner_session(database) as session:
        await session.execute(
            update(Credential).where(Credential.id == cid).values(api_base_url=None)
        )
        row = (await session.execute(select(Credential).where(Credential.id == cid))).scalar_one()
    with pytest.raises(DiscoveryFailed) as info:
        pin_origin(components_of(app).get(Keyring), row, "https://anywhere.example.com/mcp")
    assert info.value.reason == "origin_refused"
