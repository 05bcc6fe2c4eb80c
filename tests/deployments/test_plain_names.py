"""``"tool_names": "plain"``: entries whose tools keep their own names on the wire (the option the
conformance suite's deployment uses), refused with 400 when the names would collide or are not
valid wire names, on create and on update alike; a refused update changes nothing."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.deployments.conftest import World, grant_to
from tests.support.factories import make_catalog, make_server, tool

PLAIN: dict[str, Any] = {"tool_names": "plain"}


@pytest.fixture
async def plain_world(database: Database, world: World) -> World:
    """Beside the world's ``linear`` and ``github``: ``alpha`` (v1: search, fetch; v2: search,
    fetch, list) and ``beta`` (v1: list, post), all names valid on the wire."""
    tenant = world.team.tenant_id
    alpha = await make_server(database, tenant, "alpha", "https://alpha.example/mcp")
    await make_catalog(database, tenant, alpha, [tool("search"), tool("fetch")])
    await make_catalog(
        database, tenant, alpha, [tool("search"), tool("fetch"), tool("list")], version=2
    )
    beta = await make_server(database, tenant, "beta", "https://beta.example/mcp")
    await make_catalog(database, tenant, beta, [tool("list"), tool("post")])
    return world


def _entry(server: str, version: int = 1, **options: str) -> dict[str, Any]:
    return {"server": server, "catalog_version": version, **options}


async def _create(
    client: httpx2.AsyncClient, w: World, entries: list[dict[str, Any]]
) -> httpx2.Response:
    return await client.post(
        w.deployments(),
        json={"agent_id": str(w.agent.principal_id), "entries": entries},
        headers=w.admin.headers,
    )


def _refused(response: httpx2.Response, why: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert why in error["message"], error


async def test_plain_entries_keep_their_tools_own_names(
    client: httpx2.AsyncClient, plain_world: World
) -> None:
    w = plain_world
    await grant_to(client, w.team, w.agent, "tool:alpha.*", "allow")
    await grant_to(client, w.team, w.agent, "tool:beta.*", "allow")
    created = await _create(client, w, [_entry("alpha", **PLAIN), _entry("beta", **PLAIN)])
    assert created.status_code == 201, created.text
    bundle = await client.get(
        w.deployments(created.json()["data"]["id"], "bundle"), headers=w.agent.headers
    )
    assert bundle.status_code == 200, bundle.text
    names = sorted(t["wire_name"] for s in bundle.json()["data"]["servers"] for t in s["tools"])
    assert names == ["fetch", "list", "post", "search"]


async def test_plain_and_prefixed_entries_live_side_by_side(
    client: httpx2.AsyncClient, plain_world: World
) -> None:
    """A prefixed entry's ``list`` is ``beta__list``: no collision with a plain ``list``."""
    created = await _create(client, plain_world, [_entry("alpha", 2, **PLAIN), _entry("beta")])
    assert created.status_code == 201, created.text


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        pytest.param(
            [_entry("alpha", 2, **PLAIN), _entry("beta", **PLAIN)],
            "share a name",
            id="two-plain-entries-share-list",
        ),
        pytest.param([_entry("linear", **PLAIN)], "not a valid wire name", id="a-dotted-tool-name"),
        pytest.param(
            [_entry("github", **PLAIN)], "not a valid wire name", id="a-100-character-name"
        ),
    ],
)
async def test_plain_names_that_cannot_be_kept_are_refused(
    client: httpx2.AsyncClient, plain_world: World, entries: list[dict[str, Any]], why: str
) -> None:
    before = await client.get(plain_world.deployments(), headers=plain_world.admin.headers)
    _refused(await _create(client, plain_world, entries), why)
    after = await client.get(plain_world.deployments(), headers=plain_world.admin.headers)
    assert after.json()["data"] == before.json()["data"]  # nothing was made


async def test_an_update_that_would_collide_is_refused_and_changes_nothing(
    client: httpx2.AsyncClient, plain_world: World
) -> None:
    """alpha v1 and beta side by side in plain names; moving alpha to v2 brings its own
    ``list``, which beta's takes already."""
    w = plain_world
    created = await _create(client, w, [_entry("alpha", **PLAIN), _entry("beta", **PLAIN)])
    assert created.status_code == 201, created.text
    url = w.deployments(created.json()["data"]["id"])
    moved = [_entry("alpha", 2, **PLAIN), _entry("beta", **PLAIN)]
    _refused(await client.patch(url, json={"entries": moved}, headers=w.admin.headers), "share")
    kept = await client.get(url, headers=w.admin.headers)
    versions = {e["server"]: e["catalog_version"] for e in kept.json()["data"]["entries"]}
    assert versions == {"alpha": 1, "beta": 1}
    # the same move with beta prefixed is fine
    prefixed = [_entry("alpha", 2, **PLAIN), _entry("beta")]
    updated = await client.patch(url, json={"entries": prefixed}, headers=w.admin.headers)
    assert updated.status_code == 200, updated.text
