"""The console names principals, deployments and credentials where it showed ids: the grants
page (whose check now says which field is wrong: it said "needs a principal, a resource and an
action" for a deployment given by name) and a server's credential."""

from __future__ import annotations

import html
import uuid

import httpx2
from fastapi import FastAPI
from sqlalchemy import update

from hub.core.db import Database
from hub.models import Server
from tests.console.conftest import ConsoleWorld, browser_client
from tests.console.support import ConsoleUser, allow
from tests.support.databases import owner_session
from tests.support.factories import make_principal


async def _grant(client: httpx2.AsyncClient, world: ConsoleWorld) -> None:
    await allow(client, world.setup, world.agent.principal_id, "tool:peer.search", "call")


async def test_all_grants_name_their_principal(
    user: ConsoleUser, world: ConsoleWorld, client: httpx2.AsyncClient
) -> None:
    await _grant(client, world)
    page = (await user.get(world.page("grants"))).text
    link = f'grants?principal_id={world.agent.principal_id}">bot</a>'
    assert link in page, page


async def test_the_check_offers_the_deployments_by_name_and_names_the_wrong_field(
    user: ConsoleUser, world: ConsoleWorld, client: httpx2.AsyncClient
) -> None:
    renamed = await client.patch(
        world.setup.url("deployments", world.deployment_id),
        json={"name": "support-bot"},
        headers=world.setup.admin.headers,
    )
    assert renamed.status_code == 200, renamed.text
    await _grant(client, world)
    page = (await user.get(world.page("grants"))).text
    assert f'<option value="{world.deployment_id}">support-bot</option>' in page
    query = {
        "principal_id": str(world.agent.principal_id),
        "resource": "tool:peer.search",
        "action": "call",
    }
    through = await user.get(
        world.page("grants", "check"), params={**query, "deployment_id": str(world.deployment_id)}
    )
    assert through.status_code == 200, through.text
    assert f'<option value="{world.deployment_id}" selected>support-bot</option>' in through.text
    assert 'id="check-result"' in through.text
    for params, words in [
        ({**query, "deployment_id": "support-bot"}, "the deployment must be one of the list"),
        ({**query, "principal_id": ""}, "choose a principal"),
        ({**query, "resource": " "}, "give a resource to check"),
        ({**query, "action": "fly"}, "choose an action"),
    ]:
        refused = await user.get(world.page("grants", "check"), params=params)
        assert refused.status_code == 400, params
        assert words in html.unescape(refused.text), params


async def test_a_servers_credential_is_named_and_found_on_the_credentials_page(
    user: ConsoleUser, world: ConsoleWorld, client: httpx2.AsyncClient, database: Database
) -> None:
    """Servers showed their credential's id, and the credentials page showed no ids: two
    credentials of one name could not be told apart."""
    made = await client.post(
        world.setup.url("credentials"),
        json={
            "name": "peer-token",
            "type": "api_key",
            "api_base_url": "https://mcp.example.com",
            "secret": "a-secret-of-enough-length",
        },
        headers=world.setup.admin.headers,
    )
    assert made.status_code == 201, made.text
    credential_id = made.json()["data"]["id"]
    async with owner_session(database) as session:
        await session.execute(
            update(Server)
            .where(Server.tenant_id == world.tenant_id, Server.handle == "peer")
            .values(credential_id=uuid.UUID(credential_id))
        )
    link = f'/credentials#credential-{credential_id}">peer-token</a>'
    assert link in (await user.get(world.page("servers"))).text
    assert link in (await user.get(world.page("servers", "peer"))).text
    listed = (await user.get(world.page("credentials"))).text
    assert f'<tr id="credential-{credential_id}">' in listed
    assert f'<code class="hash">{credential_id}</code>' in listed


async def test_a_refused_form_links_back_to_the_page_it_came_from(
    user: ConsoleUser, world: ConsoleWorld
) -> None:
    """It linked to the console's home (a tenant's approvals), away from the form."""
    form = {"name": "gh", "type": "api_key", "secret": "a-secret-of-enough-length"}
    came = f"{user.origin}{world.page('credentials')}"
    refused = await user.post(world.page("credentials"), form, referer=came)
    assert refused.status_code == 400
    assert "api_base_url is required" in refused.text
    assert f'<a href="{world.page("credentials")}" id="back">' in refused.text
    # a page of another origin, or none: the console's home, never a link off this origin
    elsewhere = "https://elsewhere.example/console/t/x/credentials"
    for again in (
        await user.post(world.page("credentials"), form, referer=elsewhere),
        await user.post(world.page("credentials"), form),
    ):
        assert again.status_code == 400
        assert 'id="back"' not in again.text
        assert '<a href="/console">Back to the console</a>' in again.text
    listed = (await user.get(world.page("credentials"))).text
    assert "API base URL (needed for api_key and oauth_token)" in listed


async def test_an_operator_is_offered_no_delete_on_a_tenant_admins_grants(
    app: FastAPI, world: ConsoleWorld, database: Database, user: ConsoleUser
) -> None:
    """Role protection answers 403 to it; the button is not offered (it was, on every row).
    The tenant admin itself is offered it."""
    operator = await make_principal(database, world.tenant_id, role="operator", name="opal")
    admins = {"principal_id": str(world.setup.admin.principal_id)}
    async with browser_client(app) as http:
        person = ConsoleUser(http)
        assert (await person.sign_in(operator.key)).status_code == 303
        seen = (await http.get(world.page("grants"), params=admins)).text
    assert 'id="grants"' in seen  # the admin's grants are listed
    assert "/delete" not in seen
    assert "only a tenant_admin may act on a tenant_admin" in seen
    by_admin = (await user.get(world.page("grants"), params=admins)).text
    assert "/delete" in by_admin


async def test_a_refused_credential_name_says_why(user: ConsoleUser, world: ConsoleWorld) -> None:
    """Names refuse dots, blanks and invisible characters now (stop 50); the form answered every
    refusal with "a credential needs a name and a type; check the URL"."""
    for name, words in [
        ("..", "name: name must not be '.' or '..'"),
        ("gh\u202etoken", "name: name must not contain control, invisible"),
        (" ", "name: String should have at least 1 character"),
    ]:
        form = {
            "name": name.encode().decode("unicode_escape"),
            "type": "api_key",
            "api_base_url": "https://mcp.example.com",
            "secret": "a-secret-of-enough-length",
        }
        refused = await user.post(world.page("credentials"), form)
        assert refused.status_code == 400, name
        assert "the credential was not added: " + words in html.unescape(refused.text), name
        assert "a-secret-of-enough-length" not in refused.text
