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
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for own in me["deployments"]:  # the path is the deployment's own endpoint, ready to use
        assert own["mcp_path"] == setup.url("deployments", own["id"], "mcp")
        answer = await client.post(own["mcp_path"], json=listing, headers=agents[0].headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["tools"] == []
    admin = (await client.get("/whoami", headers=headers)).json()["data"]
    assert admin["deployments"] == []  # only an agent is a deployment's agent
