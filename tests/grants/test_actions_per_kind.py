"""Each kind has its own actions, and the operator role can grant tools (DESIGN §8).

``tool`` takes ``call``; ``credential`` ``read``/``write``/``use``; ``approval`` ``read``/
``decide``; ``audit`` ``read``; every other kind ``read``/``write``; ``*`` everywhere. Anything
else would silently never match (``use`` on a tool did), so it is 400 at creation and at check.
"""

from __future__ import annotations

import uuid

import httpx2
import pytest

from hub.core.db import Database
from tests.support.factories import make_principal
from tests.support.stories import TenantAdmin, make_tenant_admin


async def _agent(client: httpx2.AsyncClient, setup: TenantAdmin) -> str:
    r = await client.post(
        setup.url("principals"), json={"kind": "agent", "name": "a"}, headers=setup.admin.headers
    )
    return str(r.json()["data"]["id"])


@pytest.mark.parametrize(
    ("resource", "action"),
    [
        ("tool:gh.*", "use"),
        ("tool:*", "read"),
        ("credential:*", "call"),
        ("approval:*", "write"),
        ("audit", "write"),
        ("server:*", "use"),
        ("grant:*", "decide"),
    ],
)
@pytest.mark.parametrize("route", ["grants", "grants/check"])
async def test_an_action_the_kind_lacks_is_400(
    client: httpx2.AsyncClient, database: Database, resource: str, action: str, route: str
) -> None:
    setup = await make_tenant_admin(database)
    agent = await _agent(client, setup)
    body = {"principal_id": agent, "resource": resource, "action": action}
    if route == "grants":
        body["effect"] = "allow"
    r = await client.post(setup.url(route), json=body, headers=setup.admin.headers)
    assert r.status_code == 400, r.text
    assert "action" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("resource", "action"),
    [
        ("tool:gh.*", "call"),
        ("credential:*", "use"),
        ("approval:*", "decide"),
        ("audit", "read"),
        ("server:*", "write"),
        ("tool:*", "*"),
        ("*", "use"),
    ],
)
async def test_an_action_the_kind_has_is_accepted(
    client: httpx2.AsyncClient, database: Database, resource: str, action: str
) -> None:
    setup = await make_tenant_admin(database)
    agent = await _agent(client, setup)
    r = await client.post(
        setup.url("grants"),
        json={"principal_id": agent, "resource": resource, "action": action, "effect": "allow"},
        headers=setup.admin.headers,
    )
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("effect", ["allow", "ask", "deny"])
async def test_operator_can_grant_a_tool(
    client: httpx2.AsyncClient, database: Database, effect: str
) -> None:
    setup = await make_tenant_admin(database)
    operator = await make_principal(database, setup.tenant_id, role="operator", name="op")
    agent = await _agent(client, setup)
    r = await client.post(
        setup.url("grants"),
        json={
            "principal_id": agent,
            "resource": "tool:gh.search",
            "action": "call",
            "effect": effect,
        },
        headers=operator.headers,
    )
    assert r.status_code == 201, r.text


async def test_operator_may_confer_star_on_tools(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """``*`` as an action expands to the kind's own set: ``tool:*`` : ``call`` confers
    ``tool:x.*`` : ``*``."""
    setup = await make_tenant_admin(database)
    operator = await make_principal(database, setup.tenant_id, role="operator", name="op")
    agent = await _agent(client, setup)
    r = await client.post(
        setup.url("grants"),
        json={"principal_id": agent, "resource": "tool:gh.*", "action": "*", "effect": "allow"},
        headers=operator.headers,
    )
    assert r.status_code == 201, r.text


async def test_operator_still_cannot_grant_what_it_lacks(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    operator = await make_principal(database, setup.tenant_id, role="operator", name="op")
    agent = await _agent(client, setup)
    r = await client.post(
        setup.url("grants"),
        json={
            "principal_id": agent,
            "resource": "credential:*",
            "action": "use",
            "effect": "allow",
        },
        headers=operator.headers,
    )
    assert r.status_code == 403, r.text


async def test_check_canonicalises_like_create(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    agent = await _agent(client, setup)
    c = str(uuid.uuid4())
    await client.post(
        setup.url("grants"),
        json={
            "principal_id": agent,
            "resource": f"credential:{c}",
            "action": "read",
            "effect": "allow",
        },
        headers=setup.admin.headers,
    )
    r = await client.post(
        setup.url("grants/check"),
        json={"principal_id": agent, "resource": f"credential:{c.upper()}", "action": "read"},
        headers=setup.admin.headers,
    )
    assert r.json()["data"]["effect"] == "allow"
