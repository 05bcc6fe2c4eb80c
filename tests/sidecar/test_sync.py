"""Bundle sync: the cache serves lists while the hub is down (until ``--max-stale``), calls fail
closed in bounded time, sync resumes when the hub is back, and a changed bundle sends
``notifications/tools/list_changed`` (handshake eras) or a listen event (2026-07-28)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.deploy.serving import free_port
from tests.gateway.support import Deployed, Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import Sidecar, deploy_on, listening_sidecar, live_hub
from tests.sidecar.test_listen import http_client

SYNC = ("--sync-interval", "1", "--max-stale", "6")


async def _grant(deployed: Deployed, hub_url: str, resource: str, effect: str) -> None:
    async with httpx2.AsyncClient(base_url=hub_url, timeout=30) as http:
        made = await http.post(
            deployed.setup.url("grants"),
            json={
                "principal_id": str(deployed.agent.principal_id),
                "resource": resource,
                "action": "call",
                "effect": effect,
            },
            headers=deployed.setup.admin.headers,
        )
        assert made.status_code == 201, made.text


async def _until(check: Any, within: float = 20) -> Any:
    deadline = time.monotonic() + within
    while True:
        try:
            found = await check()
            if found:
                return found
        except MCPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("not in time")
        await anyio.sleep(0.2)


async def test_hub_down_lists_from_cache_until_max_stale_then_resumes(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        sidecar = Sidecar(hub, deployed, tmp_path, SYNC)
        with listening_sidecar(sidecar, free_port()) as running:
            cache_files = list(sidecar.cache_dir.iterdir())
            assert len(cache_files) == 1
            assert stat.S_IMODE(os.stat(cache_files[0]).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(sidecar.cache_dir).st_mode) == 0o700
            async with http_client(running, "auto") as mcp:
                before = [t.name for t in (await mcp.list_tools()).tools]
                # from before the stop: the staleness counts from the last sync, which may be a
                # sync interval before it, and a stop under load takes seconds of its own
                down_at = time.monotonic()
                hub.stop()
                assert [t.name for t in (await mcp.list_tools()).tools] == before
                started = time.monotonic()
                failed = await mcp.call_tool("docs__echo", {"text": "x"})
                assert time.monotonic() - started < 10 + 1.5  # fails closed, never hangs
                assert failed.is_error is True
                assert (failed.meta or {})["io.mcphub/error"]["class"] == "unavailable"

                async def refused() -> bool:
                    try:
                        await mcp.list_tools()
                    except MCPError as error:
                        return error.error.code == 50300
                    return False

                await _until(refused)
                # served from the cache until max-stale (6 s), less the sync interval (1 s) and
                # a second for the last sync itself
                assert time.monotonic() - down_at >= 6 - 2
                hub.start()

                async def listed() -> bool:
                    return [t.name for t in (await mcp.list_tools()).tools] == before

                await _until(listed)
                done = await mcp.call_tool("docs__echo", {"text": "back"})
                assert done.is_error is False


async def test_restart_with_hub_down_serves_the_cached_bundle(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path, SYNC)
        with listening_sidecar(sidecar, free_port()) as running:
            async with http_client(running, "auto") as mcp:
                before = [t.name for t in (await mcp.list_tools()).tools]
        hub.stop()
        with listening_sidecar(sidecar, free_port()) as running:
            async with http_client(running, "auto") as mcp:
                assert [t.name for t in (await mcp.list_tools()).tools] == before


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_changed_bundle_sends_list_changed(
    tmp_path: Path, sdk_peer: SdkPeerStarter, mode: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path, SYNC)
        with listening_sidecar(sidecar, free_port()) as running:
            if mode == "legacy":
                await _legacy_notified(running, deployed, hub.url)
            else:
                await _modern_notified(running, deployed, hub.url)


async def _legacy_notified(running: Any, deployed: Deployed, hub_url: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    import httpx2 as _h
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {running.token}"}
    async with _h.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(running.url, http_client=http)
        async with Client(transport, mode="legacy", cache=None, message_handler=on_message) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            assert "docs__add" in names
            await anyio.sleep(0.5)  # the GET stream is open
            await _grant(deployed, hub_url, "tool:docs.add", "deny")
            with anyio.fail_after(15):
                await changed.wait()
            names = {t.name for t in (await mcp.list_tools()).tools}
            assert "docs__add" not in names


async def _modern_notified(running: Any, deployed: Deployed, hub_url: str) -> None:
    async with http_client(running, "auto") as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        assert "docs__add" in names
        async with mcp.listen(tools_list_changed=True) as subscription:
            await _grant(deployed, hub_url, "tool:docs.add", "deny")
            with anyio.fail_after(15):
                async for _event in subscription:
                    break
        names = {t.name for t in (await mcp.list_tools()).tools}
        assert "docs__add" not in names
