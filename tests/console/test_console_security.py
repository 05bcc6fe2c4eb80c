"""The console's browser security, route by route (DESIGN §15; SECURITY §7.29).

Every POST is refused without the session's CSRF token, with a forged one, or from another
origin, and changes nothing; GET never changes anything; another tenant's ids read as 404 pages
that name nothing of it; every response forbids framing; tool descriptions and call arguments
are rendered inert, with invisible and bidirectional characters escaped.
"""

from __future__ import annotations

import httpx2
from fastapi import FastAPI

from hub.console.failures import ACTIONS
from hub.core.db import Database
from tests.console.conftest import XSS, ConsoleWorld, browser_client, build_world
from tests.console.routes import console_routes, form_of, url_of
from tests.console.support import ConsoleUser, allow, seed_approval
from tests.support.factories import make_principal
from tests.support.route_world import AUDIT_TABLES, snapshot
from tests.support.stories import audit_events


async def _ids(
    world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> dict[str, str]:
    admin = world.setup.admin.headers
    approval = await seed_approval(
        database,
        world.tenant_id,
        world.agent.principal_id,
        world.deployment_id,
        arguments={"id": "7"},
    )
    grant = await client.post(
        world.setup.url("grants"),
        json={
            "principal_id": str(world.agent.principal_id),
            "resource": "tool:peer.search",
            "action": "call",
            "effect": "allow",
        },
        headers=admin,
    )
    credential = await client.post(
        world.setup.url("credentials"),
        json={"name": "vault", "type": "secret", "secret": "x" * 24},
        headers=admin,
    )
    return {
        "t": str(world.tenant_id),
        "a": str(approval),
        "d": str(world.deployment_id),
        "handle": world.handle,
        "version": "1",
        "g": grant.json()["data"]["id"],
        "c": credential.json()["data"]["id"],
        "p": str(world.agent.principal_id),
        "name": "console.css",
        "rest": "no/such/page",
    }


def _framing_refused(response: httpx2.Response) -> None:
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_every_post_needs_the_csrf_token_and_the_same_origin(
    app: FastAPI,
    user: ConsoleUser,
    world: ConsoleWorld,
    database: Database,
    client: httpx2.AsyncClient,
) -> None:
    ids = await _ids(world, database, client)
    posts = [r for r in console_routes(app) if r.method == "POST" and r.name != "console.login"]
    assert len(posts) >= 7
    before = await snapshot(database, ids["t"], skip=AUDIT_TABLES)
    for route in posts:
        url, form = url_of(route, ids), form_of(route, ids)
        attempts = [
            await user.post(url, form, csrf=False),
            await user.post(url, {**form, "csrf": "f" * 64}, csrf=False),
            await user.post(url, form, origin="https://evil.example"),
            await user.http.post(url, data={**form, "csrf": user.csrf}),  # no Origin at all
            await user.post(url, form, origin="null"),  # opaque, and no Sec-Fetch-Site
        ]
        for response in attempts:
            assert response.status_code == 403, (route.name, response.text[:300])
            assert "text/html" in response.headers["content-type"]
            _framing_refused(response)
    assert await snapshot(database, ids["t"], skip=AUDIT_TABLES) == before
    # a forged token is a denied attempt of the signed-in user (the origin refusals come first)
    denied = await audit_events(database, outcome="denied")
    assert len(denied) == 2 * len(posts)
    assert {e.actor_id for e in denied} == {world.setup.admin.principal_id}
    assert all(e.details["via"] == "console" and e.details["status"] == 403 for e in denied)
    assert {e.action for e in denied} == {ACTIONS[r.name].value for r in posts}
    # the same forms with the token go through (the refusals above were the token's doing)
    for route in posts:
        if route.name in ("console.logout", "console.server_oauth", "console.credential_oauth"):
            continue
        done = await user.post(url_of(route, ids), form_of(route, ids))
        assert done.status_code == 303, (route.name, done.text[:500])


async def test_get_never_changes_anything(
    app: FastAPI,
    user: ConsoleUser,
    world: ConsoleWorld,
    database: Database,
    client: httpx2.AsyncClient,
) -> None:
    ids = await _ids(world, database, client)
    before = await snapshot(database, ids["t"])
    expected = {
        "console.home": 303,
        "console.tenant_pick": 303,
        "console.tenant_home": 303,
        "console.not_found": 404,
    }
    for route in console_routes(app):
        if route.method != "GET":
            continue
        response = await user.get(url_of(route, ids))
        assert response.status_code == expected.get(route.name, 200), (route.name, response.text)
        _framing_refused(response)
        if route.name != "console.static":
            assert response.headers["cache-control"] == "no-store"
            assert response.headers["referrer-policy"] == "same-origin"
    assert await snapshot(database, ids["t"]) == before
    approval = await client.get(
        world.setup.url("approvals", ids["a"]), headers=world.setup.admin.headers
    )
    assert approval.json()["data"]["status"] == "pending"  # opening its page decided nothing


async def test_another_tenants_ids_read_as_404_pages(
    app: FastAPI, world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> None:
    a_ids = await _ids(world, database, client)
    other = await build_world(client, database)  # tenant B, its admin signs in
    async with browser_client(app) as http:
        b_user = ConsoleUser(http)
        await b_user.sign_in(other.setup.admin.key)
        before = await snapshot(database, a_ids["t"])
        words = [a_ids[k] for k in ("t", "a", "d", "g", "c", "p")]
        for route in console_routes(app):
            if not route.tenant:
                continue
            for ids in ({**a_ids}, {**a_ids, "t": str(other.tenant_id), "handle": "nope"}):
                if route.method == "GET":
                    response = await b_user.get(url_of(route, ids))
                else:
                    response = await b_user.post(url_of(route, ids), form_of(route, ids))
                if ids["t"] == str(other.tenant_id) and route.path.count("{") == 1:
                    continue  # B's own page: nothing of A's in its URL
                assert response.status_code == 404, (route.name, ids["t"], response.text[:300])
                assert "Not found" in response.text
                for word in words:
                    assert word not in response.text, (route.name, word)
        assert await snapshot(database, a_ids["t"]) == before


async def test_xss_in_a_tool_description_and_in_arguments_is_inert(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    hostile = {"q": XSS, "bidi": "user\u202etxt.exe", "zw": "a\u200bb", "nl": "line\u2028two"}
    approval = await seed_approval(
        database, world.tenant_id, world.agent.principal_id, world.deployment_id, arguments=hostile
    )
    pages = [
        world.page("servers", "peer", "catalogs", "1"),
        world.page("servers", "peer", "diff?from=1&to=2"),
        world.page("deployments", world.deployment_id),
        world.page("approvals", approval),
    ]
    for path in pages:
        page = await user.get(path)
        assert page.status_code == 200, path
        assert "<script>alert" not in page.text
        assert "<img src=x" not in page.text
        assert "&lt;script&gt;alert(" in page.text or "&lt;script&gt;alert(&#34;" in page.text
        _framing_refused(page)
    for path in pages[0], pages[2]:  # the description as text, outside the JSON, escaped too
        page = await user.get(path)
        assert "\u202e" not in page.text, path
        assert "Searches.\\u202eexe.txt" in page.text, path
    shown = (await user.get(world.page("approvals", approval))).text
    for hidden in ("\u202e", "\u200b", "\u2028"):
        assert hidden not in shown
    assert "user\\u202etxt.exe" in shown
    assert "a\\u200bb" in shown
    assert "line\\u2028two" in shown
    assert "a" * 64 in shown  # the arguments' sha256


async def test_unreadable_arguments_cannot_be_approved(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    approval = await seed_approval(
        database, world.tenant_id, world.agent.principal_id, world.deployment_id, arguments=None
    )
    page = await user.get(world.page("approvals", approval))
    assert "can no longer be read" in page.text
    assert 'value="approve"' not in page.text
    assert 'value="deny"' in page.text
    refused = await user.post(
        world.page("approvals", approval, "decision"), {"decision": "approve"}
    )
    assert refused.status_code == 409
    assert "cannot be read" in refused.text
    denied = await user.post(world.page("approvals", approval, "decision"), {"decision": "deny"})
    assert denied.status_code == 303
    assert "denied" in (await user.get(denied.headers["location"])).text


async def test_only_people_decide_and_a_403_page_names_what_was_refused(
    app: FastAPI, world: ConsoleWorld, database: Database, client: httpx2.AsyncClient
) -> None:
    approval = await seed_approval(
        database,
        world.tenant_id,
        world.agent.principal_id,
        world.deployment_id,
        arguments={"id": "1"},
    )
    decision = world.page("approvals", approval, "decision")
    async with browser_client(app) as http:
        agent = ConsoleUser(http)
        assert (await agent.sign_in(world.agent.key)).status_code == 303
        page = await http.get(world.page("approvals", approval))
        assert page.status_code == 403
        assert f"Refused: <strong>read</strong> on <code>approval:{approval}</code>" in page.text
        refused = await agent.post(decision, {"decision": "approve"})
        assert refused.status_code == 403
    # a person who may read and decide approvals, but may not call the tool: deny, not approve
    viewer = await make_principal(database, world.tenant_id, role=None, name="viewer")
    await allow(client, world.setup, viewer.principal_id, "approval:*", "read", "decide")
    async with browser_client(app) as http:
        person = ConsoleUser(http)
        assert (await person.sign_in(viewer.key)).status_code == 303
        shown = await http.get(world.page("approvals", approval))
        assert 'value="approve"' not in shown.text
        assert 'value="deny"' in shown.text
        approve = await person.post(decision, {"decision": "approve"})
        assert approve.status_code == 403
        assert (
            "Refused: <strong>call</strong> on <code>tool:peer.delete_record</code>" in approve.text
        )
        deny = await person.post(decision, {"decision": "deny", "note": "not today"})
        assert deny.status_code == 303
        shown = await http.get(deny.headers["location"])
        assert "denied" in shown.text
        assert "not today" in shown.text
    refusals = await audit_events(database, action="approval.decide", outcome="denied")
    assert [e.actor_id for e in refusals] == [world.agent.principal_id, viewer.principal_id]
    assert refusals[1].resource == f"/console/t/{world.tenant_id}/approvals/{approval}/decision"
    assert refusals[1].details["via"] == "console"


CANARY = "console-canary-secret-7f3a9c21d4e6b8a0"


async def test_a_secret_typed_into_the_console_is_never_shown(
    app: FastAPI, user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    made = await user.post(
        world.page("credentials"),
        {
            "name": "vault",
            "type": "api_key",
            "secret": CANARY,
            "api_base_url": "https://api.example.com",
        },
    )
    assert made.status_code == 303, made.text
    listed = await user.get(world.page("credentials"))
    assert "vault" in listed.text
    assert CANARY not in listed.text
    (row,) = [line for line in listed.text.splitlines() if "/secret" in line]
    credential_id = row.split("/credentials/")[1].split("/")[0]
    replaced = await user.post(
        world.page("credentials", credential_id, "secret"), {"secret": CANARY + "-2"}
    )
    assert replaced.status_code == 303, replaced.text
    texts = []
    for route in console_routes(app):
        if route.method == "GET" and route.tenant:
            ids = {
                "t": str(world.tenant_id),
                "a": "x",
                "d": str(world.deployment_id),
                "handle": "peer",
            }
            ids |= {
                "version": "1",
                "g": "x",
                "c": credential_id,
                "p": str(world.agent.principal_id),
            }
            texts.append((await user.get(url_of(route, ids))).text)
    events = await audit_events(database)
    texts += [repr(e.details) for e in events]
    assert all(CANARY not in text for text in texts)
