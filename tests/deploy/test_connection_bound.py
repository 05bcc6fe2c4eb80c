"""A process holds at most ``HUB_MAX_CONNECTIONS`` connections (stop 45): one more is answered
503 ``server_busy`` and closed at once, before anything of it is read.

Before, 5,000 connections that each sent part of a head took ``hub serve`` from 122 to 160 MB
(7.5 KB a connection), with no bound but the process's open-files limit, at which new connections
were closed unanswered and calls in progress could not reach their upstream servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hub.core.connection_bound import FD_RESERVE, ConnectionBound
from hub.core.http_protocol import HubHttpToolsProtocol
from tests.deploy.raw_http import request, response, serving
from tests.deploy.serving import running_hub
from tests.support.migrated import migrated_sqlite

BOUND = 4


@contextlib.asynccontextmanager
async def _serving(limit: int = BOUND) -> AsyncIterator[tuple[int, ConnectionBound]]:
    bound = ConnectionBound(limit)

    class Bounded(HubHttpToolsProtocol):
        connection_bound = bound

    async with serving(http=Bounded) as port:
        yield port, bound


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _open(port: int, count: int) -> list[Connection]:
    return [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]


async def _served(connection: Connection) -> bool:
    reader, writer = connection
    writer.write(request(body=b"abc"))
    status, _, body = await response(reader)
    return status == 200 and body == b"3"


async def _refused(port: int) -> bool:
    """Whether a new connection is answered 503 ``server_busy`` and closed, sending nothing."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        status, head, body = await response(reader)
        assert b"retry-after: 1" in head
        assert json.loads(body)["error"]["code"] == "server_busy"
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed
        return status == 503
    finally:
        writer.close()


async def test_past_the_bound_a_connection_is_503_and_closed_and_the_held_ones_serve() -> None:
    async with _serving() as (port, _bound):
        held = await _open(port, BOUND)
        await asyncio.sleep(0.1)
        assert await _refused(port)
        assert await _refused(port)
        assert all([await _served(connection) for connection in held])  # still served
        for _, writer in held[:2]:
            writer.close()
        await asyncio.sleep(0.2)
        more = await _open(port, 2)  # room again, for two
        assert all([await _served(connection) for connection in more])
        assert await _refused(port)
        for _, writer in held[2:] + more:
            writer.close()


async def test_refusals_are_counted_into_one_warning_not_one_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="hub.core.connection_bound")
    async with _serving(limit=1) as (port, bound):
        held = await _open(port, 1)
        await asyncio.sleep(0.1)
        for _ in range(20):
            assert await _refused(port)
        held[0][1].close()
    warnings = [r for r in caplog.records if r.name == "hub.core.connection_bound"]
    assert len(warnings) == 1
    assert warnings[0].__dict__["refused_connections"] == 1  # the first; 19 wait for the next
    assert bound.refused == 19


def _bound_under(soft: int, hard: int, wanted: int) -> tuple[int, int, str]:
    """``limit_connections(wanted)`` in a process started with open-files limits (soft, hard):
    the bound, the soft limit after it, and its stderr."""
    code = (
        "import resource, logging, sys\n"
        "logging.basicConfig(stream=sys.stderr, level=logging.WARNING)\n"
        "from hub.core.connection_bound import limit_connections\n"
        f"bound = limit_connections({wanted})\n"
        "print(bound, resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )

    def limits() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limits,  # a plain setrlimit in the child before it runs
        check=True,
    )
    bound, after = done.stdout.split()
    return int(bound), int(after), done.stderr


def test_the_open_files_limit_is_raised_to_fit_the_bound() -> None:
    assert _bound_under(300, 4000, 1000) == (1000, 1000 + FD_RESERVE, "")


def test_where_it_cannot_be_raised_the_bound_is_lowered_to_fit_with_a_warning() -> None:
    bound, after, err = _bound_under(300, 300, 1000)
    assert (bound, after) == (300 - FD_RESERVE, 300)
    assert "HUB_MAX_CONNECTIONS lowered to fit the open-files limit" in err


@pytest.mark.slow
async def test_hub_serve_holds_at_most_its_setting(tmp_path: Path) -> None:
    migrated_sqlite(tmp_path / "hub.db")
    with running_hub(tmp_path, HUB_MAX_CONNECTIONS="16") as hub:
        held = await _open(hub.port, 16)
        await asyncio.sleep(0.2)
        assert await _refused(hub.port)
        for _, writer in held:
            writer.close()
        await asyncio.sleep(0.3)
        reader, writer = await asyncio.open_connection("127.0.0.1", hub.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        status, _, _ = await response(reader)
        assert status == 200
        writer.close()
    assert [line for line in hub.log_lines if line["level"] in ("error", "critical")] == []
    refused = [line for line in hub.log_lines if "refused_connections" in line]
    assert [(line["refused_connections"], line["max_connections"]) for line in refused] == [(1, 16)]
