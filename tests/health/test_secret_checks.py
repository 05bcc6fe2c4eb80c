"""``/readyz`` knows a keyring or a pepper that is not the database's (stop 53).

An upgrade and backup walk (stop 52) restored a database with a keyring whose key under a known
id had other bytes, and with another pepper: ``/readyz`` said 200 while every call failed
``credential_unavailable`` and every key was 401. The first replica to be asked records what its
secrets look like; a replica whose secrets disagree is not ready, and says which.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import sqlalchemy as sa
from pydantic import SecretStr

from hub.app import create_app
from hub.auth.key_format import pepper_check
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.health.secret_checks import PEPPER_MISMATCH, key_mismatch, record_secret_checks
from hub.models.secret_check import SecretCheck
from tests.conftest import TEST_KEY, TEST_PEPPER, make_settings
from tests.deploy.serving import TEST_KEYRING, free_port, hub_env
from tests.deploy.serving import TEST_PEPPER as SERVING_PEPPER

OTHER_KEY = base64.b64encode(b"o" * 32).decode()
NEW_KEY = base64.b64encode(b"n" * 32).decode()
OTHER_PEPPER = "another-pepper-0123456789abcdef0123456789abcdef"


@asynccontextmanager
async def _replica(
    db_url: str, database: Database, keys: str, pepper: str = TEST_PEPPER
) -> AsyncIterator[httpx2.AsyncClient]:
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
        yield client


async def _readiness(client: httpx2.AsyncClient) -> tuple[int, str]:
    response = await client.get("/readyz")
    body = response.json()
    return response.status_code, body["error"]["message"] if "error" in body else "ready"


async def _stored(database: Database) -> dict[str, bytes]:
    async with database.session(write=False) as session:
        rows = await session.execute(sa.select(SecretCheck.name, SecretCheck.value))
        return {name: bytes(value) for name, value in rows.all()}


async def test_a_replica_with_another_key_under_a_known_id_is_not_ready(
    db_url: str, database: Database
) -> None:
    async with _replica(db_url, database, f"t1:{TEST_KEY}") as first:
        assert await _readiness(first) == (200, "ready")
        stored = await _stored(database)
        assert set(stored) == {"key:t1", "pepper"}
        assert stored["pepper"] == pepper_check(TEST_PEPPER.encode())
        async with _replica(db_url, database, f"t1:{OTHER_KEY}") as restored:
            status, message = await _readiness(restored)
            assert (status, message) == (503, key_mismatch(["t1"]))
            assert OTHER_KEY not in message
            assert TEST_KEY not in message
        assert await _readiness(first) == (200, "ready")  # the first record stands
    # a key added to the ring (a rotation's first step) is recorded, and then held to it
    async with _replica(db_url, database, f"t1:{TEST_KEY},t2:{NEW_KEY}") as rotated:
        assert await _readiness(rotated) == (200, "ready")
        assert set(await _stored(database)) == {"key:t1", "key:t2", "pepper"}
    async with _replica(db_url, database, f"t1:{TEST_KEY},t2:{OTHER_KEY}") as wrong:
        assert await _readiness(wrong) == (503, key_mismatch(["t2"]))
    async with _replica(db_url, database, f"t2:{OTHER_KEY},t1:{OTHER_KEY}") as both:
        assert await _readiness(both) == (503, key_mismatch(["t2", "t1"]))
    # a ring without a recorded key id (t1 removed once nothing was sealed under it) is fine
    async with _replica(db_url, database, f"t2:{NEW_KEY}") as trimmed:
        assert await _readiness(trimmed) == (200, "ready")


async def test_another_pepper_is_not_ready_until_recorded_on_purpose(
    db_url: str, database: Database
) -> None:
    async with _replica(db_url, database, f"t1:{TEST_KEY}") as first:
        assert await _readiness(first) == (200, "ready")
        async with _replica(db_url, database, f"t1:{TEST_KEY}", OTHER_PEPPER) as peppered:
            assert await _readiness(peppered) == (503, PEPPER_MISMATCH)
            assert OTHER_PEPPER not in PEPPER_MISMATCH
            # what `hub bootstrap --force` does under the new pepper
            keyring = Keyring.parse(f"t1:{TEST_KEY}")
            await record_secret_checks(
                database, keyring, OTHER_PEPPER.encode(), replace_pepper=True
            )
            assert await _readiness(peppered) == (200, "ready")
        assert await _readiness(first) == (503, PEPPER_MISMATCH)
    # a replace keeps the keys' records as they were
    stored = await _stored(database)
    assert Keyring.parse(f"t1:{TEST_KEY}").matches("t1", stored["key:t1"])


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
