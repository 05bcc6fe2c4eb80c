"""The deployments tests' world: a tenant with two servers and their catalogs, two agents, and a
deployment of both servers with the first read of its bundle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.support.factories import Actor, make_catalog, make_principal, make_server, tool
from tests.support.stories import TenantAdmin, make_tenant_admin

__all__ = ["Bundled", "World", "deploy_to_agent", "grant_to"]


@dataclass(frozen=True)
class World:
    """A tenant with its admin, two agents, and the servers ``linear`` and ``github``.

    ``linear`` has ``search``, ``delete_issue`` (destructive) and ``create.issue``; ``github`` has
    ``search`` and a 100-character name. Both catalogs are version 1.
    """

    team: TenantAdmin
    agent: Actor
    other: Actor

    @property
    def admin(self) -> Actor:
        return self.team.admin

    def deployments(self, *parts: object) -> str:
        return self.team.url("deployments", *parts)


@pytest.fixture
async def world(database: Database) -> World:
    team = await make_tenant_admin(database)
    agent = await make_principal(database, team.tenant_id, role="agent", kind="agent")
    other_agent = await make_principal(database, team.tenant_id, role="agent", kind="agent")
    linear = await make_server(database, team.tenant_id, "linear")
    await make_catalog(
        database,
        team.tenant_id,
        linear,
        [
            tool("search"),
            tool("delete_issue", annotations={"destructiveHint": True}),
            tool("create.issue"),
        ],
    )
    gh = await make_server(database, team.tenant_id, "github", "https://api.github.com/mcp")
    await make_catalog(database, team.tenant_id, gh, [tool("search"), tool("x" * 100)])
    return World(team, agent, other_agent)


async def deploy_to_agent(
    client: httpx2.AsyncClient, w: World, entries: list[dict[str, object]], **extra: object
) -> dict[str, Any]:
    """Deploy ``entries`` to ``w.agent`` as the admin (asserting 201); the deployment's data."""
    created = await client.post(
        w.deployments(),
        json={"agent_id": str(w.agent.principal_id), "entries": entries, **extra},
        headers=w.admin.headers,
    )
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    return data


# ---------------------------------------------------------------- the bundle and its ETag
@dataclass(frozen=True)
class Bundled:
    """A deployment of ``linear`` then ``github`` and the first read of its bundle by its agent."""

    world: World
    deployment: dict[str, Any]
    url: str
    first: httpx2.Response

    @property
    def etag(self) -> str:
        return self.first.headers["etag"]

    def tools_of_linear(self) -> dict[str, dict[str, Any]]:
        return {t["name"]: t for t in self.first.json()["data"]["servers"][0]["tools"]}


async def grant_to(
    client: httpx2.AsyncClient,
    team: TenantAdmin,
    agent: Actor,
    resource: str,
    effect: str,
    **more: Any,
) -> None:
    """Grant ``agent`` ``call`` on ``resource``; ``more``: other fields of the grant."""
    made = await client.post(
        team.url("grants"),
        json={
            "principal_id": str(agent.principal_id),
            "resource": resource,
            "action": "call",
            "effect": effect,
            **more,
        },
        headers=team.admin.headers,
    )
    assert made.status_code == 201, made.text


@pytest.fixture
async def bundled(client: httpx2.AsyncClient, world: World) -> Bundled:
    await grant_to(client, world.team, world.agent, "tool:linear.*", "allow")
    await grant_to(client, world.team, world.agent, "tool:linear.create.issue", "ask")
    deployment = await deploy_to_agent(
        client,
        world,
        [
            {
                "server": "linear",
                "catalog_version": 1,
                "allow_without_ask": ["search", "delete_issue"],
            },
            {"server": "github", "catalog_version": 1},
        ],
        name="support bot",
    )
    url = world.deployments(deployment["id"], "bundle")
    first = await client.get(url, headers=world.agent.headers)
    assert first.status_code == 200, first.text
    return Bundled(world, deployment, url, first)
