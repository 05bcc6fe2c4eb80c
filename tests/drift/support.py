"""Helpers of the drift tests: run the drift job, read the drift route, tools/list and calls."""

from __future__ import annotations

from typing import Any

import httpx2
from fastapi import FastAPI

from hub.core.components import components_of
from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.drift.watch import DriftWatch
from hub.drift.worker import drift_pass
from tests.gateway.support import Deployed, rpc

__all__ = ["call", "drift_of", "listed", "metric", "run_drift", "tools_by_name"]


async def run_drift(app: FastAPI, database: Database) -> int:
    """One pass of the drift job's handler (what the ``drift.watch`` worker job runs)."""
    return await drift_pass(database, components_of(app).get(DriftWatch))


async def drift_of(client: httpx2.AsyncClient, deployed: Deployed) -> dict[str, Any]:
    got = await client.get(
        deployed.setup.url("deployments", deployed.deployment_id, "drift"),
        headers=deployed.setup.admin.headers,
    )
    assert got.status_code == 200, got.text
    data: dict[str, Any] = got.json()["data"]
    return data


def tools_by_name(drift: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["tool"]: t for t in drift["tools"]}


async def listed(client: httpx2.AsyncClient, deployed: Deployed) -> dict[str, dict[str, Any]]:
    """``tools/list`` of the deployment, by wire name."""
    response = await rpc(client, deployed, "tools/list")
    assert response.status_code == 200, response.text
    return {t["name"]: t for t in response.json()["result"]["tools"]}


def asks(tool: dict[str, Any]) -> bool:
    return (tool.get("_meta") or {}).get("io.mcphub/approval") == "required"


async def call(
    client: httpx2.AsyncClient, deployed: Deployed, handle: str, name: str, arguments: Any
) -> dict[str, Any]:
    """One ``tools/call``; the JSON-RPC response body."""
    tool = next(t for t in deployed.catalogs[handle]["tools"] if t["name"] == name)
    response = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": f"{handle}__{name}", "arguments": arguments},
        tool=tool,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def metric(app: FastAPI, name: str, **labels: str) -> float:
    value = components_of(app).get(Metrics).registry.get_sample_value(name, labels)
    return float(value or 0.0)
