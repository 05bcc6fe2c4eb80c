"""A relayed call the hub gave no answer to is not said to have not run: once the whole request
was sent (the hub then stayed silent past ``--call-timeout``, or dropped the connection), the
call may have run, and the result says its outcome is unknown (reason ``hub_no_answer``). A
call never sent (nothing listening) did not run (``hub_unreachable``). Both are class
``unavailable``. The "hub" is a loopback socket in the test's process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from hub.sidecar.config import SidecarConfig
from hub.sidecar.hubclient import HubClient
from hub.sidecar.relay import Relay
from tests.deploy.serving import free_port

TENANT = "00000000-0000-4000-8000-000000000001"
DEPLOYMENT = "00000000-0000-4000-8000-000000000002"


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)


@asynccontextmanager
async def _hub(behaviour: str) -> AsyncIterator[int]:
    """A port whose "hub" reads each whole request, then stays ``silent`` or ``drop``s it."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        if behaviour == "silent":
            await asyncio.sleep(30)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def _relayed(port: int, tmp_path: Path) -> dict[str, object]:
    config = SidecarConfig.checked(
        hub=f"http://127.0.0.1:{port}",
        tenant=TENANT,
        deployment=DEPLOYMENT,
        agent_key="mcphub_test-key",
        cache_dir=tmp_path,
        call_timeout_s=1,
    )
    hub = HubClient(config)
    try:
        return await Relay(hub).call(None, "docs__echo", {"text": "x"})
    finally:
        await hub.aclose()


@pytest.mark.parametrize("behaviour", ["silent", "drop"])
async def test_a_call_sent_and_not_answered_may_have_run(tmp_path: Path, behaviour: str) -> None:
    async with _hub(behaviour) as port:
        result = await _relayed(port, tmp_path)
    assert result["isError"] is True
    assert result["_meta"] == {
        "io.mcphub/error": {"class": "unavailable", "reason": "hub_no_answer"}
    }
    text = result["content"][0]["text"]  # type: ignore[index]
    assert text.startswith("unavailable: the call's outcome is unknown, it may have run (")
    assert "did not run" not in text


async def test_a_call_never_sent_did_not_run(tmp_path: Path) -> None:
    result = await _relayed(free_port(), tmp_path)  # nothing listens there
    assert result["_meta"] == {
        "io.mcphub/error": {"class": "unavailable", "reason": "hub_unreachable"}
    }
    text = result["content"][0]["text"]  # type: ignore[index]
    assert text.startswith("unavailable: the call did not run (cannot connect to http://127.0.0.1:")
