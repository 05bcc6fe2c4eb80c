"""Console tests: a tenant with an admin, an agent, a server with two catalog versions, a
deployment, and a console user signed in through the HTTP forms."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from tests.console.support import ConsoleUser, seed_catalogs
from tests.peers.fixtures import sdk_peer
from tests.support.factories import Actor, make_principal
from tests.support.stories import TenantAdmin, make_tenant_admin

__all__ = ["sdk_peer"]

XSS = '<script>alert("xss")</script><img src=x onerror=alert(1)>'
TOOLS_V1: list[dict[str, object]] = [
    {"name": "delete_record", "description": XSS, "inputSchema": {"type": "object"}},
    # a right-to-left override in a description: shown escaped outside the JSON too
    {"name": "search", "description": "Searches.\u202eexe.txt", "inputSchema": {"type": "object"}},
]
TOOLS_V2: list[dict[str, object]] = [
    {"name": "delete_record", "description": "Deletes.", "inputSchema": {"type": "object"}},
    {"name": "create", "description": "Creates.", "inputSchema": {"type": "object"}},
]


@dataclass
class ConsoleWorld:
    setup: TenantAdmin
    agent: Actor
    deployment_id: uuid.UUID
    handle: str = "peer"

    @property
    def tenant_id(self) -> uuid.UUID:
        return self.setup.tenant_id

    def page(self, *parts: object) -> str:
        return "/".join([f"/console/t/{self.tenant_id}", *(str(p) for p in parts)])


async def build_world(client: httpx2.AsyncClient, database: Database) -> ConsoleWorld:
    setup = await make_tenant_admin(database)
    agent = await make_principal(database, setup.tenant_id, role="agent", kind="agent", name="bot")
    await seed_catalogs(database, setup.tenant_id, "peer", [TOOLS_V1, TOOLS_V2])
    made = await client.post(
        setup.url("deployments"),
        json={
            "agent_id": str(agent.principal_id),
            "entries": [{"server": "peer", "catalog_version": 1}],
        },
        headers=setup.admin.headers,
    )
    assert made.status_code == 201, made.text
    return ConsoleWorld(setup, agent, uuid.UUID(made.json()["data"]["id"]))


@pytest.fixture
async def world(client: httpx2.AsyncClient, database: Database) -> ConsoleWorld:
    return await build_world(client, database)


def browser_client(app: FastAPI, base_url: str = "http://hub.test") -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=base_url)


@pytest.fixture
async def user(app: FastAPI, world: ConsoleWorld) -> AsyncIterator[ConsoleUser]:
    """The tenant admin, signed in to the console."""
    async with browser_client(app) as http:
        console = ConsoleUser(http)
        signed = await console.sign_in(world.setup.admin.key)
        assert signed.status_code == 303, signed.text
        yield console
