"""The world of the route matrix: every route of the app, two tenants, one object of each kind.

``ROUTES`` classifies every route of the app (``tests/test_route_matrix.py`` fails when one is
missing: add new routes here). ``world`` is tenant A and tenant B, each populated through the API,
a platform admin and a live handmade MCP peer; ``settings`` lets the hub reach that loopback peer.
Test modules that use ``world`` import ``settings``, ``world``, ``handmade_peer`` and
``oauth_peers`` into their namespace (and list them in ``__all__``).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

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

Ids = dict[str, str]
#: the tables a refused attempt writes to (its audit row and its chain's head)
AUDIT_TABLES = ("audit_events", "audit_chain_heads")
Body = Callable[[Ids], dict[str, Any]] | None


@dataclass(frozen=True)
class Route:
    kind: Literal["public", "self", "platform", "tenant"]
    method: str
    path: str
    body: Body = None
    # body fields that carry another object's id (so {t}=B with A's ids must be 404)
    body_refs: tuple[str, ...] = ()
    mutating: bool = False
    # how to call it successfully for the audit check: returns ids to use (may create objects)
    prepare: Callable[[World], Awaitable[Ids]] | None = None
    success: int = 200


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


def _future() -> str:
    return "2099-01-01T00:00:00+00:00"


async def _ids(w: World) -> Ids:
    return dict(w.a_ids)


def _fresh(what: str) -> Callable[[World], Awaitable[Ids]]:
    async def prepare(w: World) -> Ids:
        return await w.throwaway(dict(w.a_ids), what)

    return prepare


async def _peer_server(w: World) -> Ids:
    """A server of A's whose URL is the world's live MCP peer (a snapshot really discovers)."""
    handle = f"peer{uuid.uuid4().hex[:8]}"
    r = await w.client.post(
        f"/tenants/{w.a_ids['t']}/servers",
        json={"handle": handle, "url": w.peer_url},
        headers=w.a_admin.headers,
    )
    assert r.status_code == 201, r.text
    return {**w.a_ids, "handle": handle}


async def _peer_credential(w: World) -> Ids:
    """A credential of A's pinned to the live peer's origin, and the peer's URL."""
    r = await w.client.post(
        f"/tenants/{w.a_ids['t']}/credentials",
        json={
            "name": "peer",
            "type": "api_key",
            "secret": "peer-secret-0123456789",
            "api_base_url": w.peer_url.rsplit("/", 1)[0],
        },
        headers=w.a_admin.headers,
    )
    return {**w.a_ids, "c": r.json()["data"]["id"], "peer_url": w.peer_url}


async def _oauth_server(w: World) -> Ids:
    """A server of A's behind the world's authorization server (an authorization really starts)."""
    handle = f"oauth{uuid.uuid4().hex[:8]}"
    r = await w.client.post(
        f"/tenants/{w.a_ids['t']}/servers",
        json={"handle": handle, "url": w.oauth_peer_url},
        headers=w.a_admin.headers,
    )
    assert r.status_code == 201, r.text
    return {**w.a_ids, "handle": handle}


def _fresh_key(w: World) -> Awaitable[Ids]:
    async def prepare() -> Ids:
        ids = await w.throwaway(dict(w.a_ids), "principal")
        return await w.throwaway(ids, "key")

    return prepare()


ROUTES: dict[str, Route] = {
    # public and self
    "healthz": Route("public", "GET", "/healthz"),
    "readyz": Route("public", "GET", "/readyz"),
    "metrics": Route("public", "GET", "/metrics"),
    "openapi": Route("public", "GET", "/openapi.json"),
    "swagger_ui_html": Route("public", "GET", "/docs"),
    "swagger_ui_redirect": Route("public", "GET", "/docs/oauth2-redirect"),
    "redoc_html": Route("public", "GET", "/redoc"),
    "docs_asset": Route("public", "GET", "/docs/assets/{name}"),
    "whoami": Route("self", "GET", "/whoami"),
    # platform
    "tenant.create": Route(
        "platform",
        "POST",
        "/tenants",
        body=lambda i: {"slug": f"x{uuid.uuid4().hex[:8]}", "name": "X"},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "tenant.list": Route("platform", "GET", "/tenants"),
    "tenant.get": Route("platform", "GET", "/tenants/{t}"),
    "tenant.update": Route(
        "platform",
        "PATCH",
        "/tenants/{t}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "tenant.disable": Route(
        "platform", "DELETE", "/tenants/{t}", mutating=True, prepare=_ids, success=204
    ),
    "platform_key.create": Route(
        "platform",
        "POST",
        "/platform/keys",
        body=lambda i: {},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "platform_key.list": Route("platform", "GET", "/platform/keys"),
    "platform_key.revoke": Route(
        "platform",
        "DELETE",
        "/platform/keys/{k}",
        mutating=True,
        prepare=_fresh("platform_key"),
        success=204,
    ),
    "platform_key.roll": Route(
        "platform",
        "POST",
        "/platform/keys/{k}/roll",
        body=lambda i: {"old_key_expires_at": _future()},
        mutating=True,
        prepare=_fresh("platform_key"),
        success=201,
    ),
    # tenant: principals and keys
    "principal.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/principals",
        body=lambda i: {"kind": "agent", "name": "new"},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "principal.list": Route("tenant", "GET", "/tenants/{t}/principals"),
    "principal.get": Route("tenant", "GET", "/tenants/{t}/principals/{p}"),
    "principal.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/principals/{p}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "principal.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/principals/{p}",
        mutating=True,
        prepare=_fresh("principal"),
        success=204,
    ),
    "api_key.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/principals/{p}/keys",
        body=lambda i: {},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "api_key.list": Route("tenant", "GET", "/tenants/{t}/principals/{p}/keys"),
    "api_key.revoke": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/principals/{p}/keys/{k}",
        mutating=True,
        prepare=_fresh_key,
        success=204,
    ),
    "api_key.roll": Route(
        "tenant",
        "POST",
        "/tenants/{t}/principals/{p}/keys/{k}/roll",
        body=lambda i: {"old_key_expires_at": _future()},
        mutating=True,
        prepare=_fresh_key,
        success=201,
    ),
    # tenant: grants
    "grant.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/grants",
        body=lambda i: {
            "principal_id": i["p"],
            "resource": f"tool:n{uuid.uuid4().hex[:6]}.*",
            "action": "call",
            "effect": "allow",
        },
        body_refs=("principal_id",),
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "grant.list": Route("tenant", "GET", "/tenants/{t}/grants"),
    "grant.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/grants/{g}",
        mutating=True,
        prepare=_fresh("grant"),
        success=204,
    ),
    "grant.check": Route(
        "tenant",
        "POST",
        "/tenants/{t}/grants/check",
        body=lambda i: {"principal_id": i["p"], "resource": "tool:x.y", "action": "call"},
        body_refs=("principal_id",),
    ),
    # tenant: credentials
    "credential.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/credentials",
        body=lambda i: {
            "name": "c",
            "type": "api_key",
            "secret": "s3cret-0123456789ab",
            "api_base_url": "https://api.example.com",
        },
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "credential.list": Route("tenant", "GET", "/tenants/{t}/credentials"),
    "credential.get": Route("tenant", "GET", "/tenants/{t}/credentials/{c}"),
    "credential.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/credentials/{c}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "credential.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/credentials/{c}",
        mutating=True,
        prepare=_fresh("credential"),
        success=204,
    ),
    # tenant: servers, catalogs, deployments
    "server.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/servers",
        body=lambda i: {"handle": f"s{uuid.uuid4().hex[:8]}", "url": "https://s.example.com/mcp"},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "server.list": Route("tenant", "GET", "/tenants/{t}/servers"),
    "server.get": Route("tenant", "GET", "/tenants/{t}/servers/{handle}"),
    "server.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/servers/{handle}",
        body=lambda i: {"url": "https://moved.example.com/mcp"},
        mutating=True,
        prepare=_fresh("server"),
    ),
    "server.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/servers/{handle}",
        mutating=True,
        prepare=_fresh("server"),
        success=204,
    ),
    "catalog.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/servers/{handle}/catalogs",
        mutating=True,
        prepare=_peer_server,
        success=201,
    ),
    "mcp.discover": Route(
        "tenant",
        "POST",
        "/tenants/{t}/mcp/discover",
        body=lambda i: {
            "url": i.get("peer_url", "https://alpha.example.com/mcp"),
            "credential_id": i["c"],
        },
        body_refs=("credential_id",),
        mutating=True,
        prepare=_peer_credential,
    ),
    "catalog.list": Route("tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs"),
    "catalog.latest": Route("tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs/latest"),
    "catalog.get": Route("tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs/{version}"),
    "catalog.diff": Route(
        "tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs/{version}/diff?from=1"
    ),
    "deployment.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments",
        body=lambda i: {
            "agent_id": i["p"],
            "entries": [{"server": i["handle"], "catalog_version": 1}],
        },
        body_refs=("agent_id",),
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "deployment.list": Route("tenant", "GET", "/tenants/{t}/deployments"),
    "deployment.get": Route("tenant", "GET", "/tenants/{t}/deployments/{d}"),
    "deployment.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/deployments/{d}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "deployment.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/deployments/{d}",
        mutating=True,
        prepare=_fresh("deployment"),
        success=204,
    ),
    "deployment.bundle": Route("tenant", "GET", "/tenants/{t}/deployments/{d}/bundle"),
    "deployment.drift": Route("tenant", "GET", "/tenants/{t}/deployments/{d}/drift"),
    # tenant: approvals and the agents' MCP endpoint
    "approval.list": Route("tenant", "GET", "/tenants/{t}/approvals"),
    "approval.get": Route("tenant", "GET", "/tenants/{t}/approvals/{a}"),
    "approval.decide": Route(
        "tenant",
        "POST",
        "/tenants/{t}/approvals/{a}/decision",
        body=lambda i: {"decision": "approve", "note": "ok"},
        mutating=True,
        prepare=_fresh("approval"),
    ),
    "gateway.mcp": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/mcp",
        body=lambda i: {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ),
    # GET and DELETE are 405 for everyone (stateless in both eras): nothing to authorise, nothing
    # revealed about the tenant or deployment named
    "gateway.mcp_stream": Route("public", "GET", "/tenants/{t}/deployments/{d}/mcp"),
    # only the deployment's sidecar service principal may lease (everyone else: 403)
    "credential.lease": Route(
        "tenant",
        "POST",
        "/tenants/{t}/credentials/{c}/lease",
        body=lambda i: {"deployment_id": i["d"]},
        body_refs=("deployment_id",),
    ),
    # direct mode: the deployment's agent asks the hub's decision and reports the outcome
    "deployment.decide": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/decisions",
        body=lambda i: {"wire_name": "x__y", "arguments": {}},
    ),
    "deployment.decision_outcome": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/decisions/{decision_id}/outcome",
        body=lambda i: {"outcome": "success"},
    ),
    # tenant: OAuth (the callback is authorised by its state alone)
    "oauth.authorize": Route(
        "tenant",
        "POST",
        "/tenants/{t}/oauth/authorizations",
        body=lambda i: {"server": i["handle"]},
        body_refs=("server",),
        mutating=True,
        prepare=_oauth_server,
        success=201,
    ),
    "oauth_authorization.get": Route("tenant", "GET", "/tenants/{t}/oauth/authorizations/{o}"),
    "oauth.callback": Route("public", "GET", "/oauth/callback"),
    "oauth.client_metadata": Route("public", "GET", "/oauth/client-metadata.json"),
    # tenant: the audit trail (audit : read), and the platform's own chain
    "audit.list": Route("tenant", "GET", "/tenants/{t}/audit"),
    "audit.verify": Route("tenant", "GET", "/tenants/{t}/audit/verify"),
    "audit.export": Route("tenant", "GET", "/tenants/{t}/audit/export"),
    "platform_audit.list": Route("platform", "GET", "/platform/audit"),
    "platform_audit.verify": Route("platform", "GET", "/platform/audit/verify"),
    "platform_audit.export": Route("platform", "GET", "/platform/audit/export"),
}

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
