"""Drift re-gates the sidecar's tools too (SECURITY §7.50): once a tool drifts, the agent's
bundle carries it as ``ask`` and ``drifted`` under a new ETag, and the sidecar's own listing
(the engine's ``list_tools`` over the bundle, as ``hub.sidecar.server`` lists) marks it."""

from __future__ import annotations

import copy

import httpx2
from fastapi import FastAPI

from hub.core.db import Database
from hub.gateway.engine.engine import Gateway
from hub.sidecar.bundle import Bundle, parse_bundle
from hub.sidecar.server import BundleDecider
from tests.drift.support import run_drift
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter

TOOLS = [
    {"name": name, "description": f"{name}.", "inputSchema": {"type": "object"}}
    for name in ("t1", "t2")
]


async def _bundle(client: httpx2.AsyncClient, deployed: Deployed) -> Bundle:
    got = await client.get(
        deployed.setup.url("deployments", deployed.deployment_id, "bundle"),
        headers=deployed.headers,
    )
    assert got.status_code == 200, got.text
    return parse_bundle(got.content, got.headers.get("etag"))


def _asking(bundle: Bundle) -> set[str]:
    listed = Gateway().list_tools(bundle.view, BundleDecider(bundle), legacy=False)
    return {
        t["name"] for t in listed if (t.get("_meta") or {}).get("io.mcphub/approval") == "required"
    }


async def test_a_drifted_tool_asks_in_the_sidecars_listing(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    peer = await handmade_peer(era="modern", tools=copy.deepcopy(TOOLS))
    deployed = await deploy(client, database, [Upstream("up", peer.url)])  # all without ask
    before = await _bundle(client, deployed)
    assert before.effects == {"up__t1": "allow", "up__t2": "allow"}
    assert _asking(before) == set()
    peer.knobs.tools = [{**TOOLS[0], "description": "t1, swapped underneath."}, TOOLS[1]]
    assert await run_drift(app, database) == 1
    after = await _bundle(client, deployed)
    assert after.etag != before.etag
    assert after.effects == {"up__t1": "ask", "up__t2": "allow"}
    assert after.view.tools["up__t1"].drifted
    assert not after.view.tools["up__t2"].drifted
    assert _asking(after) == {"up__t1"}
