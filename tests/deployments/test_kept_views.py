"""What the gateway keeps of catalogs and views (``hub.gateway.adapters.view``) is bounded by weight
(``HUB_GATEWAY_CACHE_BYTES``), not by count: a view is always built right, and kept only while
everything kept fits the budget."""

from __future__ import annotations

import json
import re
import uuid
from types import SimpleNamespace

import httpx2
from fastapi import FastAPI

from hub.app import create_app
from hub.core import rls
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.settings import Settings
from hub.gateway.adapters import view as view_module
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.engine.model import DeploymentView
from tests.deployments.conftest import World, deploy_to_agent
from tests.support.factories import make_catalog, make_server, scope_of, tool
from tests.support.queries import count_queries
from tests.support.scrape import scraped

#: each of these servers' catalogs weighs a little over 5 KB: five tools of 1,000-character text
TOOLS_EACH = 5


def _heavy_tools(prefix: str) -> list[dict[str, object]]:
    return [tool(f"{prefix}_{i}", description="d" * 1_000) for i in range(TOOLS_EACH)]


async def _load(
    loader: ViewLoader, database: Database, w: World, deployment_id: str
) -> tuple[DeploymentView, int]:
    """The view as ``loader`` loads it, and how many catalog reads that took."""
    tenant = scope_of(w.team.tenant_id)
    with rls.scope(tenant), count_queries(database) as queries:
        async with database.session(write=False) as session:
            view = await loader.load(session, tenant, uuid.UUID(deployment_id))
    assert view is not None
    return view, len([q for q in queries if re.search(r"\bFROM catalogs\b", q)])


async def _one_deployment_per_server(
    client: httpx2.AsyncClient, database: Database, w: World, count: int
) -> list[str]:
    deployments = []
    for n in range(count):
        handle = f"heavy{n}"
        server = await make_server(database, w.team.tenant_id, handle)
        await make_catalog(database, w.team.tenant_id, server, _heavy_tools(handle))
        made = await deploy_to_agent(client, w, [{"server": handle, "catalog_version": 1}])
        deployments.append(made["id"])
    return deployments


async def test_what_is_kept_stays_within_the_budget(
    client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    deployments = await _one_deployment_per_server(client, database, world, 6)
    loader = ViewLoader(budget=2 * 18_000)  # about three of these catalogs a tier
    for n, deployment_id in enumerate(deployments):
        view, reads = await _load(loader, database, world, deployment_id)
        assert reads == 1  # never seen: its catalog is read
        assert sorted(t.name for t in view.tools.values()) == [
            f"heavy{n}_{i}" for i in range(TOOLS_EACH)
        ]
        assert 0 < loader.kept_bytes <= loader.budget
        again, reads = await _load(loader, database, world, deployment_id)
        assert (again, reads) == (view, 0)  # the newest is kept whole
    # six views of about 6 KB each do not fit in 18 KB: some went, and come back right
    read_again = 0
    for n, deployment_id in enumerate(deployments):
        view, reads = await _load(loader, database, world, deployment_id)
        read_again += reads
        assert {t.name for t in view.tools.values()} == {f"heavy{n}_{i}" for i in range(5)}
        assert loader.kept_bytes <= loader.budget
    assert read_again >= 3


async def test_a_view_heavier_than_the_budget_is_served_and_not_kept(
    client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    [deployment_id] = await _one_deployment_per_server(client, database, world, 1)
    loader = ViewLoader(budget=2 * 1_000)
    first, reads = await _load(loader, database, world, deployment_id)
    assert reads == 1
    second, reads = await _load(loader, database, world, deployment_id)
    assert reads == 1  # not kept: read again, and built the same
    assert second == first
    assert loader.kept_bytes == 0
    assert sorted(first.tools) == sorted(f"heavy0__heavy0_{i}" for i in range(TOOLS_EACH))


async def test_nothing_is_kept_with_a_budget_of_zero_and_calls_still_build_their_view(
    client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    [deployment_id] = await _one_deployment_per_server(client, database, world, 1)
    loader = ViewLoader(budget=0)
    for _ in range(2):
        view, reads = await _load(loader, database, world, deployment_id)
        assert (reads, len(view.tools), loader.kept_bytes) == (1, TOOLS_EACH, 0)


async def test_the_default_budget_keeps_an_ordinary_deployment(
    client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    made = await deploy_to_agent(
        client,
        world,
        [
            {"server": "linear", "catalog_version": 1},
            {"server": "github", "catalog_version": 1},
        ],
    )
    loader = ViewLoader()
    assert loader.budget == 32 * 1024 * 1024
    _, reads = await _load(loader, database, world, made["id"])
    assert reads == 2
    _, reads = await _load(loader, database, world, made["id"])
    assert reads == 0


def test_a_views_drift_marks_count_in_its_weight() -> None:
    """A drift mark carries a tool's definition before and after: a view holds it as its diff,
    and the signature it is kept under holds the mark's JSON."""
    catalog = view_module._Catalog(1, (), {}, weight=1_000)
    mark = {"search": {"kind": "changed", "before": {"d": "x" * 500}, "after": {"d": "y" * 500}}}
    plain = [SimpleNamespace(drift=None)]
    drifted = [SimpleNamespace(drift=mark)]
    assert view_module._view_weight(plain, [catalog]) == 1_000
    assert view_module._view_weight(drifted, [catalog]) == 1_000 + 2 * len(json.dumps(mark))


async def test_metrics_show_what_is_kept_and_each_miss(
    app: FastAPI, client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    [deployment_id] = await _one_deployment_per_server(client, database, world, 1)
    loader = components_of(app).get(ViewLoader)
    before = {t: await _metric(client, "misses_total", t) for t in ("catalogs", "views")}
    await _load(loader, database, world, deployment_id)
    await _load(loader, database, world, deployment_id)  # kept: no miss
    for tier in ("catalogs", "views"):
        assert await _metric(client, "misses_total", tier) == before[tier] + 1
    kept = {t: await _metric(client, "bytes", t) for t in ("catalogs", "views")}
    assert kept["catalogs"] + kept["views"] == loader.kept_bytes > 0


async def _metric(client: httpx2.AsyncClient, name: str, tier: str) -> float:
    value = await scraped(client, f"hub_gateway_cache_{name}", tier=tier)
    assert value is not None, name
    return value


async def test_the_setting_is_the_replicas_budget(settings: Settings, database: Database) -> None:
    app: FastAPI = create_app(
        settings.model_copy(update={"gateway_cache_bytes": 12_345}), database=database
    )
    assert components_of(app).get(ViewLoader).budget == 12_345
