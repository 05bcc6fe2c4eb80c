"""Rate limits on the REST API (DESIGN §11): a burst past a principal's limit gets 429
``rate_limited`` with ``Retry-After``, ``RateLimit-Policy`` and ``RateLimit``; other principals
are unaffected; discovery is limited per tenant; refusals write no audit row and are counted."""

from __future__ import annotations

import httpx2
import pytest

from hub.core.db import Database
from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.support.factories import make_principal
from tests.support.stories import TenantAdmin, audit_count, make_tenant_admin


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, rate_limits="rest=5/minute, discovery=2/minute")


async def test_a_burst_past_the_limit_is_refused_with_the_headers(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team = await make_tenant_admin(database)
    remaining = []
    for _ in range(5):
        response = await client.get(team.url("servers"), headers=team.admin.headers)
        assert response.status_code == 200
        assert response.headers["ratelimit-policy"] == '"rest";q=5;w=60'
        remaining.append(response.headers["ratelimit"].split(";")[1])
    assert remaining == ["r=4", "r=3", "r=2", "r=1", "r=0"]
    before = await audit_count(database)
    refused = await client.post(
        team.url("servers"),
        json={"handle": "x", "url": "https://x.example/mcp"},
        headers=team.admin.headers,
    )
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "rate_limited"
    assert error["request_id"] == refused.headers["x-request-id"]
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 60
    assert error["retry_after_s"] == retry_after
    assert refused.headers["ratelimit-policy"] == '"rest";q=5;w=60'
    name, r, t = refused.headers["ratelimit"].split(";")
    assert (name, r) == ('"rest"', "r=0")
    assert 0 < int(t.removeprefix("t=")) <= 60
    assert await audit_count(database) == before  # a refusal is not a database write

    other = await make_principal(database, team.tenant_id, name="other-admin")
    assert (await client.get(team.url("servers"), headers=other.headers)).status_code == 200

    metrics = (await client.get("/metrics")).text  # the probes and metrics are never limited
    assert 'hub_rate_limit_refusals_total{kind="rest"} 1.0' in metrics


async def test_a_request_without_a_valid_key_spends_no_budget(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team = await make_tenant_admin(database)
    for _ in range(8):
        bad = await client.get(team.url("servers"), headers={"authorization": "Bearer nope"})
        assert bad.status_code == 401
    assert (await client.get(team.url("servers"), headers=team.admin.headers)).status_code == 200


async def _discover(client: httpx2.AsyncClient, team: TenantAdmin, headers: dict[str, str]) -> int:
    # refused before any I/O (plain http without HUB_ALLOW_LOOPBACK): still a discovery request
    response = await client.post(
        team.url("mcp/discover"), json={"url": "http://127.0.0.1:9/mcp"}, headers=headers
    )
    return response.status_code


async def test_discovery_is_limited_per_tenant(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team = await make_tenant_admin(database)
    colleague = await make_principal(database, team.tenant_id, name="colleague")
    assert await _discover(client, team, team.admin.headers) != 429
    assert await _discover(client, team, team.admin.headers) != 429
    assert await _discover(client, team, colleague.headers) == 429  # the tenant's budget
    elsewhere = await make_tenant_admin(database)
    assert await _discover(client, elsewhere, elsewhere.admin.headers) != 429


async def test_a_caller_refused_by_its_grants_spends_no_tenant_budget(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team = await make_tenant_admin(database)
    nobody = await make_principal(database, team.tenant_id, role=None, name="nobody")
    for _ in range(3):
        assert await _discover(client, team, nobody.headers) == 403
    assert await _discover(client, team, team.admin.headers) != 429


async def test_an_answer_the_route_builds_itself_carries_the_fields_too(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """A 204, and a streamed export, are ``Response`` objects of the route's own: FastAPI does
    not merge a dependency's headers into them, so the fields were missing there."""
    team = await make_tenant_admin(database)
    agent = await make_principal(database, team.tenant_id, name="bot", kind="agent", role="agent")
    made = await client.post(
        team.url("grants"),
        json={
            "principal_id": str(agent.principal_id),
            "resource": "tool:x.y",
            "action": "call",
            "effect": "allow",
        },
        headers=team.admin.headers,
    )
    assert made.status_code == 201, made.text
    assert made.headers["ratelimit"].startswith('"rest";r=4;')
    deleted = await client.delete(
        team.url("grants", made.json()["data"]["id"]), headers=team.admin.headers
    )
    assert deleted.status_code == 204
    assert deleted.headers["ratelimit-policy"] == '"rest";q=5;w=60'
    assert deleted.headers["ratelimit"].startswith('"rest";r=3;')
    exported = await client.get(team.url("audit", "export"), headers=team.admin.headers)
    assert exported.status_code == 200, exported.text
    assert exported.headers["ratelimit-policy"] == '"rest";q=5;w=60'
    assert exported.headers["ratelimit"].startswith('"rest";r=2;')
