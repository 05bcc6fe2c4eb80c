"""Console sign-in, cookies, sessions and their end (DESIGN §14, §15; SECURITY).

The session cookie is HttpOnly, SameSite=Strict, Path=/console (Secure on https); signing in
rotates the session; logout, idle expiry and revoking the key each end it; the API never accepts
the cookie; sign-in itself needs the CSRF token and a same-origin request.
"""

from __future__ import annotations

import re

from fastapi import FastAPI
from sqlalchemy import func, select

from hub.core.db import Database
from hub.models import ConsoleSession, Tenant
from tests.conftest import ClockControl
from tests.console.conftest import ConsoleWorld, browser_client
from tests.console.support import ConsoleUser, csrf_in
from tests.support.databases import owner_session
from tests.support.factories import make_platform_admin, make_principal
from tests.support.stories import audit_events


def _cookie_header(response: object, name: str) -> str:
    headers = response.headers.get_list("set-cookie")  # type: ignore[attr-defined]
    found = [h for h in headers if h.startswith(f"{name}=")]
    assert len(found) == 1, headers
    return str(found[0])


def _flags(header: str) -> set[str]:
    return {part.strip().lower() for part in header.split(";")[1:]}


async def _sessions(db: Database) -> int:
    async with db.session(write=False) as session:
        return int(
            (await session.execute(select(func.count()).select_from(ConsoleSession))).scalar_one()
        )


async def test_sign_in_sets_a_flagged_cookie_on_the_console_path_only(
    app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    async with browser_client(app) as http:
        form = await http.get("/console/login")
        pre = _cookie_header(form, "hub_console_pre")
        assert {"httponly", "samesite=strict", "path=/console"} <= _flags(pre)
        signed = await http.post(
            "/console/login",
            data={"api_key": world.setup.admin.key, "csrf": csrf_in(form.text), "next": "/console"},
            headers={"origin": "http://hub.test"},
        )
        assert signed.status_code == 303
        cookie = _cookie_header(signed, "hub_console")
        assert {"httponly", "samesite=strict", "path=/console"} <= _flags(cookie)
        assert "secure" not in _flags(cookie)  # plain http: a Secure cookie would never return
        assert world.setup.admin.key not in cookie
        home = await http.get("/console")
        assert home.status_code == 303
        assert home.headers["location"] == f"/console/t/{world.tenant_id}/approvals"
    events = await audit_events(database, action="console_session.create")
    assert [e.actor_id for e in events] == [world.setup.admin.principal_id]


async def test_over_https_the_cookie_is_secure(app: FastAPI, world: ConsoleWorld) -> None:
    async with browser_client(app, "https://hub.test") as http:
        user = ConsoleUser(http)
        signed = await user.sign_in(world.setup.admin.key)
        assert signed.status_code == 303
        assert "secure" in _flags(_cookie_header(signed, "hub_console"))


async def test_sign_in_needs_the_token_and_the_same_origin(
    app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    key = world.setup.admin.key
    async with browser_client(app) as http:
        form = await http.get("/console/login")
        token = csrf_in(form.text)
        cases = [
            ({"api_key": key}, {"origin": "http://hub.test"}),  # no token
            ({"api_key": key, "csrf": "0" * 64}, {"origin": "http://hub.test"}),  # forged
            ({"api_key": key, "csrf": token}, {"origin": "https://evil.example"}),  # cross-site
            ({"api_key": key, "csrf": token}, {}),  # neither Origin nor Sec-Fetch-Site
            ({"api_key": key, "csrf": token}, {"sec-fetch-site": "cross-site"}),
        ]
        for data, headers in cases:
            refused = await http.post("/console/login", data=data, headers=headers)
            assert refused.status_code == 403, (data.keys(), headers)
            assert "text/html" in refused.headers["content-type"]
            assert "hub_console=" not in refused.headers.get("set-cookie", "")
        same_site = await http.post(
            "/console/login",
            data={"api_key": key, "csrf": token},
            headers={"sec-fetch-site": "same-origin"},
        )
        assert same_site.status_code == 303
    assert await _sessions(database) == 1


async def test_a_wrong_key_is_refused_without_a_session(
    app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    async with browser_client(app) as http:
        user = ConsoleUser(http)
        real = world.setup.admin.key
        # The last two characters are the checksum's: "xx" may be the real ones (1 in 3,844).
        mistyped = real[:-2] + ("xx" if real[-2:] != "xx" else "yy")
        for key in ["not-a-key", mistyped]:
            refused = await user.sign_in(key)
            assert refused.status_code == 401
            assert "That API key was not accepted." in refused.text
            assert key not in refused.text
    assert await _sessions(database) == 0


async def test_signing_in_again_rotates_the_session(app: FastAPI, world: ConsoleWorld) -> None:
    async with browser_client(app) as http:
        user = ConsoleUser(http)
        await user.sign_in(world.setup.admin.key)
        first = http.cookies.get("hub_console")
        await user.sign_in(world.setup.admin.key)
        second = http.cookies.get("hub_console")
        assert first
        assert second
        assert first != second
    async with browser_client(app) as replay:
        replay.cookies.set("hub_console", str(first), domain="hub.test", path="/console")
        page = await replay.get(world.page("approvals"))
        assert page.status_code == 303
        assert page.headers["location"].startswith("/console/login?next=")


async def test_the_api_never_accepts_the_cookie(user: ConsoleUser, world: ConsoleWorld) -> None:
    token = user.http.cookies.get("hub_console")
    assert token
    for path in [world.setup.url("approvals"), f"/tenants/{world.tenant_id}/deployments"]:
        response = await user.http.get(path, headers={"cookie": f"hub_console={token}"})
        assert response.status_code == 401


async def test_logout_ends_the_session(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    token = user.http.cookies.get("hub_console")
    out = await user.post("/console/logout")
    assert out.status_code == 303
    assert out.headers["location"] == "/console/login"
    assert await _sessions(database) == 0
    user.http.cookies.set("hub_console", str(token), domain="hub.test", path="/console")
    again = await user.get(world.page("approvals"))
    assert again.status_code == 303
    assert again.headers["location"].startswith("/console/login")
    assert await audit_events(database, action="console_session.delete")


async def test_revoking_the_key_ends_its_console_sessions(
    user: ConsoleUser, world: ConsoleWorld, database: Database, app: FastAPI
) -> None:
    admin = world.setup.admin
    listed = await user.http.get(
        world.setup.url("principals", admin.principal_id, "keys"), headers=admin.headers
    )
    (key,) = listed.json()["data"]
    # a second key of the same principal revokes the first, whose sessions end with it
    second = await user.http.post(
        world.setup.url("principals", admin.principal_id, "keys"), json={}, headers=admin.headers
    )
    other = {"authorization": f"Bearer {second.json()['data']['key']}"}
    async with browser_client(app) as http:
        second_user = ConsoleUser(http)
        await second_user.sign_in(second.json()["data"]["key"])
        assert await _sessions(database) == 2
        revoked = await user.http.delete(
            world.setup.url("principals", admin.principal_id, "keys", key["id"]), headers=other
        )
        assert revoked.status_code == 204, revoked.text
        assert await _sessions(database) == 1  # the other key's session lives on
        assert (await second_user.get(world.page("approvals"))).status_code == 200
    page = await user.get(world.page("approvals"))
    assert page.status_code == 303
    assert page.headers["location"].startswith("/console/login")


async def test_an_idle_session_expires(
    clock_control: ClockControl, app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    async with browser_client(app) as http:
        user = ConsoleUser(http)
        await user.sign_in(world.setup.admin.key)
        clock_control.advance(1700)
        assert (await user.get(world.page("approvals"))).status_code == 200  # seen: idle again
        clock_control.advance(1700)
        assert (await user.get(world.page("approvals"))).status_code == 200
        clock_control.advance(1801)
        expired = await user.get(world.page("approvals"))
        assert expired.status_code == 303
        assert expired.headers["location"].startswith("/console/login")
    assert await _sessions(database) == 0


async def test_sign_in_goes_back_to_the_page_asked_for_and_nowhere_else(
    app: FastAPI, world: ConsoleWorld
) -> None:
    wanted = world.page("grants")
    async with browser_client(app) as http:
        bounced = await http.get(wanted)
        assert bounced.status_code == 303
        form = await http.get(bounced.headers["location"])
        assert f'value="{wanted}"' in form.text
        for target, expected in [
            (wanted, wanted),
            ("https://evil.example/", "/console"),
            ("//evil.example/console/", "/console"),
            ("/console//evil.example", "/console"),
        ]:
            token = csrf_in((await http.get("/console/login")).text)
            signed = await http.post(
                "/console/login",
                data={"api_key": world.setup.admin.key, "csrf": token, "next": target},
                headers={"origin": "http://hub.test"},
            )
            assert signed.headers["location"] == expected


async def test_the_polled_queue_sends_the_page_to_sign_in_when_the_session_ends(
    user: ConsoleUser, world: ConsoleWorld
) -> None:
    queue = world.page("approvals", "queue")
    polled = await user.get(queue, headers={"hx-request": "true"})
    assert polled.status_code == 200
    assert "Nothing is waiting." in polled.text
    seen = re.search(r'name="seen" value="([0-9a-f]{64})"', polled.text)
    assert seen is not None
    unchanged = await user.get(queue, params={"seen": seen.group(1)})
    assert unchanged.status_code == 204  # htmx leaves the queue as it is
    assert unchanged.text == ""
    assert (await user.get(queue, params={"seen": "0" * 64})).status_code == 200
    await user.post("/console/logout")
    headers = {"hx-request": "true", "hx-current-url": f"http://hub.test{world.page('approvals')}"}
    ended = await user.get(queue, headers=headers)
    assert ended.status_code == 200
    assert ended.text == ""
    assert ended.headers["hx-redirect"] == (
        f"/console/login?next=%2Fconsole%2Ft%2F{world.tenant_id}%2Fapprovals"
    )


async def test_the_platform_admin_picks_a_tenant(
    app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    platform = await make_platform_admin(database)
    async with browser_client(app) as http:
        user = ConsoleUser(http)
        signed = await user.sign_in(platform.key)
        assert signed.status_code == 303
        home = await http.get("/console")
        assert home.status_code == 200
        assert 'action="/console/tenant"' in home.text
        # the tenants are listed by name, each linking to its first section
        async with owner_session(database, write=False) as session:
            slug = (
                await session.execute(select(Tenant.slug).where(Tenant.id == world.tenant_id))
            ).scalar_one()
        assert f'<a href="/console/t/{slug}">' in home.text
        assert re.search(
            r'<span class="who">Signed in as [^<]+ \(platform admin\)</span>', home.text
        )
        listed = await http.get(f"/console/t/{slug}")
        assert listed.headers["location"] == f"/console/t/{slug}/approvals"
        picked = await http.get("/console/tenant", params={"t": str(world.tenant_id)})
        assert picked.headers["location"] == world.page("approvals")
        assert (await http.get(world.page("approvals"))).status_code == 200
        assert (await http.get("/console/tenant", params={"t": "../x"})).status_code == 404


async def test_signing_in_clears_the_keys_idle_sessions(
    clock_control: ClockControl, app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    for _ in range(3):  # three browsers that never come back
        async with browser_client(app) as http:
            await ConsoleUser(http).sign_in(world.setup.admin.key)
    assert await _sessions(database) == 3
    clock_control.advance(1801)
    async with browser_client(app) as http:
        await ConsoleUser(http).sign_in(world.setup.admin.key)
    assert await _sessions(database) == 1


async def test_a_deleted_principal_is_signed_out(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    other = await make_principal(database, world.tenant_id, name="second-admin")
    deleted = await user.http.delete(
        world.setup.url("principals", world.setup.admin.principal_id), headers=other.headers
    )
    assert deleted.status_code == 204, deleted.text
    page = await user.get(world.page("approvals"))
    assert page.status_code == 303
    assert page.headers["location"].startswith("/console/login")
    assert await _sessions(database) == 0


async def test_the_token_may_come_in_a_header(user: ConsoleUser, world: ConsoleWorld) -> None:
    out = await user.http.post(
        "/console/logout", headers={"origin": user.origin, "x-csrf-token": user.csrf}
    )
    assert out.status_code == 303
    assert (await user.get(world.page("approvals"))).status_code == 303


async def test_sign_in_lands_on_the_first_section_the_principal_may_read_and_offers_only_those(
    app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    """A deployer reads no approvals: it used to land on a 403 page (an audited refusal on
    every sign-in) and to be offered links to five more. It lands on deployments now, and the
    navigation names only the sections it may open."""
    deployer = await make_principal(database, world.tenant_id, role="deployer", name="dee")
    nobody = await make_principal(database, world.tenant_id, role=None, name="nobody")
    async with browser_client(app) as http:
        user = ConsoleUser(http)
        assert (await user.sign_in(deployer.key)).status_code == 303
        home = await http.get("/console")
        assert home.headers["location"] == f"/console/t/{world.tenant_id}/deployments"
        page = (await http.get(home.headers["location"])).text
        offered = re.findall(r'<li><a href="/console/t/[^/"]+/(\w+)"', page)
        assert offered == ["deployments", "servers", "credentials"], offered  # its role template
        assert '<span class="who">Signed in as dee (deployer)</span>' in page
    assert await audit_events(database, action="approval.list") == []
    async with browser_client(app) as http:  # may read nothing: the approvals page says why
        user = ConsoleUser(http)
        assert (await user.sign_in(nobody.key)).status_code == 303
        home = await http.get("/console")
        assert home.headers["location"] == f"/console/t/{world.tenant_id}/approvals"
    async with browser_client(app) as http:  # the tenant admin: every section
        user = ConsoleUser(http)
        assert (await user.sign_in(world.setup.admin.key)).status_code == 303
        page = (await http.get(f"/console/t/{world.tenant_id}/approvals")).text
        offered = re.findall(r'<li><a href="/console/t/[^/"]+/(\w+)"', page)
        assert offered == ["approvals", "deployments", "servers", "grants", "credentials", "audit"]
        refused = await http.get(f"/console/t/{world.tenant_id}/servers/{'x' * 300}")
        assert '<span class="who">Signed in as' in refused.text  # error pages say it too


async def test_a_tenants_address_alone_goes_to_its_first_readable_section(
    app: FastAPI, world: ConsoleWorld, database: Database
) -> None:
    deployer = await make_principal(database, world.tenant_id, role="deployer", name="dee")
    async with browser_client(app) as http:
        user = ConsoleUser(http)
        assert (await user.sign_in(deployer.key)).status_code == 303
        home = await http.get(f"/console/t/{world.tenant_id}")
        assert home.status_code == 303
        assert home.headers["location"] == f"/console/t/{world.tenant_id}/deployments"
        page = (await http.get(home.headers["location"])).text
        icon = await http.get("/console/static/favicon.svg")
    assert '<link rel="icon" href="/console/static/favicon.svg"' in page
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
