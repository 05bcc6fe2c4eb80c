"""Kept bundles (``hub.deployments.bundle_cache``): an unchanged bundle is answered without
building it again, and after any change a replica that kept the old one answers exactly what a
replica that never saw it builds."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from hub.app import create_app
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.settings import Settings
from hub.deployments.bundle_cache import BundleCache, KeptBundle
from hub.gateway.adapters.view import ViewLoader
from tests.conftest import ClockControl
from tests.deployments.conftest import Bundled, grant_to
from tests.support.queries import count_queries


async def _fresh_read(
    settings: Settings, database: Database, url: str, headers: dict[str, str]
) -> tuple[str, Any]:
    """The bundle as a new replica (nothing kept) builds it: its ETag and body."""
    app: FastAPI = create_app(settings, database=database)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://b") as c,
    ):
        read = await c.get(url, headers=headers)
    assert read.status_code == 200, read.text
    return read.headers["etag"], read.json()


async def test_an_unchanged_bundle_is_answered_without_reading_its_catalogs(
    client: httpx2.AsyncClient, database: Database, bundled: Bundled
) -> None:
    agent = bundled.world.agent.headers
    with count_queries(database) as queries:
        unchanged = await client.get(bundled.url, headers={**agent, "if-none-match": bundled.etag})
        again = await client.get(bundled.url, headers=agent)
    assert unchanged.status_code == 304
    assert unchanged.headers["etag"] == bundled.etag
    assert (again.headers["etag"], again.content) == (bundled.etag, bundled.first.content)
    assert not [q for q in queries if re.search(r"\bFROM catalogs\b", q)], queries


async def test_a_kept_bundle_is_what_a_fresh_replica_builds_after_every_change(
    client: httpx2.AsyncClient, database: Database, settings: Settings, bundled: Bundled
) -> None:
    w = bundled.world
    team, agent = w.team, w.agent.headers
    deployment = w.deployments(bundled.deployment["id"])
    entries: list[dict[str, Any]] = [
        {"server": "linear", "catalog_version": 1, "allow_without_ask": ["search"]},
        {"server": "github", "catalog_version": 1},
    ]
    credential = await client.post(
        team.url("credentials"),
        json={
            "name": "gh",
            "type": "api_key",
            "secret": "s-0123456789abcdef",
            "api_base_url": "https://api.github.com",
        },
        headers=team.admin.headers,
    )
    assert credential.status_code == 201, credential.text

    async def patch_entries() -> None:
        patched = await client.patch(deployment, json={"entries": entries}, headers=w.admin.headers)
        assert patched.status_code == 200, patched.text

    async def fewer_without_ask() -> None:
        entries[0]["allow_without_ask"] = []
        await patch_entries()

    async def schema_arguments() -> None:
        entries[0]["arguments"] = "schema"
        await patch_entries()

    async def one_server_fewer() -> None:
        del entries[1]
        await patch_entries()

    async def a_credential() -> None:
        attached = await client.patch(
            team.url("servers", "github"),
            json={"credential_id": credential.json()["data"]["id"]},
            headers=team.admin.headers,
        )
        assert attached.status_code == 200, attached.text

    async def a_grant() -> None:
        await grant_to(client, team, w.agent, "tool:linear.search", "ask")

    async def a_deny() -> None:
        await grant_to(client, team, w.agent, "tool:linear.delete_issue", "deny")

    etags = [bundled.etag]
    for change in (
        fewer_without_ask,
        schema_arguments,
        a_credential,
        one_server_fewer,
        a_grant,
        a_deny,
    ):
        await change()
        kept = await client.get(bundled.url, headers={**agent, "if-none-match": etags[-1]})
        assert kept.status_code == 200, change.__name__  # changed, so not a 304
        fresh = await _fresh_read(settings, database, bundled.url, agent)
        assert (kept.headers["etag"], kept.json()) == fresh, change.__name__
        etags.append(kept.headers["etag"])
    assert len(set(etags)) == len(etags)


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param({"expires_at": "2026-12-07T12:05:00+00:00"}, id="expires_at"),
        pytest.param(
            {"conditions": {"time_window": {"start": "12:00", "end": "12:05", "tz": "UTC"}}},
            id="time_window",
        ),
    ],
)
async def test_a_grant_bounded_in_time_is_a_new_bundle_with_no_write_at_all(
    client: httpx2.AsyncClient, clock_control: ClockControl, bundled: Bundled, limit: dict[str, Any]
) -> None:
    """Decisions change with time too (a grant's ``expires_at``, its time window) while nothing
    is written: such a bundle is kept by the decisions themselves, not only by what was written."""
    w = bundled.world
    clock_control.current = datetime(2026, 12, 7, 12, 1, tzinfo=UTC)
    await grant_to(client, w.team, w.agent, "tool:github.search", "allow", **limit)
    granted = await client.get(bundled.url, headers=w.agent.headers)
    assert "search" in {t["name"] for t in granted.json()["data"]["servers"][1]["tools"]}
    clock_control.advance(6 * 60)
    expired = await client.get(
        bundled.url, headers={**w.agent.headers, "if-none-match": granted.headers["etag"]}
    )
    assert expired.status_code == 200
    assert "search" not in {t["name"] for t in expired.json()["data"]["servers"][1]["tools"]}


async def test_a_kept_bundle_of_grants_that_ignore_the_clock_decides_nothing(
    app: FastAPI, client: httpx2.AsyncClient, bundled: Bundled, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No grant of the agent expires or has a window: its grants at that ``grants_version`` and
    the deployment's rows decide every tool, so a kept bundle's 304 builds no view and decides no
    tool (the view is what the decisions are computed on)."""
    views = components_of(app).get(ViewLoader)
    built = 0
    from_rows = views.from_rows

    async def counted(*args: Any) -> Any:
        nonlocal built
        built += 1
        return await from_rows(*args)

    monkeypatch.setattr(views, "from_rows", counted)
    agent = bundled.world.agent.headers
    unchanged = await client.get(bundled.url, headers={**agent, "if-none-match": bundled.etag})
    assert (unchanged.status_code, unchanged.headers["etag"]) == (304, bundled.etag)
    assert built == 0
    admin = await client.get(bundled.url, headers=bundled.world.admin.headers)  # kept too
    assert (admin.headers["etag"], admin.content) == (bundled.etag, bundled.first.content)
    assert built == 0


def test_the_cache_keeps_the_newest_and_only_small_bodies() -> None:
    cache = BundleCache(entries=2, body_limit=4, etags=2)
    cache.put("a", b"1234", '"a"')
    cache.put("b", b"12345", '"b"')  # over the limit: its ETag only
    assert cache.get("a") == KeptBundle('"a"', b"1234")
    assert cache.get("b") == KeptBundle('"b"', None)
    cache.get("a")  # used last: "b" is the oldest now
    cache.put("c", b"", '"c"')
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (
        KeptBundle('"a"', b"1234"),
        None,
        KeptBundle('"c"', b""),
    )


def test_more_bundles_than_bodies_keep_their_etags() -> None:
    """A replica serving more deployments than it keeps bodies for still answers each sidecar's
    unchanged sync from memory: least recently used, in a cycle longer than the bodies' tier."""
    cache = BundleCache(entries=2, body_limit=4, etags=4)
    keys = [("tenant", f"deployment-{i}") for i in range(4)]
    for _ in range(2):  # each sidecar syncs in turn, twice
        for i, key in enumerate(keys):
            kept = cache.get(key)
            if kept is None:
                cache.put(key, b"body", f'"{i}"')
            else:
                assert kept.etag == f'"{i}"'
    assert [cache.get(key) for key in keys] == [
        KeptBundle('"0"', None),  # its body went with the oldest
        KeptBundle('"1"', None),
        KeptBundle('"2"', b"body"),
        KeptBundle('"3"', b"body"),
    ]
    cache.put(("tenant", "deployment-4"), b"body", '"4"')  # past the ETags' tier: the oldest goes
    assert cache.get(keys[0]) is None
    assert cache.get(("tenant", "deployment-1")) == KeptBundle('"1"', None)
    assert cache.get(("tenant", "deployment-4")) == KeptBundle('"4"', b"body")
