"""Deleting a grant in the console asks first (the list's button was the deletion itself).

Deleting a ``deny`` or an ``ask`` can widen what its principal may do, and a row's button in a
long table is easy to hit: the page now names the grant, says what its going means, and deletes
only from its own form. Who may not delete the grant is refused before anything is shown.
"""

from __future__ import annotations

import uuid

import httpx2
from fastapi import FastAPI

from hub.core.db import Database
from tests.console.conftest import ConsoleWorld, browser_client
from tests.console.support import ConsoleUser
from tests.support.factories import make_principal
from tests.support.stories import audit_events


async def _deny(client: httpx2.AsyncClient, world: ConsoleWorld) -> str:
    made = await client.post(
        world.setup.url("grants"),
        json={
            "principal_id": str(world.agent.principal_id),
            "resource": "tool:peer.delete_record",
            "action": "call",
            "effect": "deny",
        },
        headers=world.setup.admin.headers,
    )
    assert made.status_code == 201, made.text
    grant_id: str = made.json()["data"]["id"]
    return grant_id


async def _exists(client: httpx2.AsyncClient, world: ConsoleWorld, grant_id: str) -> bool:
    listed = await client.get(
        world.setup.url("grants"),
        params={"principal_id": str(world.agent.principal_id)},
        headers=world.setup.admin.headers,
    )
    assert listed.status_code == 200, listed.text
    return grant_id in {g["id"] for g in listed.json()["data"]}


async def test_the_delete_button_asks_and_only_the_confirmation_deletes(
    client: httpx2.AsyncClient, user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    grant_id = await _deny(client, world)
    chosen = {"principal_id": str(world.agent.principal_id)}
    asked = await user.post(world.page("grants", grant_id, "delete"), chosen)
    assert asked.status_code == 200, asked.text
    assert "<h1>Delete this grant?</h1>" in asked.text
    assert "<dd>bot</dd>" in asked.text  # the principal by name
    assert "<code>tool:peer.delete_record</code>" in asked.text
    assert "effect is <strong>deny</strong>: once it is deleted" in asked.text
    back = f"{world.page('grants')}?principal_id={world.agent.principal_id}"
    assert f'<a href="{back}">Cancel</a>' in asked.text
    assert 'name="confirmed" value="yes"' in asked.text
    assert await _exists(client, world, grant_id)
    assert await audit_events(database, action="grant.delete") == []

    deleted = await user.post(
        world.page("grants", grant_id, "delete"), {**chosen, "confirmed": "yes"}
    )
    assert deleted.status_code == 303
    assert deleted.headers["location"] == back
    assert not await _exists(client, world, grant_id)
    assert len(await audit_events(database, action="grant.delete")) == 1


async def test_who_may_not_delete_is_refused_before_being_asked(
    app: FastAPI, client: httpx2.AsyncClient, world: ConsoleWorld, database: Database
) -> None:
    grant_id = await _deny(client, world)
    deployer = await make_principal(database, world.tenant_id, role="deployer", name="dee")
    async with browser_client(app) as http:
        person = ConsoleUser(http)
        assert (await person.sign_in(deployer.key)).status_code == 303
        refused = await person.post(world.page("grants", grant_id, "delete"))
        unknown = await person.post(world.page("grants", uuid.uuid4(), "delete"))
    assert refused.status_code == 403
    assert "Delete this grant?" not in refused.text
    assert unknown.status_code in {403, 404}
    assert await _exists(client, world, grant_id)


async def test_an_unknown_grant_is_not_found(user: ConsoleUser, world: ConsoleWorld) -> None:
    missing = await user.post(world.page("grants", uuid.uuid4(), "delete"))
    assert missing.status_code == 404
    assert "Delete this grant?" not in missing.text
