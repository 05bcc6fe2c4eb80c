"""Audit of failed requests (``hub.audit.failures.audit_failed_request``, DESIGN §13 "Audit").

A 403 writes one ``denied`` row (a read or a mutation); any other error of a mutation writes one
``failed`` row with the status and code; a read failing otherwise (404) and a request without a
valid key (401) write nothing.
"""

from __future__ import annotations

import uuid

import httpx2
import pytest

from hub.core.db import Database
from tests.support.factories import Actor, make_principal, make_server
from tests.support.stories import TenantAdmin, audit_count, audit_events, make_tenant_admin


@pytest.fixture
async def team(database: Database) -> TenantAdmin:
    """A tenant, its admin and one server, ``linear``."""
    made = await make_tenant_admin(database)
    await make_server(database, made.tenant_id, "linear")
    return made


@pytest.fixture
async def nobody(database: Database, team: TenantAdmin) -> Actor:
    """A principal of the tenant without any grant."""
    return await make_principal(database, team.tenant_id, role=None, name="nobody")


async def test_forbidden_read_writes_one_denied_row(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin, nobody: Actor
) -> None:
    response = await client.get(team.url("principals"), headers=nobody.headers)
    assert response.status_code == 403
    [row] = await audit_events(database)
    assert row.outcome == "denied"
    assert row.action == "principal.list"
    assert row.actor_id == nobody.principal_id
    assert row.tenant_id == team.tenant_id
    assert row.resource == team.url("principals")
    assert row.request_id == response.headers["x-request-id"]
    assert row.details["method"] == "GET"
    assert row.details["status"] == 403
    assert row.details["code"] == "forbidden"


async def test_forbidden_mutation_writes_one_denied_row(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin, nobody: Actor
) -> None:
    response = await client.post(
        team.url("principals"), json={"kind": "agent", "name": "x"}, headers=nobody.headers
    )
    assert response.status_code == 403
    [row] = await audit_events(database)
    assert row.outcome == "denied"
    assert row.action == "principal.create"
    assert row.details["method"] == "POST"
    assert row.details["status"] == 403
    assert row.details["code"] == "forbidden"


@pytest.mark.parametrize(
    ("method", "path", "body", "action", "status", "code"),
    [
        pytest.param(
            "POST",
            "servers",
            {"handle": "linear", "url": "https://mcp.example.com/mcp"},
            "server.create",
            409,
            "conflict",
            id="duplicate-post-409",
        ),
        pytest.param(
            "PATCH",
            "servers/absent",
            {"url": "https://moved.example.com/mcp"},
            "server.update",
            404,
            "not_found",
            id="patch-missing-404",
        ),
        pytest.param(
            "DELETE",
            f"grants/{uuid.UUID(int=7)}",
            None,
            "grant.delete",
            404,
            "not_found",
            id="delete-missing-404",
        ),
    ],
)
async def test_failed_mutation_writes_one_failed_row(
    client: httpx2.AsyncClient,
    database: Database,
    team: TenantAdmin,
    method: str,
    path: str,
    body: dict[str, object] | None,
    action: str,
    status: int,
    code: str,
) -> None:
    response = await client.request(method, team.url(path), json=body, headers=team.admin.headers)
    assert response.status_code == status, response.text
    [row] = await audit_events(database)
    assert row.outcome == "failed"
    assert row.action == action
    assert row.actor_id == team.admin.principal_id
    assert row.tenant_id == team.tenant_id
    assert row.resource == team.url(path)
    assert row.request_id == response.headers["x-request-id"]
    assert row.details["method"] == method
    assert row.details["status"] == status
    assert row.details["code"] == code


async def test_invalid_body_of_a_mutation_writes_one_failed_row(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    response = await client.post(
        team.url("servers"),
        json={"handle": "Bad.Handle", "url": "https://mcp.example.com/mcp"},
        headers=team.admin.headers,
    )
    assert response.status_code == 400
    [row] = await audit_events(database)
    assert row.outcome == "failed"
    assert row.action == "server.create"
    assert row.actor_id == team.admin.principal_id
    assert row.details["method"] == "POST"


async def test_refused_origin_records_its_reason(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    credential = await client.post(
        team.url("credentials"),
        json={
            "name": "c",
            "type": "api_key",
            "secret": "s-0123456789abcdef",
            "api_base_url": "https://x.example",
        },
        headers=team.admin.headers,
    )
    assert credential.status_code == 201, credential.text
    response = await client.post(
        team.url("servers"),
        json={
            "handle": "y",
            "url": "https://elsewhere.example/mcp",
            "credential_id": credential.json()["data"]["id"],
        },
        headers=team.admin.headers,
    )
    assert response.status_code == 422
    [row] = await audit_events(database, outcome="failed")
    assert row.details["reason"] == response.json()["error"]["reason"] == "origin_refused"


@pytest.mark.parametrize(
    "path", ["servers/absent", f"deployments/{uuid.UUID(int=7)}", f"principals/{uuid.UUID(int=7)}"]
)
async def test_read_failing_with_404_writes_no_row(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin, path: str
) -> None:
    response = await client.get(team.url(path), headers=team.admin.headers)
    assert response.status_code == 404
    assert await audit_count(database) == 0


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer not-a-hub-key"}, {"authorization": "Basic dXNlcjpwYXNz"}],
    ids=["no-key", "garbage-key", "not-bearer"],
)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "principals", None),
        ("POST", "servers", {"handle": "x", "url": "https://x.example/mcp"}),
        ("DELETE", "servers/linear", None),
    ],
    ids=["read", "create", "delete"],
)
async def test_request_without_a_valid_key_writes_no_row(
    client: httpx2.AsyncClient,
    database: Database,
    team: TenantAdmin,
    headers: dict[str, str],
    method: str,
    path: str,
    body: dict[str, object] | None,
) -> None:
    response = await client.request(method, team.url(path), json=body, headers=headers)
    assert response.status_code == 401
    assert await audit_count(database) == 0
