"""``hub sidecar --stdio`` spawned by the SDK's stdio client, against a live ``hub serve``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import Sidecar, deploy_on, live_hub, stdio_sidecar


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_sidecar_lists_and_calls_through_the_hub(
    tmp_path: Path, sdk_peer: SdkPeerStarter, mode: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        sidecar = Sidecar(hub, deployed, tmp_path)
        async with stdio_sidecar(sidecar, mode=mode) as mcp:
            listed = await mcp.list_tools()
            names = [t.name for t in listed.tools]
            assert names == sorted(names)
            assert {"docs__echo", "docs__add"} <= set(names)
            add = next(t for t in listed.tools if t.name == "docs__add")
            assert (add.meta or {}).get("io.mcphub/approval") == "required"
            done = await mcp.call_tool("docs__echo", {"text": "hello"})
            assert done.is_error is False
            assert json.loads(done.content[0].text) == {"text": "hello"}  # type: ignore[union-attr]
            assert mcp.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")


async def test_the_tenant_may_be_named_by_its_slug(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """``--tenant acme`` as everywhere else in the hub; the bundle names the tenant's id."""
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            me = await http.get("/whoami", headers=deployed.headers)
        slug = me.json()["data"]["tenant_slug"]
        sidecar = Sidecar(hub, deployed, tmp_path, tenant=slug)
        async with stdio_sidecar(sidecar) as mcp:
            assert "docs__echo" in {t.name for t in (await mcp.list_tools()).tools}
            done = await mcp.call_tool("docs__echo", {"text": "by slug"})
            assert done.is_error is False
            assert json.loads(done.content[0].text) == {"text": "by slug"}  # type: ignore[union-attr]


async def test_the_deployment_may_be_named_by_its_name(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """``--deployment docs-bot`` as ``hub deployments show docs-bot`` takes it: resolved among
    the agent's own deployments (``/whoami``), and remembered, so a start by name with the hub
    down still serves the cached bundle."""
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            named = await http.patch(
                deployed.setup.url("deployments", deployed.deployment_id),
                json={"name": "docs-bot"},
                headers=deployed.setup.admin.headers,
            )
            assert named.status_code == 200, named.text
        sidecar = Sidecar(hub, deployed, tmp_path, deployment="docs-bot")
        async with stdio_sidecar(sidecar) as mcp:
            done = await mcp.call_tool("docs__echo", {"text": "by name"})
            assert done.is_error is False
            assert json.loads(done.content[0].text) == {"text": "by name"}  # type: ignore[union-attr]
        remembered = [p for p in sidecar.cache_dir.iterdir() if p.name.startswith("names-")]
        assert len(remembered) == 1
        assert json.loads(remembered[0].read_text()) == {"docs-bot": deployed.deployment_id}
        assert remembered[0].stat().st_mode & 0o777 == 0o600
        hub.stop()
        async with stdio_sidecar(sidecar) as mcp:  # the hub is down: the cache serves the list
            assert "docs__echo" in {t.name for t in (await mcp.list_tools()).tools}
        assert "last resolved for 'docs-bot'" in sidecar.stderr_path.read_text()
