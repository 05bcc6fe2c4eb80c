"""``/readyz`` knows a keyring or a pepper that is not the database's (stop 53).

An upgrade and backup walk (stop 52) restored a database with a keyring whose key under a known
id had other bytes, and with another pepper: ``/readyz`` said 200 while every call failed
``credential_unavailable`` and every key was 401. A replica records the secrets it has seen
work (a key id once it opened a stored value under it, the pepper once a key authenticated), and
``hub bootstrap`` those of the database it starts; a replica whose secrets disagree with what is
recorded is not ready, and says which.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from hub.app import create_app
from hub.auth.key_format import pepper_check
from hub.core.components import components_of
from hub.core.crypto import CredentialUnavailable, Keyring, credential_aad
from hub.core.db import Database
from hub.health.secret_checks import PEPPER_MISMATCH, key_mismatch, record_secret_checks
from hub.models.secret_check import SecretCheck
from tests.conftest import TEST_KEY, TEST_PEPPER, make_settings
from tests.deploy.serving import TEST_KEYRING, free_port, hub_env
from tests.deploy.serving import TEST_PEPPER as SERVING_PEPPER
from tests.support.stories import make_tenant_admin

OTHER_KEY = base64.b64encode(b"o" * 32).decode()
NEW_KEY = base64.b64encode(b"n" * 32).decode()
OTHER_PEPPER = "another-pepper-0123456789abcdef0123456789abcdef"


@asynccontextmanager
async def _replica(
    db_url: str, database: Database, keys: str, pepper: str = TEST_PEPPER
) -> AsyncIterator[tuple[httpx2.AsyncClient, Keyring]]:
    settings = make_settings(
        db_url,
        encryption_keys=SecretStr(keys),
        active_key_id=None,
        api_key_pepper=SecretStr(pepper),
    )
    app = create_app(settings, database=database)
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
    ):
        yield client, components_of(app).get(Keyring)


async def _readiness(client: httpx2.AsyncClient) -> tuple[int, str]:
    response = await client.get("/readyz")
    body = response.json()
    return response.status_code, body["error"]["message"] if "error" in body else "ready"


async def _stored(database: Database) -> dict[str, bytes]:
    async with database.session(write=False) as session:
        rows = await session.execute(sa.select(SecretCheck.name, SecretCheck.value))
        return {name: bytes(value) for name, value in rows.all()}


#: the associated data of a credential's field, as the hub seals them
AAD = credential_aad(uuid.uuid4(), uuid.uuid4(), "secret")


async def test_only_a_key_seen_opening_stored_values_is_recorded(
    db_url: str, database: Database
) -> None:
    """After an upgrade nothing is recorded: a replica with another key under ``t1``, asked
    first, used to record its own and lock every right replica out (a review, stop 53). Now a
    replica records a key id only once it opened a stored value under it and saw none fail."""
    async with (
        _replica(db_url, database, f"t1:{OTHER_KEY}") as (wrong, wrong_ring),
        _replica(db_url, database, f"t1:{TEST_KEY}") as (right, right_ring),
    ):
        assert await _readiness(wrong) == (200, "ready")
        assert await _readiness(right) == (200, "ready")
        assert await _stored(database) == {}  # neither has opened anything yet
        stored_value = right_ring.encrypt(b"a credential's secret", AAD)  # what the data holds
        with pytest.raises(CredentialUnavailable):
            wrong_ring.decrypt(stored_value, AAD)
        wrong_ring.decrypt(wrong_ring.encrypt(b"its own", AAD), AAD)  # opens its own values
        assert await _readiness(wrong) == (200, "ready")
        assert await _stored(database) == {}  # a failure under t1: nothing proven
        right_ring.decrypt(stored_value, AAD)
        assert await _readiness(right) == (200, "ready")
        assert set(await _stored(database)) == {"key:t1"}
        status, message = await _readiness(wrong)
        assert (status, message) == (503, key_mismatch(["t1"]))
        assert OTHER_KEY not in message
        assert TEST_KEY not in message
        assert await _readiness(right) == (200, "ready")
    # a key added to the ring (a rotation's first step) is recorded once it opened a value
    async with _replica(db_url, database, f"t1:{TEST_KEY},t2:{NEW_KEY}") as (rotated, ring):
        ring.decrypt(Keyring.parse(f"t2:{NEW_KEY}").encrypt(b"x", AAD), AAD)
        assert await _readiness(rotated) == (200, "ready")
        assert set(await _stored(database)) == {"key:t1", "key:t2"}
    async with _replica(db_url, database, f"t1:{TEST_KEY},t2:{OTHER_KEY}") as (other, _):
        assert await _readiness(other) == (503, key_mismatch(["t2"]))
    async with _replica(db_url, database, f"t2:{OTHER_KEY},t1:{OTHER_KEY}") as (both, _):
        assert await _readiness(both) == (503, key_mismatch(["t2", "t1"]))
    # a ring without a recorded key id (t1 removed once nothing was sealed under it) is fine
    async with _replica(db_url, database, f"t2:{NEW_KEY}") as (trimmed, _):
        assert await _readiness(trimmed) == (200, "ready")


async def test_the_pepper_is_recorded_once_a_key_authenticated_and_then_held_to(
    db_url: str, database: Database
) -> None:
    admin = await make_tenant_admin(database)  # its key made with TEST_PEPPER
    async with _replica(db_url, database, f"t1:{TEST_KEY}") as (first, _):
        assert await _readiness(first) == (200, "ready")
        assert "pepper" not in await _stored(database)  # no key seen working yet
        async with _replica(db_url, database, f"t1:{TEST_KEY}", OTHER_PEPPER) as (other, _):
            refused = await other.get(admin.url("servers"), headers=admin.admin.headers)
            assert refused.status_code == 401
            assert await _readiness(other) == (200, "ready")
            assert "pepper" not in await _stored(database)  # a 401 proves nothing
            read = await first.get(admin.url("servers"), headers=admin.admin.headers)
            assert read.status_code == 200, read.text
            assert await _readiness(first) == (200, "ready")
            stored = await _stored(database)
            assert stored["pepper"] == pepper_check(TEST_PEPPER.encode())
            assert await _readiness(other) == (503, PEPPER_MISMATCH)
            assert OTHER_PEPPER not in PEPPER_MISMATCH
            # what `hub bootstrap --force` does under the new pepper
            keyring = Keyring.parse(f"t1:{TEST_KEY}")
            await record_secret_checks(
                database, keyring, OTHER_PEPPER.encode(), keys=(), replace_pepper=True
            )
            assert await _readiness(other) == (200, "ready")
        assert await _readiness(first) == (503, PEPPER_MISMATCH)
    assert set(await _stored(database)) == {"pepper"}  # a replace records no key


def _hub(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        env=hub_env(tmp_path, free_port(), **env),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_bootstrap_records_the_secrets_and_force_a_new_pepper(tmp_path: Path) -> None:
    """A new database has its records before its first probe (``make run`` bootstraps, then
    serves), and ``hub bootstrap --force`` under a changed pepper (the documented way to rotate
    it: every key re-issued) records that pepper."""
    assert _hub(tmp_path, "db", "upgrade").returncode == 0
    made = _hub(tmp_path, "bootstrap")
    assert made.returncode == 0, made.stderr

    def stored() -> dict[str, bytes]:
        engine = sa.create_engine(f"sqlite:///{tmp_path / 'hub.db'}")
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.text("SELECT name, value FROM secret_checks"))
                return {name: bytes(value) for name, value in rows}
        finally:
            engine.dispose()

    first = stored()
    assert first["pepper"] == pepper_check(SERVING_PEPPER.encode())
    assert Keyring.parse(TEST_KEYRING).matches("k1", first["key:k1"])
    assert _hub(tmp_path, "bootstrap", "--if-absent", HUB_API_KEY_PEPPER=OTHER_PEPPER).stdout == ""
    assert stored() == first  # no key made, nothing recorded
    forced = _hub(tmp_path, "bootstrap", "--force", HUB_API_KEY_PEPPER=OTHER_PEPPER)
    assert forced.returncode == 0, forced.stderr
    after = stored()
    assert after["pepper"] == pepper_check(OTHER_PEPPER.encode())
    assert after["key:k1"] == first["key:k1"]
