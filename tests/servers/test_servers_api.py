"""Servers: handles, validation shared with discovery, references from deployments."""

from __future__ import annotations

from collections.abc import Mapping

import httpx2
import pytest

from hub.core.db import Database
from tests.support.factories import make_catalog, make_principal, make_server, tool
from tests.support.stories import TenantAdmin, make_tenant_admin

LINEAR = {"handle": "linear", "url": "https://mcp.linear.app/mcp"}
GITHUB = {"handle": "gh", "url": "https://api.github.com/mcp"}


@pytest.fixture
async def team(database: Database) -> TenantAdmin:
    return await make_tenant_admin(database)


async def _register(
    client: httpx2.AsyncClient, team: TenantAdmin, body: Mapping[str, object]
) -> httpx2.Response:
    return await client.post(team.url("servers"), json=dict(body), headers=team.admin.headers)


@pytest.fixture
async def linear(client: httpx2.AsyncClient, team: TenantAdmin) -> dict[str, object]:
    """The ``linear`` server, registered through the API (its body as returned)."""
    created = await _register(client, team, LINEAR)
    assert created.status_code == 201, created.text
    data: dict[str, object] = created.json()["data"]
    return data


async def _credential(client: httpx2.AsyncClient, team: TenantAdmin) -> str:
    """A credential of ``team`` pinned to ``https://x.example``; its id."""
    response = await client.post(
        team.url("credentials"),
        json={
            "name": "c",
            "type": "api_key",
            "secret": "s-0123456789abcdef",
            "api_base_url": "https://x.example",
        },
        headers=team.admin.headers,
    )
    assert response.status_code == 201, response.text
    credential_id: str = response.json()["data"]["id"]
    return credential_id


# ---------------------------------------------------------------- lifecycle
async def test_register_answers_201_with_the_server(linear: dict[str, object]) -> None:
    assert linear["handle"] == "linear"
    assert linear["era"] is None


async def test_get_returns_the_registered_server(
    client: httpx2.AsyncClient, team: TenantAdmin, linear: dict[str, object]
) -> None:
    got = await client.get(team.url("servers", "linear"), headers=team.admin.headers)
    assert got.json()["data"] == linear


async def test_patch_changes_the_url(
    client: httpx2.AsyncClient, team: TenantAdmin, linear: dict[str, object]
) -> None:
    patched = await client.patch(
        team.url("servers", "linear"),
        json={"url": "https://mcp.linear.app/v2"},
        headers=team.admin.headers,
    )
    assert patched.json()["data"]["url"] == "https://mcp.linear.app/v2"


async def test_list_shows_the_registered_handles(
    client: httpx2.AsyncClient, team: TenantAdmin, linear: dict[str, object]
) -> None:
    listed = await client.get(team.url("servers"), headers=team.admin.headers)
    assert [s["handle"] for s in listed.json()["data"]] == ["linear"]


async def test_deleted_server_reads_404(
    client: httpx2.AsyncClient, team: TenantAdmin, linear: dict[str, object]
) -> None:
    url = team.url("servers", "linear")
    assert (await client.delete(url, headers=team.admin.headers)).status_code == 204
    assert (await client.get(url, headers=team.admin.headers)).status_code == 404


async def test_handle_of_deleted_server_is_not_reused(
    client: httpx2.AsyncClient, team: TenantAdmin, linear: dict[str, object]
) -> None:
    deleted = await client.delete(team.url("servers", "linear"), headers=team.admin.headers)
    assert deleted.status_code == 204
    reuse = await _register(client, team, {"handle": "linear", "url": "https://other.example.com"})
    assert reuse.status_code == 409


# ---------------------------------------------------------------- input
@pytest.mark.parametrize("handle", ["with.dot", "Upper", "-lead", "", "a" * 64, "sp ace"])
async def test_bad_handle_is_400(
    client: httpx2.AsyncClient, team: TenantAdmin, handle: str
) -> None:
    response = await _register(client, team, {**GITHUB, "handle": handle})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "url", ["http://api.github.com/mcp", "https://u:p@x.example", "https://x.example/#a"]
)
async def test_bad_url_is_400(client: httpx2.AsyncClient, team: TenantAdmin, url: str) -> None:
    response = await _register(client, team, {**GITHUB, "url": url})
    assert response.status_code == 400


async def test_duplicate_handle_is_409(client: httpx2.AsyncClient, team: TenantAdmin) -> None:
    assert (await _register(client, team, GITHUB)).status_code == 201
    assert (await _register(client, team, GITHUB)).status_code == 409


async def test_credential_of_another_tenant_reads_404(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    foreign = await _credential(client, await make_tenant_admin(database))
    response = await _register(
        client, team, {"handle": "x", "url": "https://x.example", "credential_id": foreign}
    )
    assert response.status_code == 404


async def test_url_off_the_credentials_origin_is_422_origin_refused(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    credential_id = await _credential(client, team)
    response = await _register(
        client,
        team,
        {"handle": "y", "url": "https://elsewhere.example/mcp", "credential_id": credential_id},
    )
    assert response.status_code == 422
    assert response.json()["error"]["reason"] == "origin_refused"


async def test_url_on_the_credentials_origin_is_201(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    credential_id = await _credential(client, team)
    response = await _register(
        client,
        team,
        {"handle": "y", "url": "https://x.example/mcp", "credential_id": credential_id},
    )
    assert response.status_code == 201


# ---------------------------------------------------------------- references from deployments
@pytest.fixture
async def deployment_id(client: httpx2.AsyncClient, database: Database, team: TenantAdmin) -> str:
    """A deployment of the ``linear`` server (made with a catalog) for an agent of the tenant."""
    agent = await make_principal(database, team.tenant_id, role="agent", kind="agent")
    server_id = await make_server(database, team.tenant_id, "linear")
    await make_catalog(database, team.tenant_id, server_id, [tool("search")])
    deployed = await client.post(
        team.url("deployments"),
        json={
            "agent_id": str(agent.principal_id),
            "entries": [{"server": "linear", "catalog_version": 1}],
        },
        headers=team.admin.headers,
    )
    assert deployed.status_code == 201, deployed.text
    made: str = deployed.json()["data"]["id"]
    return made


async def test_referenced_server_cannot_move(
    client: httpx2.AsyncClient, team: TenantAdmin, deployment_id: str
) -> None:
    moved = await client.patch(
        team.url("servers", "linear"),
        json={"url": "https://new.example/mcp"},
        headers=team.admin.headers,
    )
    assert moved.status_code == 409
    message = moved.json()["error"]["message"]
    assert deployment_id in message  # which deployment holds it
    assert "its URL cannot change" in message
    assert "--remove-server linear" in message


async def test_referenced_server_cannot_be_deleted(
    client: httpx2.AsyncClient, team: TenantAdmin, deployment_id: str
) -> None:
    gone = await client.delete(team.url("servers", "linear"), headers=team.admin.headers)
    assert gone.status_code == 409
    message = gone.json()["error"]["message"]
    assert f"deployments hold this server ({deployment_id}); it cannot be deleted" in message


async def test_server_can_be_deleted_once_its_deployment_is_gone(
    client: httpx2.AsyncClient, team: TenantAdmin, deployment_id: str
) -> None:
    headers = team.admin.headers
    undeployed = await client.delete(team.url("deployments", deployment_id), headers=headers)
    assert undeployed.status_code == 204
    assert (await client.delete(team.url("servers", "linear"), headers=headers)).status_code == 204
