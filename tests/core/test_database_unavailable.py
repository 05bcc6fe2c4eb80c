"""A database that is away is a 503 whatever the driver calls it (DESIGN §13, §11 scale-out).

asyncpg reports a connection the server closed mid-statement, and a server still starting up, as
a bare ``DBAPIError`` (not an ``OperationalError``); ``tests/scaleout`` restarts a real server
under load, these check the classification itself.
"""

from __future__ import annotations

import socket
import struct
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx2
import pytest
from sqlalchemy import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from hub.app import create_app
from hub.auth.key_format import generate_key
from hub.core.db_errors import database_unavailable
from tests.conftest import make_settings
from tests.support.databases import scratch_url


class _DriverError(Exception):
    def __init__(self, sqlstate: str | None) -> None:
        super().__init__("driver error")
        self.sqlstate = sqlstate


def _error(sqlstate: str | None, *, invalidated: bool = False) -> DBAPIError:
    return DBAPIError("SELECT 1", None, _DriverError(sqlstate), connection_invalidated=invalidated)


def test_a_server_that_is_away_is_unavailable() -> None:
    # and one refusing the hub's connections (stop 53: 500s): not accepting any, the login
    # refused (a password being rotated), the database missing
    for state in ("08006", "57P01", "57P02", "57P03", "53300", "55000", "28P01", "28000", "3D000"):
        assert database_unavailable(_error(state)), state
    assert database_unavailable(_error(None, invalidated=True))


def test_other_database_errors_are_not_hidden_as_unavailable() -> None:
    for state in (None, "42501", "22P02", "42P01"):
        assert not database_unavailable(_error(state)), state


def test_away_whatever_layer_raised_it() -> None:
    """The pool's wait running out, and the driver adapter's own error taken from a raw
    connection (``hub.core.plainreads``), unwrapped, with its SQLSTATE (stop 50: a 500)."""
    assert database_unavailable(PoolTimeout("QueuePool limit reached"))
    assert database_unavailable(_DriverError("53300"))  # too many connections for the role
    assert database_unavailable(_DriverError("57P03"))  # the server is starting up
    wrapped = RuntimeError("outer")
    wrapped.__cause__ = _DriverError("08006")
    assert database_unavailable(wrapped)
    assert not database_unavailable(_DriverError("23505"))
    assert not database_unavailable(RuntimeError("a bug"))


async def test_a_server_refusing_new_connections_is_a_503_on_rest_and_mcp(tmp_path: Path) -> None:
    """An SRE's walk (stop 50): a role over its connection limit (also a server shutting down or
    starting up) was a 500 with a traceback, because the request path's first read takes a raw
    connection and the driver's error came out unwrapped."""
    url = scratch_url("postgresql", tmp_path, "unavailable")
    admin = await asyncpg.connect(
        make_url(url).set(drivername="postgresql").render_as_string(hide_password=False), timeout=5
    )
    try:
        await admin.execute(
            "DO $$ BEGIN CREATE ROLE hub_no_connections LOGIN CONNECTION LIMIT 0; "
            "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        )
    finally:
        await admin.close()
    refused = make_url(url).set(username="hub_no_connections", password=None)
    await _both_503(refused.render_as_string(hide_password=False))


async def _both_503(url: str) -> None:
    """A REST read and an MCP request to a hub on ``url``: 503, and ``50300`` for MCP."""
    app = create_app(make_settings(url))
    key, _ = generate_key()
    headers = {"authorization": f"Bearer {key}"}
    tenant = uuid.uuid4()
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as http:
            rest = await http.get(f"/tenants/{tenant}/servers/linear", headers=headers)
            mcp = await http.post(
                f"/tenants/{tenant}/deployments/{uuid.uuid4()}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={**headers, "accept": "application/json, text/event-stream"},
            )
    assert rest.status_code == 503, rest.text
    assert rest.json()["error"]["code"] == "service_unavailable"
    assert mcp.status_code == 503, mcp.text
    assert mcp.json()["error"]["code"] == 50300


@pytest.fixture
def resetting_server() -> Iterator[int]:
    """A loopback port that accepts each connection and resets it at once (RST, no bytes): what
    a PostgreSQL server shutting down does to a connection it took just before."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


async def test_a_connection_reset_while_connecting_is_a_503(resetting_server: int) -> None:
    await _both_503(f"postgresql+asyncpg://hub@127.0.0.1:{resetting_server}/hub")
