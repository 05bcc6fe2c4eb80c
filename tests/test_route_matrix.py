"""The authorisation matrix: every route of the app, walked as another tenant (SECURITY §7.29).

Tenant B's ``tenant_admin`` calls every tenant route with ``{t}`` = A and A's ids (404), and with
``{t}`` = B and A's ids (404 wherever an A id is involved); platform routes answer 403 to tenant
principals; B's principal without grants gets 403 on every tenant route; A's rows never change and
no A identifier ever appears in a body. The routes and the two tenants are in
``tests/support/route_world.py``; the audit rows of the same routes are checked in
``tests/audit/test_audit_rows.py``. A meta-test fails when a route is not classified: add new routes
to ``ROUTES`` in ``tests/support/route_world.py``.
"""

from __future__ import annotations

import httpx2
from fastapi import FastAPI

from tests.peers.fixtures import handmade_peer, oauth_peers
from tests.support.route_world import (
    ROUTES,
    World,
    app_routes,
    call,
    item_params,
    settings,
    snapshot,
    template_of,
    world,
)

__all__ = ["handmade_peer", "oauth_peers", "settings", "world"]


def test_every_route_is_classified(app: FastAPI) -> None:
    actual = app_routes(app)
    classified = {name: (r.method, template_of(r)) for name, r in ROUTES.items()}
    assert actual == classified


def _assert_no_a_words(response: httpx2.Response, world: World, context: str) -> None:
    for word in world.a_words:
        assert word not in response.text, f"{context}: leaked {word!r}"


async def test_other_tenant_gets_404_and_changes_nothing(world: World) -> None:
    before = await snapshot(world.db, world.a_ids["t"])
    for name, route in ROUTES.items():
        if route.kind in ("public", "self"):
            continue
        response = await call(world, route, world.a_ids, world.b_admin)
        expected = 403 if route.kind == "platform" else 404
        assert response.status_code == expected, (name, response.text)
        _assert_no_a_words(response, world, name)
    assert await snapshot(world.db, world.a_ids["t"]) == before


async def _slug(world: World, tenant_id: str) -> str:
    got = await world.client.get(f"/tenants/{tenant_id}", headers=world.platform.headers)
    return str(got.json()["data"]["slug"])


async def test_other_tenants_slug_gets_404_and_changes_nothing(world: World) -> None:
    """{t} may be a slug (DESIGN §14): B's admin naming A by its slug reads A exactly as by id."""
    before = await snapshot(world.db, world.a_ids["t"])
    a_slug = await _slug(world, world.a_ids["t"])
    for name, route in ROUTES.items():
        if route.kind != "tenant":
            continue
        response = await call(world, route, {**world.a_ids, "t": a_slug}, world.b_admin)
        assert response.status_code == 404, (name, response.text)
        _assert_no_a_words(response, world, name)
    assert await snapshot(world.db, world.a_ids["t"]) == before


async def test_own_slug_reads_like_own_id(world: World) -> None:
    b_slug = await _slug(world, world.b_ids["t"])
    for name, route in ROUTES.items():
        if route.kind == "tenant" and route.method == "GET":
            by_id = await call(world, route, world.b_ids, world.b_admin)
            by_slug = await call(world, route, {**world.b_ids, "t": b_slug}, world.b_admin)
            assert by_slug.status_code == by_id.status_code, (name, by_slug.text)


async def test_other_tenants_ids_inside_own_tenant_read_404(world: World) -> None:
    before = await snapshot(world.db, world.a_ids["t"])
    # B's audit trail is read first: afterwards it holds B's own refused requests, whose paths
    # name the A ids B itself sent (a record of B's request, not a leak of A's data)
    order = sorted(ROUTES.items(), key=lambda kv: not kv[0].startswith("audit."))
    for name, route in order:
        if route.kind != "tenant":
            continue
        ids = {**world.a_ids, "t": world.b_ids["t"]}
        response = await call(world, route, ids, world.b_admin)
        if item_params(route) or route.body_refs:
            assert response.status_code == 404, (name, response.text)
        else:
            assert response.status_code < 500, name
        _assert_no_a_words(response, world, name)
    assert await snapshot(world.db, world.a_ids["t"]) == before


async def test_principal_without_grants_gets_403_everywhere(world: World) -> None:
    for name, route in ROUTES.items():
        if route.kind == "public":
            continue
        response = await call(world, route, world.b_ids, world.b_nobody)
        if route.kind == "self":
            assert response.status_code == 200, name
        else:
            assert response.status_code == 403, (name, response.text)
