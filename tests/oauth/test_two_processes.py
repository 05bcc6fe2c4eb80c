"""Refresh single-flight across replicas: two ``hub serve`` processes on one PostgreSQL.

Right after the access token expires, 20 concurrent snapshots — 10 sent to each process — all
need a fresh token. The refresh lease (``FOR UPDATE SKIP LOCKED`` claim, no transaction across
the token request, compare-and-swap write, the others polling the row) must let exactly one
refresh request reach the authorization server, every snapshot succeed, and the rotated
refresh token be the one stored (SECURITY checklist 38). PostgreSQL only: on SQLite the
workers run in one process by design (DESIGN §15).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
from sqlalchemy import update

from hub.core import clock
from hub.core.components import components_of
from hub.core.crypto import Keyring
from hub.credentials.vault import decrypt_field
from hub.models import Credential
from tests.conftest import TEST_KEY, TEST_PEPPER
from tests.oauth.conftest import Hub, OAuthPeersStarter
from tests.support.databases import owner_session

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
USES = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HubProcess:
    """``hub serve`` in a subprocess of its own, on the test's database."""

    def __init__(self, database_url: str, data_dir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
        env.update(
            {
                "HUB_DATABASE_URL": database_url,
                "HUB_ENCRYPTION_KEYS": f"t1:{TEST_KEY}",
                "HUB_ACTIVE_KEY_ID": "t1",
                "HUB_API_KEY_PEPPER": TEST_PEPPER,
                "HUB_ALLOW_LOOPBACK": "true",
                "HUB_PUBLIC_URL": "http://hub.test",
                "HUB_WORKERS": "false",  # on-use refreshes only: the race under test
                "HUB_DISCOVERY_TIMEOUT_S": "20",
                "HUB_LOG_LEVEL": "WARNING",
                "HUB_DATA_DIR": str(data_dir),
            }
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hub.cli", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    async def ready(self, client: httpx2.AsyncClient) -> None:
        async with asyncio.timeout(30):
            while True:
                assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
                try:
                    if (await client.get(f"{self.url}/healthz")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await asyncio.sleep(0.1)

    def stop(self) -> str:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            _, err = self.proc.communicate()
        return err.decode(errors="replace") if err else ""


@pytest.fixture
async def replicas(db_url: str, tmp_path: Path) -> AsyncIterator[tuple[HubProcess, HubProcess]]:
    if not db_url.startswith("postgresql"):
        pytest.skip("several hub processes share PostgreSQL; SQLite runs workers in one process")
    pair = (HubProcess(db_url, tmp_path / "a"), HubProcess(db_url, tmp_path / "b"))
    try:
        yield pair
    finally:
        for replica in pair:
            replica.stop()


async def test_twenty_uses_on_two_processes_refresh_exactly_once(
    hub: Hub, oauth_peers: OAuthPeersStarter, replicas: tuple[HubProcess, HubProcess]
) -> None:
    peers = await oauth_peers(auth={"token_delay_s": 0.5})
    credential_id = await hub.connected(peers)
    keyring = components_of(hub.app).get(Keyring)
    async with httpx2.AsyncClient(timeout=60) as client:
        for replica in replicas:
            await replica.ready(client)
        # expiry, at the authorization server and in the shared database
        peers.auth.expire_all()
        async with owner_session(hub.db) as session:
            await session.execute(
                update(Credential)
                .where(Credential.id == uuid.UUID(credential_id))
                .values(expires_at=clock.now() - timedelta(seconds=1))
            )
        url = hub.owner.url("servers", "linear", "catalogs")
        answers = await asyncio.gather(
            *(client.post(f"{replicas[i % 2].url}{url}", headers=hub.headers) for i in range(USES))
        )
    failed = [(a.status_code, a.text[:500]) for a in answers if a.status_code not in (200, 201)]
    assert not failed, failed
    refreshes = peers.auth.token_requests("refresh_token")
    assert len(refreshes) == 1, f"{len(refreshes)} refresh requests reached the AS"
    async with owner_session(hub.db, write=False) as session:
        row = await session.get(Credential, uuid.UUID(credential_id))
    assert row is not None
    assert row.status == "active"
    assert row.refresh_lease_holder is None
    stored = decrypt_field(keyring, row, "refresh_token")
    assert stored in peers.auth.refresh_tokens
    assert stored not in peers.auth.used_refresh_tokens  # the rotated one, not the spent one
    secret = decrypt_field(keyring, row, "secret")
    assert secret is not None
    assert peers.auth.live(secret) is not None
    # every one of the 20 listed the tools with the one refreshed token
    listed = peers.peer.rpc_requests("tools/list")[-USES:]
    assert len(listed) == USES
    assert {r.headers.get("authorization") for r in listed} == {f"Bearer {secret}"}
