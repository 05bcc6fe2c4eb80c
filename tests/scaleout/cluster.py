"""Parts of the scale-out tests: hub processes, a PostgreSQL server of a test's own, the writes.

- :func:`hub_process`: a real ``hub serve`` on a free loopback port, on a given PostgreSQL URL,
  its log in a file (a pipe nobody reads would fill and stall it under load); SIGKILL-able.
- :class:`PrivateServer`: ``initdb`` in a temporary directory, a free port on 127.0.0.1 and a
  socket directory of its own, so stopping it disturbs no other test; ``stop`` and ``start``.
- :func:`prepare`: a migrated database (as the owner) with the app's non-owner role granted, a
  tenant and its admin's key, made through the hub's own code.
- :class:`Writes`: creating principals round-robin over the hubs, each with a unique name, every
  answer recorded; :func:`principal_names` reads back what the database holds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx2
from sqlalchemy import select
from sqlalchemy.engine import make_url

from hub.core.db import Database
from hub.models import Principal
from tests.conftest import TEST_KEY, TEST_PEPPER
from tests.deploy.serving import free_port
from tests.support.databases import (
    APP_ROLE,
    fresh_postgres,
    migrate,
    prepare_app_role,
    run_sync,
)
from tests.support.factories import make_principal, make_tenant

__all__ = [
    "INITDB",
    "HubProcess",
    "PrivateServer",
    "Writes",
    "free_port",
    "hub_process",
    "prepare",
    "principal_names",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path("/usr/lib/postgresql/15/bin")
INITDB = PG_BIN / "initdb" if (PG_BIN / "initdb").exists() else shutil.which("initdb")


# ------------------------------------------------------------------------------------ hubs
@dataclass
class HubProcess:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye (a crashed replica)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def _wait_until_serving(hub: HubProcess, timeout_s: float = 45) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not hub.alive:
            raise AssertionError(f"hub serve exited: {hub.log.read_text()[-2000:]}")
        try:
            if httpx2.get(f"{hub.base_url}/healthz", timeout=1).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"hub serve did not answer /healthz: {hub.log.read_text()[-2000:]}")


@contextlib.contextmanager
def hub_process(db_url: str, workdir: Path, name: str) -> Iterator[HubProcess]:
    """``hub serve`` on ``db_url`` (the app's role) until the block ends (SIGTERM, then KILL)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        HUB_HOST="127.0.0.1",
        HUB_PORT=str(port),
        HUB_DATABASE_URL=db_url,
        HUB_DATABASE_POOL_SIZE="4",
        HUB_ENCRYPTION_KEYS=f"t1:{TEST_KEY}",
        HUB_ACTIVE_KEY_ID="t1",
        HUB_API_KEY_PEPPER=TEST_PEPPER,
        HUB_DATA_DIR=str(workdir / name),
        HUB_RATE_LIMITS="rest=off, tool_call=off, discovery=off, snapshot=off",
        PYTHONPATH=str(REPO_ROOT),
    )
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # our own interpreter and module
            [sys.executable, "-m", "hub.cli", "serve"],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    hub = HubProcess(port, process, log)
    try:
        _wait_until_serving(hub)
        yield hub
    finally:
        if hub.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                hub.kill()


# ------------------------------------------------------------------------------ PostgreSQL
def _as_server_user() -> list[str]:
    """PostgreSQL refuses to run as root: as root, its binaries run as the ``postgres`` user."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    assert runuser is not None, "running as root needs runuser to start PostgreSQL"
    return [runuser, "-u", "postgres", "--"]


class PrivateServer:
    """A PostgreSQL cluster of one test's own: its data directory, port and socket directory
    (in a directory of its own that the server's user can reach; removed by :meth:`remove`)."""

    def __init__(self) -> None:
        assert INITDB is not None
        self.bin = Path(INITDB).parent
        self.root = Path(tempfile.mkdtemp(prefix="hub-scaleout-pg-"))
        self.data = self.root / "pgdata"
        self.sockets = self.root / "pgsock"
        self.logfile = self.root / "postgres.log"
        self.port = free_port()
        self.sockets.mkdir()
        self._as = _as_server_user()
        if self._as:
            for path in (self.root, self.sockets):
                shutil.chown(path, user="postgres")
        subprocess.run(
            [*self._as, str(INITDB), "-D", str(self.data), "-U", "postgres", "-A", "trust"],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def owner_url(self, database: str = "hub") -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self.bin / "pg_ctl"), "-D", str(self.data), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=60"
        )
        self._ctl("-l", str(self.logfile), "-o", options, "-w", "start")

    def stop(self, mode: str = "immediate") -> None:
        """``immediate``: every backend dies at once, as in a crash."""
        self._ctl("-m", mode, "-w", "stop")

    def create_database(self, name: str = "hub") -> None:
        async def create() -> None:
            conn = await asyncpg.connect(
                host="127.0.0.1", port=self.port, user="postgres", database="postgres"
            )
            try:
                await conn.execute(f'CREATE DATABASE "{name}"')
            finally:
                await conn.close()

        run_sync(create)


# ------------------------------------------------------------------------- the database
@dataclass(frozen=True)
class Prepared:
    app_url: str
    owner_url: str
    tenant: str
    key: str


def prepare(owner_url: str, *, fresh: bool = True) -> Prepared:
    """Migrate ``owner_url``'s database as its owner, grant the app's role, make a tenant and its
    admin (through the hub's own code, as the app's role), and return what the load needs."""
    if fresh:
        fresh_postgres(owner_url)
    migrate(owner_url)
    app_url = prepare_app_role(owner_url)
    made: dict[str, str] = {}

    async def seed() -> None:
        db = Database.from_url(app_url, pool_size=1)
        try:
            tenant = await make_tenant(db)
            admin = await make_principal(db, tenant.id, name="scaleout-admin")
            made.update(tenant=str(tenant.id), key=admin.key)
        finally:
            await db.dispose()

    run_sync(seed)
    assert make_url(app_url).username == APP_ROLE
    return Prepared(app_url, owner_url, made["tenant"], made["key"])


def principal_names(owner_url: str, tenant: str) -> Counter[str]:
    """How many principals of each name ``tenant`` holds (read as the owner, all of them)."""
    names: Counter[str] = Counter()

    async def read() -> None:
        db = Database.from_url(owner_url, pool_size=1)
        try:
            async with db.session(write=False) as session:
                query = select(Principal.name).where(Principal.tenant_id == uuid.UUID(tenant))
                names.update((await session.execute(query)).scalars())
        finally:
            await db.dispose()

    run_sync(read)
    return names


# ------------------------------------------------------------------------------ the load
@dataclass
class Outcome:
    hub: int
    name: str
    status: int | None  # None: no answer (refused, reset, timed out)
    at: float


@dataclass
class Writes:
    """Creates principals (``POST /tenants/{t}/principals``) round-robin over ``hubs``, from
    ``threads`` client threads, ``total`` attempts in all, each with a name of its own."""

    hubs: list[HubProcess]
    tenant: str
    key: str
    total: int
    threads: int = 4
    outcomes: list[Outcome] = field(default_factory=list)
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _take(self) -> int | None:
        with self._lock:
            if self._next >= self.total:
                return None
            self._next += 1
            return self._next - 1

    def stop(self) -> None:
        """No further attempts (those in flight finish)."""
        with self._lock:
            self.total = self._next

    def acknowledged(self) -> int:
        with self._lock:
            return sum(1 for o in self.outcomes if o.status is not None and o.status < 300)

    def _worker(self, pace_s: float) -> None:
        headers = {"authorization": f"Bearer {self.key}"}
        with httpx2.Client(timeout=10, headers=headers) as client:
            while (index := self._take()) is not None:
                which = index % len(self.hubs)
                name = f"w-{index:05d}-{uuid.uuid4().hex[:6]}"
                url = f"{self.hubs[which].base_url}/tenants/{self.tenant}/principals"
                body = {"kind": "agent", "name": name, "role": "agent"}
                try:
                    status: int | None = client.post(url, json=body).status_code
                except httpx2.TransportError:
                    status = None
                with self._lock:
                    self.outcomes.append(Outcome(which, name, status, time.monotonic()))
                if pace_s:
                    time.sleep(pace_s)

    @contextlib.contextmanager
    def running(self, pace_s: float = 0.0) -> Iterator[None]:
        """The load runs in the background for the block; the block's end waits for it."""
        workers = [
            threading.Thread(target=self._worker, args=(pace_s,), daemon=True)
            for _ in range(self.threads)
        ]
        for worker in workers:
            worker.start()
        try:
            yield
        finally:
            for worker in workers:
                worker.join(timeout=60)
            assert not any(worker.is_alive() for worker in workers), "the load did not finish"

    def wait_for(self, acknowledged: int, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while self.acknowledged() < acknowledged:
            assert time.monotonic() < deadline, "the load stalled"
            time.sleep(0.02)
