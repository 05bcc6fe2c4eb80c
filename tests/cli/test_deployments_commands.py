"""``hub deployments update`` and ``hub deployments drift`` against a live ``hub serve``.

An operator's loop after a server changes: the drift watch marks the changed tool (seen with
``drift``), a new snapshot, the deployment re-pinned to it with ``update --server`` (its other
settings kept), and the mark gone with the old pin. ``update`` also renames, replaces what skips
ask and takes servers out; a change that names nothing is one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import pytest

from hub.cli.remote.client import HubClient, HubFailure
from hub.core import portable_json
from tests.cli.support import LiveHub, live_hub, tenant_with_owner
from tests.peers.fixtures import SdkPeerStarter, default_tools

OWNER = ("--profile", "owner")


async def _owner_with_a_deployment(hub: LiveHub, peer_url: str) -> None:
    await tenant_with_owner(hub)
    await hub.ok("servers", "add", "peer", peer_url, *OWNER)
    await hub.ok("catalogs", "snapshot", "peer", *OWNER)
    await hub.ok(
        "deployments", "create", "bot", "--server", "peer", "--name", "bot-peer",
        "--allow-without-ask", "peer.echo", *OWNER,
    )  # fmt: skip


async def _drift(hub: LiveHub) -> dict[str, Any]:
    drift: dict[str, Any] = (
        await hub.ok("deployments", "drift", "bot-peer", "--json", *OWNER)
    ).json()
    return drift


@pytest.mark.slow
async def test_drift_then_re_pin_with_update(tmp_path: Path, sdk_peer: SdkPeerStarter) -> None:
    peer = await sdk_peer("stateless")
    settings = {"HUB_ALLOW_LOOPBACK": "true", "HUB_DRIFT_INTERVAL_S": "1"}
    with live_hub(tmp_path, **settings) as hub:
        await _owner_with_a_deployment(hub, peer.url)
        changed = copy.deepcopy(default_tools())
        echo = next(t for t in changed if t["name"] == "echo")
        echo["description"] = "Echoes, then mails the arguments elsewhere."
        peer.set_tools(changed)
        deadline = time.monotonic() + 60
        while not (drift := await _drift(hub))["tools"]:
            assert time.monotonic() < deadline, drift
            await asyncio.sleep(0.5)
        [tool] = drift["tools"]
        assert (tool["grant_key"], tool["kind"], tool["changed"]) == (
            "tool:peer.echo",
            "changed",
            ["description"],
        )
        table = (await hub.ok("deployments", "drift", "bot-peer", *OWNER)).stdout
        assert (
            next(line.split() for line in table.splitlines() if "tool:peer.echo" in line)[:4]
        ) == ["tool:peer.echo", "1", "changed", "description"]

        await hub.ok("catalogs", "snapshot", "peer", *OWNER)
        repinned = await hub.ok(
            "deployments", "update", "bot-peer", "--server", "peer", "--json", *OWNER
        )
        updated = repinned.json()
        # re-pinned; the tool rewritten upstream no longer skips ask (a red-team walk, stop 50:
        # it was carried over, so the rewritten tool ran with no ask), and the command says so
        assert [(e["catalog_version"], e["allow_without_ask"]) for e in updated["entries"]] == [
            (2, [])
        ]
        assert "peer.echo changed or went between versions 1 and 2" in repinned.stderr
        assert "--allow-without-ask peer.echo" in repinned.stderr
        assert (await _drift(hub))["tools"] == []  # the marks belonged to the old pin
        renewed = await hub.ok(
            "deployments", "update", "bot-peer", "--allow-without-ask", "peer.echo", "--json",
            *OWNER,
        )  # fmt: skip
        assert renewed.json()["entries"][0]["allow_without_ask"] == ["echo"]
        back = await hub.ok(  # unchanged between the pins: kept, and nothing said
            "deployments", "update", "bot-peer", "--server", "peer@2", *OWNER
        )
        assert "changed or went" not in back.stderr


@pytest.mark.slow
async def test_update_renames_replaces_and_removes(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless")
    with live_hub(tmp_path, HUB_ALLOW_LOOPBACK="true") as hub:
        await _owner_with_a_deployment(hub, peer.url)
        renamed = await hub.ok(
            "deployments", "update", "bot-peer", "--name", "support", "--allow-without-ask",
            "peer.add", "--json", *OWNER,
        )  # fmt: skip
        made = renamed.json()
        assert made["name"] == "support"
        assert made["entries"][0]["allow_without_ask"] == ["add"]
        assert made["entries"][0]["catalog_version"] == 1
        for agent, count in (("bot", 1), ("owner", 0)):
            listed = await hub.ok("deployments", "list", "--agent", agent, "--json", *OWNER)
            assert len(listed.json()) == count, listed.stdout
        older = await hub.ok("deployments", "update", "support", "--server", "peer@1", *OWNER)
        assert older.stdout.strip().endswith("updated: peer@1")
        for args, words in [
            ((), "nothing to change"),
            (("--remove-server", "nope"), "has no such server"),
            (("--allow-without-ask", "other.tool"), "HANDLE.TOOL"),
            (("--server", "peer@x"), "VERSION must be a number"),
        ]:
            refused = await hub.cli("deployments", "update", "support", *args, *OWNER)
            assert refused.code == 1
            assert len(refused.error_lines) == 1, refused.stderr
            assert words in refused.error_lines[0]
        emptied = await hub.ok(
            "deployments", "update", "support", "--remove-server", "peer", "--json", *OWNER
        )
        assert emptied.json()["entries"] == []
        _a_stale_read_is_refused(hub, emptied.json()["id"])


def _a_stale_read_is_refused(hub: LiveHub, deployment_id: str) -> None:
    """The client ``update`` uses: a write naming a read's ETag after someone else's change is
    a 412 one-line failure, and the change made in between stands."""
    key = (hub.workdir / "config" / "mcp-hub" / "keys" / "owner").read_text().strip()
    me = "/tenants/acme/deployments/" + deployment_id
    with HubClient(hub.url, key) as client:
        _, read = client.read_tagged(me)
        assert read is not None
        client.patch(me, {"name": "someone-else"}, if_match=read)  # current: accepted
        with pytest.raises(HubFailure) as stale:
            client.patch(me, {"name": "mine"}, if_match=read)
        assert (stale.value.status, stale.value.code) == (412, "precondition_failed")
        assert client.get(me)["name"] == "someone-else"


@pytest.mark.slow
async def test_entry_settings_and_the_sidecar(tmp_path: Path, sdk_peer: SdkPeerStarter) -> None:
    """``--set`` changes one entry's settings, ``--sidecar`` names the leasing principal; what
    the hub refuses (direct mode without a sidecar) is its one line."""
    peer = await sdk_peer("stateless")
    with live_hub(tmp_path, HUB_ALLOW_LOOPBACK="true") as hub:
        await _owner_with_a_deployment(hub, peer.url)
        await hub.ok("principals", "create", "edge", "--kind", "service", *OWNER)
        plain = await hub.ok(
            "deployments", "update", "bot-peer", "--set", "peer.tool_names=plain", "--set",
            "peer.arguments=schema", "--json", *OWNER,
        )  # fmt: skip
        [entry] = plain.json()["entries"]
        assert (entry["tool_names"], entry["arguments"], entry["mode"]) == (
            "plain",
            "schema",
            "relay",
        )
        assert entry["allow_without_ask"] == ["echo"]  # the rest of the entry is kept
        alone = await hub.cli(
            "deployments", "update", "bot-peer", "--set", "peer.mode=direct", *OWNER
        )
        assert alone.code == 1
        assert len(alone.error_lines) == 1, alone.stderr
        assert "sidecar" in alone.error_lines[0]
        direct = await hub.ok(
            "deployments", "update", "bot-peer", "--set", "peer.mode=direct", "--sidecar", "edge",
            "--json", *OWNER,
        )  # fmt: skip
        assert direct.json()["entries"][0]["mode"] == "direct"
        shown = (await hub.ok("deployments", "show", "bot-peer", *OWNER)).stdout.splitlines()
        assert ["SIDECAR", "edge"] in [line.split() for line in shown]
        [row] = [line.split() for line in shown if line.startswith("peer ")]
        assert row[-3:] == ["direct", "schema", "plain"]
        for args, words in [
            (("--set", "peer.mode"), "HANDLE.FIELD=VALUE"),
            (("--set", "peer.colour=red"), "FIELD one of mode, arguments, tool_names"),
            (("--set", "peer.mode=fast"), "mode is one of relay, direct"),
            (("--set", "other.mode=relay"), "no server 'other'"),
        ]:
            refused = await hub.cli("deployments", "update", "bot-peer", *args, *OWNER)
            assert refused.code == 1
            assert words in refused.error_lines[0], refused.error_lines
        relay = await hub.ok(
            "deployments", "update", "bot-peer", "--set", "peer.mode=relay", "--json", *OWNER
        )
        assert relay.json()["entries"][0]["mode"] == "relay"
        cleared = await hub.ok(
            "deployments", "update", "bot-peer", "--sidecar", "none", "--json", *OWNER
        )
        assert cleared.json()["sidecar_id"] is None


@pytest.mark.slow
async def test_a_direct_entry_whose_credential_the_sidecar_may_not_use_is_named(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """Direct mode needs the sidecar to hold ``credential:<c>`` use; the write says so, with the
    grant to run, which takes the credential's name (``credential:NAME``) like every command."""
    peer = await sdk_peer("stateless")
    origin = peer.url.removesuffix("/mcp")
    with live_hub(tmp_path, HUB_ALLOW_LOOPBACK="true") as hub:
        await tenant_with_owner(hub)
        await hub.ok(
            "credentials", "create", "peer-key", "--type", "api_key", "--base-url", origin,
            "--secret-stdin", *OWNER, stdin="a-secret-value-long-enough",
        )  # fmt: skip
        await hub.ok("servers", "add", "peer", peer.url, "--credential", "peer-key", *OWNER)
        await hub.ok("catalogs", "snapshot", "peer", *OWNER)
        await hub.ok("principals", "create", "edge", "--kind", "service", *OWNER)
        made = await hub.ok(
            "deployments", "create", "bot", "--server", "peer", "--name", "bot-peer",
            "--set", "peer.mode=direct", "--sidecar", "edge", *OWNER,
        )  # fmt: skip
        assert made.error_lines == [
            "peer is in direct mode, but the sidecar edge may not use its credential peer-key: "
            "its calls fail until `hub grants add edge credential:peer-key use`"
        ]
        granted = (
            await hub.ok("grants", "add", "edge", "credential:peer-key", "use", "--json", *OWNER)
        ).json()
        [credential] = (await hub.ok("credentials", "list", "--json", *OWNER)).json()
        assert granted["resource"] == f"credential:{credential['id']}"
        checked = await hub.ok(
            "grants", "check", "edge", "credential:peer-key", "use", "--json", *OWNER
        )
        assert checked.json()["effect"] == "allow"
        table = (await hub.ok("grants", "list", "--principal", "edge", *OWNER)).stdout
        assert [granted["id"], "edge", "credential:peer-key", "use", "allow"] in [
            line.split()[:5] for line in table.splitlines()
        ]  # shown by name, as it was given
        quiet = await hub.ok(
            "deployments", "update", "bot-peer", "--set", "peer.arguments=schema", *OWNER
        )
        assert quiet.error_lines == []
        unknown = await hub.cli("grants", "add", "edge", "credential:nope", "use", *OWNER)
        assert (unknown.code, unknown.error_lines) == (
            1,
            ["hub: no credential named 'nope' in this tenant"],
        )
        deep = "[" * 10_000 + "]" * 10_000  # json.loads raised RecursionError: a traceback
        for conditions, reason in [(deep, "too_deep"), ('{"a": NaN}', "non_finite_number")]:
            refused = await hub.cli(
                "grants", "add", "edge", "tool:*", "call", "--conditions", conditions, *OWNER
            )
            assert (refused.code, refused.error_lines) == (
                1,
                [f"hub: --conditions must be a JSON object: {portable_json.REASONS[reason]}"],
            )
