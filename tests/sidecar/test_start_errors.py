"""``hub sidecar`` refuses to start with one clear line (and exit 1), never a traceback."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import httpx2
import pytest

from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import Sidecar, deploy_on, error_lines, live_hub, run_sidecar


def _one_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 1
    assert done.stdout == ""
    lines = error_lines(done)
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_no_agent_key(tmp_path: Path) -> None:
    _one_line(run_sidecar(tmp_path, "--stdio", key=None), "HUB_AGENT_KEY")


def test_plain_http_to_a_remote_hub_is_refused(tmp_path: Path) -> None:
    done = run_sidecar(tmp_path, "--stdio", key="hub_x", hub="http://hub.example.com")
    _one_line(done, "https")


def test_neither_or_both_transports(tmp_path: Path) -> None:
    _one_line(run_sidecar(tmp_path, key="hub_x"), "--stdio")


def test_unreachable_hub_with_no_cache(tmp_path: Path) -> None:
    _one_line(run_sidecar(tmp_path, "--stdio", key="hub_x"), "cannot connect", "no cached bundle")


async def test_bad_key_and_unknown_deployment(tmp_path: Path, sdk_peer: SdkPeerStarter) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        tenant = str(deployed.setup.tenant_id)
        bad_key = run_sidecar(
            tmp_path,
            "--stdio",
            key="hub_" + "x" * 51,
            hub=hub.url,
            tenant=tenant,
            deployment=deployed.deployment_id,
        )
        _one_line(bad_key, "HUB_AGENT_KEY", "401")
        unknown = run_sidecar(
            tmp_path,
            "--stdio",
            key=deployed.agent.key,
            hub=hub.url,
            tenant=tenant,
            deployment=str(uuid.uuid4()),
        )
        _one_line(unknown, "unknown", "403")
        # another tenant's id, a slug naming no tenant, and a --tenant that is neither
        for other, needles in [
            (str(uuid.uuid4()), ("unknown", "404")),
            ("no-such-tenant", ("unknown", "404")),
            ("Not_A_Slug", ("--tenant", "not a tenant id or slug")),
        ]:
            refused = run_sidecar(
                tmp_path,
                "--stdio",
                key=deployed.agent.key,
                hub=hub.url,
                tenant=other,
                deployment=deployed.deployment_id,
            )
            _one_line(refused, *needles)


async def test_a_deployment_name_that_is_unknown_ambiguous_or_unresolvable(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """A name is looked up among the agent's own deployments only: none of that name lists the
    names it has, two of it ask for the id, and with the hub down a name never resolved here
    cannot be guessed."""
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        admin = deployed.setup.admin.headers
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            first = deployed.setup.url("deployments", deployed.deployment_id)
            assert (await http.patch(first, json={"name": "twin"}, headers=admin)).is_success
            copy = (await http.get(first, headers=admin)).json()["data"]
            entries = [
                {"server": e["server"], "catalog_version": e["catalog_version"]}
                for e in copy["entries"]
            ]
            again = await http.post(
                deployed.setup.url("deployments"),
                json={"agent_id": copy["agent_id"], "name": "twin", "entries": entries},
                headers=admin,
            )
            assert again.status_code == 201, again.text

        def by_name(name: str, key: str = deployed.agent.key) -> subprocess.CompletedProcess[str]:
            tenant = str(deployed.setup.tenant_id)
            return run_sidecar(
                tmp_path, "--stdio", key=key, hub=hub.url, tenant=tenant, deployment=name
            )

        _one_line(by_name("nobody"), "'nobody'", "no deployment of that name", "'twin'")
        _one_line(by_name("twin"), "2 of this agent's deployments", "give its id")
        _one_line(by_name("twin", key="hub_" + "x" * 51), "cannot look the name up", "401")
        hub.stop()
        _one_line(by_name("twin"), "cannot connect", "never resolved here", "give its id")
    for blank in (" ", "tab\there"):
        done = run_sidecar(tmp_path, "--stdio", key="hub_x", deployment=blank)
        _one_line(done, "--deployment", "not a deployment id or name")


@pytest.mark.parametrize("max_stale", ["0"])
async def test_cache_past_max_stale_with_the_hub_down(
    tmp_path: Path, sdk_peer: SdkPeerStarter, max_stale: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path)
        first = run_sidecar(
            tmp_path,
            "--stdio",
            key=deployed.agent.key,
            hub=hub.url,
            tenant=str(deployed.setup.tenant_id),
            deployment=deployed.deployment_id,
        )  # stdin at EOF: syncs once, writes the cache, and ends cleanly
        assert first.returncode == 0, first.stderr
        assert list(sidecar.cache_dir.iterdir())
        hub.stop()
        stale = run_sidecar(
            tmp_path,
            "--stdio",
            "--max-stale",
            max_stale,
            key=deployed.agent.key,
            hub=hub.url,
            tenant=str(deployed.setup.tenant_id),
            deployment=deployed.deployment_id,
        )
        _one_line(stale, "cannot connect", "past --max-stale")


def test_direct_mode_needs_the_sidecar_key(tmp_path: Path) -> None:
    _one_line(run_sidecar(tmp_path, "--stdio", "--mode", "direct", key="hub_x"), "HUB_SIDECAR_KEY")
