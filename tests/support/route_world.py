"""The world of the route matrix: every route of the app, two tenants, one object of each kind.

``ROUTES`` (:mod:`tests.support.route_table`, re-exported here) classifies every route of the
app. ``world`` is tenant A and tenant B, each populated through the API,
a platform admin and a live handmade MCP peer; ``settings`` lets the hub reach that loopback peer.
Test modules that use ``world`` import ``settings``, ``world``, ``handmade_peer`` and
``oauth_peers`` into their namespace (and list them in ``__all__``).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field

import httpx2
import pytest
from fastapi import FastAPI, routing
from sqlalchemy import select

from hub.core.db import Database
from hub.core.settings import Settings
from hub.models import Base
from tests.conftest import make_settings
from tests.peers.fixtures import HandmadePeerStarter, OAuthPeersStarter
from tests.support.databases import as_owner
from tests.support.factories import (
    Actor,
    make_authorization,
    make_catalog,
    make_platform_admin,
    make_principal,
    make_server,
    make_tenant,
    tool,
)
from tests.support.route_table import ROUTES, Ids, Route

__all__ = [
    "AUDIT_TABLES",
    "ROUTES",
    "Ids",
    "Route",
    "World",
    "app_routes",
    "call",
    "item_params",
    "make_world",
    "settings",
    "snapshot",
    "template_of",
    "url_of",
    "world",
]

#: the tables a refused attempt writes to (its audit row and its chain's head)
AUDIT_TABLES = ("audit_events", "audit_chain_heads")


@dataclass
class World:
    client: httpx2.AsyncClient
    db: Database
    platform: Actor
    a_admin: Actor
    b_admin: Actor
    b_nobody: Actor
    a_ids: Ids
    b_ids: Ids
    peer_url: str = ""
    oauth_peer_url: str = ""  # a handmade peer behind the world's authorization server
    a_words: set[str] = field(default_factory=set)

    async def throwaway(self, ids: Ids, what: str) -> Ids:
        """Create a fresh object in A for a destructive call, via the API as A's admin."""
        t = ids["t"]
        headers = self.a_admin.headers
        if what == "principal":
            r = await self.client.post(
                f"/tenants/{t}/principals", json={"kind": "agent", "name": "tmp"}, headers=headers
            )
            return {**ids, "p": r.json()["data"]["id"]}
        if what == "key":
            r = await self.client.post(
                f"/tenants/{t}/principals/{ids['p']}/keys", json={}, headers=headers
            )
            return {**ids, "k": r.json()["data"]["id"]}
        if what == "grant":
            r = await self.client.post(
                f"/tenants/{t}/grants",
                json={
                    "principal_id": ids["p"],
                    "resource": f"tool:tmp{uuid.uuid4().hex[:6]}.*",
                    "action": "call",
                    "effect": "allow",
                },
                headers=headers,
            )
            return {**ids, "g": r.json()["data"]["id"]}
        if what == "credential":
            r = await self.client.post(
                f"/tenants/{t}/credentials",
                json={
                    "name": "tmp",
                    "type": "api_key",
                    "secret": "tmp-secret-0123456789",
                    "api_base_url": "https://tmp.example.com",
                },
                headers=headers,
            )
            return {**ids, "c": r.json()["data"]["id"]}
        if what == "server":
            handle = f"tmp{uuid.uuid4().hex[:8]}"
            await self.client.post(
                f"/tenants/{t}/servers",
                json={"handle": handle, "url": "https://tmp.example.com/mcp"},
                headers=headers,
            )
            return {**ids, "handle": handle}
        if what == "deployment":
            r = await self.client.post(
                f"/tenants/{t}/deployments",
                json={"agent_id": ids["p"], "entries": []},
                headers=headers,
            )
            return {**ids, "d": r.json()["data"]["id"]}
        if what == "approval":
            return {**ids, "a": await ask_for_approval(self, ids, f"throwaway-{uuid.uuid4()}")}
        if what == "platform_key":
            r = await self.client.post("/platform/keys", json={}, headers=self.platform.headers)
            return {**ids, "k": r.json()["data"]["id"]}
        raise AssertionError(what)


_PARAM = re.compile(r"{(\w+)}")


def url_of(route: Route, ids: Ids) -> str:
    return _PARAM.sub(lambda m: ids[m.group(1)], route.path)


def item_params(route: Route) -> set[str]:
    return set(_PARAM.findall(route.path)) - {"t"}


def template_of(route: Route) -> str:
    return route.path.split("?", 1)[0]


def app_routes(app: FastAPI) -> dict[str, tuple[str, str]]:
    """The app's API routes by name. The console's HTML pages (``/console``, session cookie, not
    API keys) are walked as another tenant by ``tests/console/test_console_matrix.py``."""
    found: dict[str, tuple[str, str]] = {}
    for context in routing.iter_route_contexts(app.routes):
        if str(context.path).startswith("/console"):
            continue
        methods = sorted(m for m in (context.methods or set()) if m != "HEAD")
        for method in methods:
            found[str(context.name)] = (method, str(context.path))
    return found


async def snapshot(db: Database, tenant_id: str, *, skip: tuple[str, ...] = ()) -> str:
    """A hash of every row belonging to tenant A (and A's tenant row), but the tables in
    ``skip`` (:data:`AUDIT_TABLES` when A's own refused attempts are being recorded)."""
    digest = hashlib.sha256()
    async with as_owner(db.engine) as owner, owner.connect() as conn:
        for table in Base.metadata.sorted_tables:
            if table.name in skip:
                continue
            if "tenant_id" in table.c:
                query = select(table).where(table.c.tenant_id == uuid.UUID(tenant_id))
            elif table.name == "tenants":
                query = select(table).where(table.c.id == uuid.UUID(tenant_id))
            else:
                continue
            rows = (await conn.execute(query.order_by(*table.primary_key.columns))).all()
            digest.update(table.name.encode())
            digest.update(repr([tuple(r) for r in rows]).encode())
    return digest.hexdigest()


async def make_world(client: httpx2.AsyncClient, db: Database) -> World:
    platform = await make_platform_admin(db)
    a = await make_tenant(db, slug="alpha-tenant-slug")
    b = await make_tenant(db, slug="bravo-tenant-slug")
    a_admin = await make_principal(db, a.id, name="alpha-admin-name")
    b_admin = await make_principal(db, b.id, name="bravo-admin")
    b_nobody = await make_principal(db, b.id, role=None, name="bravo-nobody")
    world = World(client, db, platform, a_admin, b_admin, b_nobody, {}, {})
    world.a_ids = await _populate(world, str(a.id), a_admin, "alpha")
    world.b_ids = await _populate(world, str(b.id), b_admin, "bravo")
    world.a_words = {v for k, v in world.a_ids.items() if k != "version"} | {
        "alpha-tenant-slug",
        "alpha-",
    }
    return world


async def _populate(w: World, t: str, admin: Actor, label: str) -> Ids:
    """One object of every kind in tenant ``t``, made through the API."""
    headers = admin.headers
    agent = await w.client.post(
        f"/tenants/{t}/principals",
        json={"kind": "agent", "name": f"{label}-agent-name", "role": "agent"},
        headers=headers,
    )
    p = agent.json()["data"]["id"]
    key = await w.client.post(f"/tenants/{t}/principals/{p}/keys", json={}, headers=headers)
    handle = f"{label}-srv"
    grant = await w.client.post(
        f"/tenants/{t}/grants",
        json={
            "principal_id": p,
            "resource": f"tool:{handle}.*",
            "action": "call",
            "effect": "allow",
        },
        headers=headers,
    )
    credential = await w.client.post(
        f"/tenants/{t}/credentials",
        json={
            "name": f"{label}-credential-name",
            "type": "api_key",
            "secret": f"{label}-secret-value",
            "api_base_url": f"https://{label}.example.com",
        },
        headers=headers,
    )
    server_id = await make_server(w.db, uuid.UUID(t), handle, f"https://{label}.example.com/mcp")
    server_id_of = str(server_id)
    await make_catalog(w.db, uuid.UUID(t), server_id, [tool(f"{label}-tool")])
    deployment = await w.client.post(
        f"/tenants/{t}/deployments",
        json={"agent_id": p, "entries": [{"server": handle, "catalog_version": 1}]},
        headers=headers,
    )
    ids = {
        "t": t,
        "p": p,
        "k": key.json()["data"]["id"],
        "g": grant.json()["data"]["id"],
        "c": credential.json()["data"]["id"],
        "handle": handle,
        "version": "1",
        "d": deployment.json()["data"]["id"],
        "tool": f"{label}-tool",
        "decision_id": "not-a-decision",  # a sealed id nobody can forge: refused before use
    }
    ids["key_prefix"] = key.json()["data"]["prefix"]
    ids["agent_key"] = key.json()["data"]["key"]
    ids["a"] = await ask_for_approval(w, ids, "populate")
    ids["o"] = str(
        await make_authorization(w.db, uuid.UUID(t), admin.principal_id, uuid.UUID(server_id_of))
    )
    return ids


async def ask_for_approval(w: World, ids: Ids, note: str) -> str:
    """The agent calls its ``ask`` tool through the MCP endpoint: a pending approval (its id)."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": f"{ids['handle']}__{ids['tool']}", "arguments": {"note": note}},
    }
    response = await w.client.post(
        f"/tenants/{ids['t']}/deployments/{ids['d']}/mcp",
        json=call,
        headers={"authorization": f"Bearer {ids['agent_key']}"},
    )
    assert response.status_code == 200, response.text
    meta = response.json()["result"]["_meta"]["io.mcphub/approval"]
    return str(meta["id"])


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, allow_loopback=True, discovery_timeout_s=10, approval_wait_s=0)


@pytest.fixture
async def world(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    oauth_peers: OAuthPeersStarter,
) -> World:
    made = await make_world(client, database)
    made.peer_url = (await handmade_peer(era="modern")).url
    made.oauth_peer_url = (await oauth_peers()).peer.url
    return made


async def call(world: World, route: Route, ids: Ids, actor: Actor) -> httpx2.Response:
    """Call ``route`` with ``ids`` as ``actor`` (with the route's body, if it has one)."""
    body = route.body(ids) if route.body else None
    return await world.client.request(
        route.method, url_of(route, ids), json=body, headers=actor.headers
    )
