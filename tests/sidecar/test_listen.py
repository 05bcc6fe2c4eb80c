"""``hub sidecar --listen``: loopback Streamable HTTP at /mcp behind a bearer token, with Host
and Origin checks and a bounded request head, for the SDK's streamable HTTP client in both
eras."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from hub.core.http_protocol import MAX_REQUEST_HEAD_BYTES
from tests.deploy.serving import free_port
from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import (
    INIT,
    Running,
    Sidecar,
    deploy_on,
    listening_sidecar,
    live_hub,
    run_sidecar,
)

ACCEPT = {"accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def http_client(running: Running, mode: str) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {running.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        connect: Any = mode
        async with Client(
            streamable_http_client(running.url, http_client=http), mode=connect, cache=None
        ) as mcp:
            yield mcp


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_listen_serves_the_sdk_http_client_in_both_eras(
    tmp_path: Path, sdk_peer: SdkPeerStarter, mode: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        sidecar = Sidecar(hub, deployed, tmp_path)
        with listening_sidecar(sidecar, free_port()) as running:
            token_file = tmp_path / "token"
            assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
            async with http_client(running, mode) as mcp:
                names = [t.name for t in (await mcp.list_tools()).tools]
                assert "docs__echo" in names
                done = await mcp.call_tool("docs__echo", {"text": "over http"})
                assert json.loads(done.content[0].text) == {"text": "over http"}  # type: ignore[union-attr]
                assert mcp.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            assert running.process.poll() is None
        assert running.process.returncode == 0  # SIGTERM ends it cleanly
        assert running.stdout == b""  # nothing on stdout, ever


async def test_listen_refuses_without_the_token_and_foreign_host_or_origin(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path)
        port = free_port()
        with listening_sidecar(sidecar, port) as running:
            async with httpx2.AsyncClient(timeout=10) as http:
                none = await http.post(running.url, json=INIT, headers=ACCEPT)
                assert none.status_code == 401
                assert none.json()["error"]["data"]["class"] == "unauthenticated"
                wrong = await http.post(
                    running.url, json=INIT, headers={**ACCEPT, "authorization": "Bearer nope"}
                )
                assert wrong.status_code == 401
                token = f"Bearer {running.token}"
                for pair in (["Bearer nope", token], [token, "Bearer nope"], [token, token]):
                    twice = [*ACCEPT.items(), *(("authorization", v) for v in pair)]
                    ambiguous = await http.post(running.url, json=INIT, headers=twice)
                    assert ambiguous.status_code == 401, pair
                big = {**ACCEPT, "x-big": "a" * MAX_REQUEST_HEAD_BYTES}  # read before the token
                huge = await http.post(running.url, json=INIT, headers=big)
                assert huge.status_code == 431
                good = {**ACCEPT, "authorization": f"Bearer {running.token}"}
                rebound = await http.post(
                    running.url, json=INIT, headers={**good, "host": f"evil.example:{port}"}
                )
                assert rebound.status_code in (400, 403, 421)
                foreign = await http.post(
                    running.url, json=INIT, headers={**good, "origin": "http://evil.example"}
                )
                assert foreign.status_code == 403
                fine = await http.post(running.url, json=INIT, headers=good)
                assert fine.status_code == 200


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "192.0.2.1:8765", "localhost:8765"])
def test_listen_refuses_a_non_loopback_address(tmp_path: Path, address: str) -> None:
    done = run_sidecar(
        tmp_path, "--listen", address, "--token-file", str(tmp_path / "t"), key="hub_x"
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    assert len(lines) == 1, done.stderr
    assert address in lines[0]
    assert not (tmp_path / "t").exists()
