"""``/whoami`` lists an agent's own deployments and names its tenant's slug (DESIGN §14)."""

from __future__ import annotations

import httpx2

from hub.core.db import Database
from tests.support.factories import make_catalog, make_principal, make_server, tool
from tests.support.stories import make_tenant_admin


async def test_an_agent_sees_its_own_deployments_only(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    headers = setup.admin.headers
    server_id = await make_server(database, setup.tenant_id, "srv", "https://srv.example.com/mcp")
    await make_catalog(database, setup.tenant_id, server_id, [tool("t")])
    agents = [
        await make_principal(database, setup.tenant_id, role="agent", kind="agent", name=n)
        for n in ("mine", "other")
    ]
    made = []
    for agent, name in [(agents[0], "one"), (agents[0], "two"), (agents[1], "theirs")]:
        body = {"agent_id": str(agent.principal_id), "name": name, "entries": []}
        response = await client.post(setup.url("deployments"), json=body, headers=headers)
        assert response.status_code == 201, response.text
        made.append(response.json()["data"])
    me = (await client.get("/whoami", headers=agents[0].headers)).json()["data"]
    assert [(d["id"], d["name"]) for d in me["deployments"]] == [
        (made[0]["id"], "one"),
        (made[1]["id"], "two"),
    ]
    assert me["tenant_slug"]
    admin = (await client.get("/whoami", headers=headers)).json()["data"]
    assert admin["deployments"] == []  # only an agent is a deployment's agent
