"""A tenant with a deployment to call through the hub, built through the API, and MCP clients.

:func:`deploy` registers each upstream as a server (with a credential when a secret is given),
snapshots it, grants the agent ``tool:<handle>.*`` : ``call`` (or the given effect) and deploys
every server to the agent. :func:`rpc` sends one JSON-RPC request exactly as an era's client
would (2026-07-28: headers and ``_meta``; handshake eras: none needed, the endpoint is
stateless). :func:`sdk_client` opens the official SDK client on the endpoint.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
from fastapi import FastAPI
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from hub.core.db import Database
from hub.mcp import MODERN_VERSION, encode_header_value
from hub.mcp.headers import param_headers
from tests.support.factories import Actor
from tests.support.stories import TenantAdmin, make_tenant_admin

__all__ = ["Deployed", "Upstream", "deploy", "rpc", "sdk_client"]

META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test-agent", "version": "1"},
}


@dataclass(frozen=True)
class Upstream:
    handle: str
    url: str
    secret: str | None = None  # a credential pinned to the URL's origin, when given
    effect: str = "allow"
    allow_without_ask: Sequence[str] | None = None  # None: every tool of the catalog
    arguments: str = "strict"
    tool_names: str = "prefixed"


@dataclass
class Deployed:
    setup: TenantAdmin
    agent: Actor
    deployment_id: str
    catalogs: dict[str, dict[str, Any]] = field(default_factory=dict)
    credentials: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.setup.url("deployments", self.deployment_id, "mcp")

    @property
    def headers(self) -> dict[str, str]:
        return self.agent.headers


async def _ok(response: httpx2.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()["data"]


async def deploy(
    client: httpx2.AsyncClient, database: Database, upstreams: Sequence[Upstream]
) -> Deployed:
    setup = await make_tenant_admin(database)
    admin = setup.admin.headers
    agent_row = await _ok(
        await client.post(
            setup.url("principals"), json={"kind": "agent", "name": "agent"}, headers=admin
        )
    )
    key = await _ok(
        await client.post(setup.url("principals", agent_row["id"], "keys"), json={}, headers=admin)
    )
    agent = Actor(uuid.UUID(agent_row["id"]), setup.tenant_id, key["key"])
    deployed = Deployed(setup, agent, "")
    entries = []
    for upstream in upstreams:
        server: dict[str, Any] = {"handle": upstream.handle, "url": upstream.url}
        if upstream.secret is not None:
            origin = upstream.url.rsplit("/", 1)[0]
            credential = await _ok(
                await client.post(
                    setup.url("credentials"),
                    json={
                        "name": upstream.handle,
                        "type": "api_key",
                        "secret": upstream.secret,
                        "api_base_url": origin,
                    },
                    headers=admin,
                )
            )
            server["credential_id"] = credential["id"]
            deployed.credentials[upstream.handle] = credential["id"]
        await _ok(await client.post(setup.url("servers"), json=server, headers=admin))
        snapshot = await client.post(
            setup.url("servers", upstream.handle, "catalogs"), headers=admin
        )
        catalog = await _ok(snapshot)
        deployed.catalogs[upstream.handle] = catalog
        await _ok(
            await client.post(
                setup.url("grants"),
                json={
                    "principal_id": agent_row["id"],
                    "resource": f"tool:{upstream.handle}.*",
                    "action": "call",
                    "effect": upstream.effect,
                },
                headers=admin,
            )
        )
        names = [t["name"] for t in catalog["tools"]]
        entries.append(
            {
                "server": upstream.handle,
                "catalog_version": catalog["version"],
                "allow_without_ask": list(
                    upstream.allow_without_ask if upstream.allow_without_ask is not None else names
                ),
                "arguments": upstream.arguments,
                "tool_names": upstream.tool_names,
            }
        )
    made = await _ok(
        await client.post(
            setup.url("deployments"),
            json={"agent_id": agent_row["id"], "entries": entries},
            headers=admin,
        )
    )
    deployed.deployment_id = made["id"]
    return deployed


async def rpc(
    client: httpx2.AsyncClient,
    deployed: Deployed,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    era: str = "modern",
    tool: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    request_id: Any = 1,
) -> httpx2.Response:
    """One JSON-RPC request as an ``era`` client sends it (``tool``: its definition, for the
    ``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call``)."""
    body_params = dict(params or {})
    sent = {**deployed.headers, **(headers or {})}
    if era == "modern":
        body_params["_meta"] = {**META, **body_params.get("_meta", {})}
        sent.setdefault("mcp-protocol-version", MODERN_VERSION)
        sent.setdefault("mcp-method", method)
        if method == "tools/call":
            sent.setdefault("mcp-name", encode_header_value(str(body_params.get("name"))))
            sent.update(param_headers(tool, body_params.get("arguments") or {}))
    elif era != "2025-03-26":
        sent.setdefault("mcp-protocol-version", era)
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}
    return await client.post(deployed.url, json=message, headers=sent)


@contextlib.asynccontextmanager
async def sdk_client(
    app: FastAPI, deployed: Deployed, *, mode: str = "auto"
) -> AsyncIterator[Client]:
    """The official SDK client on the deployment's endpoint, in-process (ASGI transport)."""
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(
        transport=transport, base_url="http://hub.test", headers=deployed.headers, timeout=30
    ) as http:
        url = f"http://hub.test{deployed.url}"
        connect_mode: Any = mode  # "auto" | "legacy"
        transport_to_hub = streamable_http_client(url, http_client=http)
        async with Client(transport_to_hub, mode=connect_mode, cache=None) as mcp:
            yield mcp
