"""One approval's page gives the person deciding what they need: the deployment by its name,
and the tool as the call's catalog version holds it (what the server says it does, whether it
declares itself destructive), escaped as the arguments are, and only to those who may read it."""

from __future__ import annotations

import uuid

import httpx2
from fastapi import FastAPI

from hub.core.db import Database
from tests.console.conftest import XSS, ConsoleWorld, browser_client
from tests.console.support import ConsoleUser, allow, seed_approval, seed_catalogs
from tests.support.factories import make_principal

DROP: dict[str, object] = {
    "name": "drop",
    "description": "Drops a table.\u202e",
    "inputSchema": {"type": "object", "properties": {"table": {"type": "string"}}},
    "annotations": {"destructiveHint": True},
}


async def _seed_drop(database: Database, world: ConsoleWorld) -> uuid.UUID:
    """A catalog of server ``ops`` holding :data:`DROP`, and a pending approval of a call to it."""
    await seed_catalogs(database, world.tenant_id, "ops", [[DROP]])
    return await seed_approval(
        database,
        world.tenant_id,
        world.agent.principal_id,
        world.deployment_id,
        arguments={"table": "users"},
        handle="ops",
        tool="drop",
    )


async def _name_deployment(client: httpx2.AsyncClient, world: ConsoleWorld, name: str) -> None:
    renamed = await client.patch(
        world.setup.url("deployments", world.deployment_id),
        json={"name": name},
        headers=world.setup.admin.headers,
    )
    assert renamed.status_code == 200, renamed.text


async def test_the_page_names_the_deployment_and_shows_the_pinned_tool(
    user: ConsoleUser, world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> None:
    await _name_deployment(client, world, "support-bot")
    drop = await _seed_drop(database, world)
    shown = (await user.get(world.page("approvals", drop))).text
    assert f"support-bot <code>{world.deployment_id}</code>" in shown
    assert 'id="tool-destructive"' in shown
    assert "Drops a table.\\u202e" in shown  # escaped as the arguments are
    assert "\u202e" not in shown
    assert "&#34;destructiveHint&#34;: true" in shown

    # a tool that does not say it is destructive; a hostile description stays inert
    for tool, words in [("search", "Searches."), ("delete_record", "&lt;script&gt;alert(")]:
        approval = await seed_approval(
            database,
            world.tenant_id,
            world.agent.principal_id,
            world.deployment_id,
            arguments={},
            tool=tool,
        )
        page = (await user.get(world.page("approvals", approval))).text
        assert 'id="tool"' in page
        assert words in page
        assert 'id="tool-destructive"' not in page
        assert XSS not in page


async def test_a_person_who_may_not_read_the_catalog_sees_no_tool(
    app: FastAPI, world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> None:
    approval = await seed_approval(
        database, world.tenant_id, world.agent.principal_id, world.deployment_id, arguments={}
    )
    await _name_deployment(client, world, "support-bot")
    viewer = await make_principal(database, world.tenant_id, role=None, name="viewer")
    await allow(client, world.setup, viewer.principal_id, "approval:*", "read")
    async with browser_client(app) as http:
        person = ConsoleUser(http)
        assert (await person.sign_in(viewer.key)).status_code == 303
        shown = await http.get(world.page("approvals", approval))
        assert shown.status_code == 200
        assert 'id="arguments"' in shown.text
        assert 'id="tool"' not in shown.text
        assert 'id="tool-hidden"' in shown.text  # the page says what it leaves out, and why
        assert 'id="no-decide"' in shown.text
        assert f'/deployments/{world.deployment_id}"' not in shown.text  # no link to a 403
        assert str(world.deployment_id) in shown.text  # the id, as text
        assert "&lt;script&gt;alert(" not in shown.text  # delete_record's description
        assert "support-bot" not in shown.text


async def test_a_person_who_may_decide_sees_the_tool_without_reading_the_catalog(
    app: FastAPI, world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> None:
    """Judging the call needs what the tool says it does: an approver who holds ``decide`` but
    no ``catalog:`` read is still warned that the tool declares itself destructive."""
    drop = await _seed_drop(database, world)
    approver = await make_principal(database, world.tenant_id, role=None, name="approver")
    await allow(client, world.setup, approver.principal_id, "approval:*", "read", "decide")
    async with browser_client(app) as http:
        person = ConsoleUser(http)
        assert (await person.sign_in(approver.key)).status_code == 303
        shown = (await http.get(world.page("approvals", drop))).text
    assert 'id="tool-destructive"' in shown
    assert 'id="tool"' in shown
    assert 'id="tool-hidden"' not in shown
    assert 'value="deny"' in shown  # may deny; approving also needs the tool's call
    assert 'value="approve"' not in shown
