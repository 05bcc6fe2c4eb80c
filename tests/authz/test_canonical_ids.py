"""Every object id in a path has one spelling; any other reads as 404 before any decision.

``uuid.UUID`` accepts upper case, no hyphens, braces and ``urn:uuid:`` (repeatable), and the hub
once built the resource it decided on from the raw path text while looking the object up by its
normalised id — so a ``deny`` on ``credential:<c>`` did not apply to ``/credentials/<C>``
(DESIGN §8 "Object identity"; SECURITY §7.41). The route matrix walks every route with an id in
its path (the tenant's included) in each spelling, as the tenant's own admin, and expects 404
with nothing changed; then the deny case is checked on each kind of item route directly.
"""

from __future__ import annotations

import uuid

import httpx2
import pytest

from hub.core.db import Database
from tests.peers.fixtures import handmade_peer, oauth_peers
from tests.support.databases import owner_session
from tests.support.factories import make_principal
from tests.support.route_world import AUDIT_TABLES, ROUTES, World, call, settings, snapshot, world
from tests.support.stories import TenantAdmin, make_tenant_admin

__all__ = ["handmade_peer", "oauth_peers", "settings", "world"]

UUID_PARAMS = ("t", "p", "k", "g", "c", "d", "a", "o")


def spellings(canonical: str) -> dict[str, str]:
    """Other texts ``uuid.UUID`` parses to the same id."""
    return {
        "upper": canonical.upper(),
        "no-hyphens": canonical.replace("-", ""),
        "braces": "{" + canonical + "}",
        "urn": f"urn:uuid:{canonical}",
        "padded-urn": "urn:" * 150 + f"uuid:{canonical}",
    }


def test_every_spelling_parses_to_the_same_id() -> None:
    canonical = str(uuid.uuid4())
    for text in spellings(canonical).values():
        assert str(uuid.UUID(text)) == canonical


async def test_non_canonical_ids_read_404_on_every_route(world: World) -> None:
    before = await snapshot(world.db, world.a_ids["t"], skip=AUDIT_TABLES)
    checked = 0
    for name, route in ROUTES.items():
        if route.kind != "tenant":
            continue
        for param in UUID_PARAMS:
            if "{" + param + "}" not in route.path:
                continue
            for label, text in spellings(world.a_ids[param]).items():
                response = await call(world, route, {**world.a_ids, param: text}, world.a_admin)
                assert response.status_code == 404, (name, param, label, response.text)
                error = response.json()["error"]
                if route.path.endswith("/mcp"):  # JSON-RPC: the class says it
                    assert error["data"]["class"] == "not_found"
                else:
                    assert error["code"] == "not_found"
                checked += 1
    assert checked > 100
    assert await snapshot(world.db, world.a_ids["t"], skip=AUDIT_TABLES) == before


# --- a deny on one object holds whatever the spelling --------------------------------------


async def _reader_denied(db: Database, setup: TenantAdmin, kind: str, item: str) -> httpx2.Headers:
    """A principal allowed ``kind:*`` (read and write) but denied ``kind:<item>``."""
    from hub.models import Grant
    from tests.support.factories import scope_of

    reader = await make_principal(db, setup.tenant_id, role=None, name="reader")
    async with owner_session(db) as session:
        for resource, action, effect in (
            (f"{kind}:*", "*", "allow"),
            (f"{kind}:{item}", "*", "deny"),
            ("principal:*", "read", "allow"),
        ):
            session.add(
                Grant(
                    id=uuid.uuid4(),
                    tenant_id=scope_of(setup.tenant_id).value,
                    principal_id=reader.principal_id,
                    resource=resource,
                    action=action,
                    effect=effect,
                    conditions={},
                )
            )
    return httpx2.Headers(reader.headers)


async def _credential(client: httpx2.AsyncClient, setup: TenantAdmin) -> str:
    r = await client.post(
        setup.url("credentials"),
        json={
            "name": "c",
            "type": "api_key",
            "secret": "s3cret-value-long-enough",
            "api_base_url": "https://api.example.com",
        },
        headers=setup.admin.headers,
    )
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def _agent(client: httpx2.AsyncClient, setup: TenantAdmin) -> str:
    r = await client.post(
        setup.url("principals"), json={"kind": "agent", "name": "a"}, headers=setup.admin.headers
    )
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


@pytest.mark.parametrize("label", sorted(spellings(str(uuid.uuid4()))))
async def test_denied_credential_reads_404_in_any_other_spelling(
    client: httpx2.AsyncClient, database: Database, label: str
) -> None:
    setup = await make_tenant_admin(database)
    c = await _credential(client, setup)
    headers = await _reader_denied(database, setup, "credential", c)
    assert (await client.get(setup.url("credentials", c), headers=headers)).status_code == 403
    other = spellings(c)[label]
    assert (await client.get(setup.url("credentials", other), headers=headers)).status_code == 404


@pytest.mark.parametrize("label", sorted(spellings(str(uuid.uuid4()))))
async def test_denied_principal_cannot_be_disabled_through_another_spelling(
    client: httpx2.AsyncClient, database: Database, label: str
) -> None:
    setup = await make_tenant_admin(database)
    p = await _agent(client, setup)
    headers = await _reader_denied(database, setup, "principal", p)
    other = spellings(p)[label]
    assert (await client.delete(setup.url("principals", other), headers=headers)).status_code == 404
    got = await client.get(setup.url("principals", p), headers=setup.admin.headers)
    assert got.json()["data"]["status"] == "active"


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("principal", ("principals", "{id}")),
        ("principal", ("principals", "{id}", "keys")),
        ("deployment", ("deployments", "{id}")),
        ("deployment", ("deployments", "{id}", "bundle")),
        ("grant", ("grants", "{id}")),
    ],
)
async def test_item_routes_decide_on_the_canonical_id(
    client: httpx2.AsyncClient, database: Database, kind: str, path: tuple[str, ...]
) -> None:
    setup = await make_tenant_admin(database)
    agent = await _agent(client, setup)
    if kind == "principal":
        item = agent
    elif kind == "deployment":
        r = await client.post(
            setup.url("deployments"),
            json={"agent_id": agent, "entries": []},
            headers=setup.admin.headers,
        )
        item = r.json()["data"]["id"]
    else:
        r = await client.post(
            setup.url("grants"),
            json={"principal_id": agent, "resource": "tool:x.*", "action": "call", "effect": "ask"},
            headers=setup.admin.headers,
        )
        item = r.json()["data"]["id"]
    headers = await _reader_denied(database, setup, kind, item)
    method = "DELETE" if kind == "grant" else "GET"
    canonical = setup.url(*(p.replace("{id}", item) for p in path))
    assert (await client.request(method, canonical, headers=headers)).status_code == 403
    for text in spellings(item).values():
        url = setup.url(*(p.replace("{id}", text) for p in path))
        assert (await client.request(method, url, headers=headers)).status_code == 404, text


# --- grant patterns naming an id are canonical -----------------------------------------------


@pytest.mark.parametrize("label", ["braces", "no-hyphens", "upper", "urn"])
async def test_grant_pattern_naming_an_id_is_stored_canonical_and_applies(
    client: httpx2.AsyncClient, database: Database, label: str
) -> None:
    setup = await make_tenant_admin(database)
    c = await _credential(client, setup)
    reader = await make_principal(database, setup.tenant_id, role=None, name="r")
    for resource, effect in (
        ("credential:*", "allow"),
        (f"credential:{spellings(c)[label]}", "deny"),
    ):
        r = await client.post(
            setup.url("grants"),
            json={
                "principal_id": str(reader.principal_id),
                "resource": resource,
                "action": "read",
                "effect": effect,
            },
            headers=setup.admin.headers,
        )
        assert r.status_code == 201, r.text
    assert r.json()["data"]["resource"] == f"credential:{c}"  # echoed canonical
    assert (
        await client.get(setup.url("credentials", c), headers=reader.headers)
    ).status_code == 403


@pytest.mark.parametrize(
    "resource",
    [
        "credential:not-a-uuid",
        "principal:abc.*",
        "server:Not_A_Handle",
        "catalog:has.dot",
        "tool:Upper.*",
        "tool:nohandle",
        "grant:",
    ],
)
async def test_grant_pattern_that_can_name_nothing_is_400(
    client: httpx2.AsyncClient, database: Database, resource: str
) -> None:
    setup = await make_tenant_admin(database)
    agent = await _agent(client, setup)
    r = await client.post(
        setup.url("grants"),
        json={"principal_id": agent, "resource": resource, "action": "*", "effect": "deny"},
        headers=setup.admin.headers,
    )
    assert r.status_code == 400, r.text
    assert resource not in r.json()["error"]["message"] or resource == "grant:"
