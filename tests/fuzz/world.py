"""The fuzzed hub: a fresh app per test on a migrated database holding one tenant's objects.

The app runs in-process on its own event loop in a worker thread (an anyio blocking portal), so
the synchronous Hypothesis tests schemathesis builds can drive it one request at a time; it gets
its own engine, made on that loop, and the offline fetcher of :mod:`tests.fuzz.network`.
Requests go through ``httpx2.ASGITransport``, as in the rest of the suite: nothing opens a socket
except the engine's own connection to the test database.

The tenant is seeded once per backend (:func:`make_seed`) through the API where the API can make
the object (a principal, its key, a revoked key, a grant, a credential, a deployment) and with
:mod:`tests.support.factories` otherwise (a server and two catalog versions); its rows are kept
and restored into an empty database before every test (:func:`fuzz_world`), so every operation
starts from the same state. The credential's secret is a canary, ``CANARY-<uuid>``, which no
response may contain; neither may any seeded key.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import requests
from anyio.from_thread import BlockingPortal, start_blocking_portal
from schemathesis import Case
from sqlalchemy import insert, select

from hub.app import create_app
from hub.core.db import Database
from hub.core.settings import Settings
from hub.egress import Fetcher
from hub.models import Base
from tests.conftest import make_settings
from tests.fuzz.network import offline_fetcher
from tests.support.databases import as_owner, truncate_all
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
    "BASE_URL",
    "CREDENTIAL_ORIGIN",
    "SERVER_HANDLE",
    "SURROGATE_MARK",
    "TOKEN",
    "FuzzWorld",
    "Seed",
    "fuzz_world",
    "is_platform_path",
    "make_seed",
]

BASE_URL = "http://hub.test"
# A value may be written as a ``@fuzz:<name>`` token (see tests.fuzz.strategies); the world
# puts the seeded object's real value in its place just before sending.
TOKEN = "@fuzz:"
#: Written as a lone-surrogate escape (``\ud800``) into a serialised JSON body by :meth:`send`.
SURROGATE_MARK = "@fuzz-surrogate@"
_TOKEN_RE = re.compile(re.escape(TOKEN) + r"([a-z_]+)")
SERVER_HANDLE = "fuzz-srv"
CREDENTIAL_ORIGIN = "https://canary.example.com"

Rows = dict[str, list[dict[str, Any]]]


def is_platform_path(path: str) -> bool:
    """Routes only the platform admin may use (a tenant admin gets 403 on every one of them)."""
    return path.startswith("/platform/") or path in ("/tenants", "/tenants/{t}")


@dataclass(frozen=True)
class Seed:
    """The seeded tenant as rows, and what the tests need to know about it."""

    rows: Rows
    platform: Actor
    admin: Actor
    ids: dict[str, str]
    canary: str
    revoked_key: str
    # Strings no response may contain: the canary, and every seeded key (whole and its secret).
    secrets: list[str]
    agent: Actor  # the deployment's own agent: the one caller of its MCP endpoint


@dataclass
class FuzzWorld:
    portal: BlockingPortal
    client: httpx2.AsyncClient
    seed: Seed

    def resolve(self, value: Any) -> Any:
        """``value`` with every ``@fuzz:<name>`` token replaced by the seeded value."""
        if isinstance(value, str):
            return _TOKEN_RE.sub(lambda m: self.seed.ids[m.group(1)], value)
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if isinstance(value, dict):
            return {self.resolve(key): self.resolve(item) for key, item in value.items()}
        return value

    def materialise(self, case: Case[Any]) -> None:
        """Put the real values into ``case`` (in place, so a failure report shows what was sent)."""
        case.path_parameters = self.resolve(dict(case.path_parameters))
        case.query = self.resolve(dict(case.query))
        for name, value in list(case.headers.items()):
            case.headers[name] = self.resolve(value)
        if isinstance(case.body, dict | list | str):
            case.body = self.resolve(case.body)

    def actor_for(self, path: str) -> Actor:
        if is_platform_path(path):
            return self.seed.platform
        return self.seed.agent if path.endswith("/mcp") else self.seed.admin

    def send(self, case: Case[Any], *, authenticate: bool = True) -> httpx2.Response:
        """Send ``case`` as the actor its route needs (or with only its own headers): exactly
        the request schemathesis' own serialisation makes, through httpx2's ASGI transport."""
        auth = self.actor_for(case.path).headers if authenticate else {}
        kwargs = case.as_transport_kwargs(base_url=BASE_URL, headers=auth)
        prepared = requests.Request(**kwargs).prepare()
        # the octets requests would put on the wire (header values are latin-1 there)
        headers = [(_octets(name), _octets(value)) for name, value in prepared.headers.items()]
        content = _bytes(prepared.body)
        if content is not None:
            content = content.replace(SURROGATE_MARK.encode(), b"\\ud800")
        return self.request(
            str(prepared.method), str(prepared.url), headers=headers, content=content
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | Sequence[tuple[bytes, bytes]] | None = None,
        content: bytes | None = None,
    ) -> httpx2.Response:
        call = functools.partial(self.client.request, method, url, headers=headers, content=content)
        return self.portal.call(call)


def _octets(value: str | bytes) -> bytes:
    return value.encode("latin-1") if isinstance(value, str) else value


def _bytes(body: object) -> bytes | None:
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    raise TypeError(f"unexpected prepared body {type(body).__name__}")


@dataclass
class _Running:
    portal: BlockingPortal
    client: httpx2.AsyncClient
    db: Database


@contextmanager
def _running_app(settings: Settings) -> Iterator[_Running]:
    """The app on its own loop with its own engine and the offline fetcher; tables emptied after."""
    with start_blocking_portal(backend="asyncio") as portal:
        fetcher = offline_fetcher(settings)
        db = portal.call(_make_database, settings.database_url)
        app = create_app(settings, database=db, fetcher=fetcher)
        try:
            with portal.wrap_async_context_manager(app.router.lifespan_context(app)):
                transport = httpx2.ASGITransport(app=app)
                client = httpx2.AsyncClient(transport=transport, base_url=BASE_URL)
                try:
                    yield _Running(portal, client, db)
                finally:
                    portal.call(client.aclose)
        finally:
            portal.call(_cleanup, db, fetcher)


def make_seed(settings: Settings) -> Seed:
    """Seed the tenant once and keep its rows (the database is emptied again afterwards)."""
    canary = f"CANARY-{uuid.uuid4()}"
    with _running_app(settings) as running:
        seeded = running.portal.call(_seed, running.client, running.db, canary)
        rows = running.portal.call(_dump, running.db)
    platform, admin, ids, keys, revoked_key = seeded
    forms = [form for key in [*keys, revoked_key] for form in (key, key[17:49])]
    agent = Actor(uuid.UUID(ids["p"]), uuid.UUID(ids["t"]), keys[2])
    return Seed(rows, platform, admin, ids, canary, revoked_key, [canary, *forms], agent)


@contextmanager
def fuzz_world(settings: Settings, seed: Seed) -> Iterator[FuzzWorld]:
    """A fresh app on ``settings.database_url`` holding exactly the seeded rows."""
    with _running_app(settings) as running:
        running.portal.call(_restore, running.db, seed.rows)
        yield FuzzWorld(running.portal, running.client, seed)


async def _api(
    client: httpx2.AsyncClient,
    actor: Actor,
    method: str,
    url: str,
    body: dict[str, Any] | None = None,
    *,
    expect: int = 201,
) -> Any:
    response = await client.request(method, url, json=body, headers=actor.headers)
    assert response.status_code == expect, (method, url, response.status_code, response.text)
    return response.json() if response.content else None


async def _seed(
    client: httpx2.AsyncClient, db: Database, canary: str
) -> tuple[Actor, Actor, dict[str, str], list[str], str]:
    platform = await make_platform_admin(db)
    tenant = await make_tenant(db, slug="fuzz-tenant")
    admin = await make_principal(db, tenant.id, name="fuzz-admin")
    t = str(tenant.id)
    platform_key = (await _api(client, platform, "POST", "/platform/keys", {}))["data"]
    agent = {"kind": "agent", "name": "fuzz-agent", "role": "agent"}
    p = (await _api(client, admin, "POST", f"/tenants/{t}/principals", agent))["data"]["id"]
    keys = f"/tenants/{t}/principals/{p}/keys"
    key = (await _api(client, admin, "POST", keys, {}))["data"]
    revoked = (await _api(client, admin, "POST", keys, {}))["data"]
    await _api(client, admin, "DELETE", f"{keys}/{revoked['id']}", expect=204)
    grant = {
        "principal_id": p,
        "resource": f"tool:{SERVER_HANDLE}.*",
        "action": "call",
        "effect": "allow",
    }
    g = (await _api(client, admin, "POST", f"/tenants/{t}/grants", grant))["data"]["id"]
    credential = {
        "name": "fuzz-credential",
        "type": "api_key",
        "secret": canary,
        "api_base_url": CREDENTIAL_ORIGIN,
    }
    c = (await _api(client, admin, "POST", f"/tenants/{t}/credentials", credential))["data"]["id"]
    server_id = await make_server(db, tenant.id, SERVER_HANDLE, f"{CREDENTIAL_ORIGIN}/mcp")
    server = f"/tenants/{t}/servers/{SERVER_HANDLE}"
    await _api(client, admin, "PATCH", server, {"credential_id": c}, expect=200)
    await make_catalog(db, tenant.id, server_id, [tool("alpha")], version=1)
    changed = [tool("alpha", description="changed"), tool("beta")]
    await make_catalog(db, tenant.id, server_id, changed, version=2)
    entry = {"server": SERVER_HANDLE, "catalog_version": 1, "allow_without_ask": ["alpha"]}
    deployment = {"agent_id": p, "entries": [entry]}
    d = (await _api(client, admin, "POST", f"/tenants/{t}/deployments", deployment))["data"]["id"]
    bundle = await client.get(f"/tenants/{t}/deployments/{d}/bundle", headers=admin.headers)
    a = await _seed_approval(db, tenant.id, uuid.UUID(d), uuid.UUID(p))
    page = await _api(client, admin, "GET", f"/tenants/{t}/principals?limit=1", expect=200)
    authorization = await make_authorization(db, tenant.id, admin.principal_id, server_id)
    ids = {
        "t": t,
        "slug": tenant.slug,
        "p": p,
        "k": key["id"],
        "pk": platform_key["id"],
        "g": g,
        "c": c,
        "handle": SERVER_HANDLE,
        "d": d,
        "a": str(a),
        "etag": bundle.headers["etag"],
        "cursor": page["next_cursor"],
        "o": str(authorization),
    }
    seeded_keys = [platform.key, admin.key, key["key"], platform_key["key"]]
    return platform, admin, ids, seeded_keys, revoked["key"]


async def _seed_approval(
    db: Database, tenant_id: uuid.UUID, deployment_id: uuid.UUID, agent_id: uuid.UUID
) -> uuid.UUID:
    """A pending approval of the agent's call of ``alpha`` (what an ``ask`` call leaves)."""
    from hub.approvals.service import ApprovalContext, ApprovalRequest, Binding, pending_for
    from hub.core.crypto import Keyring
    from hub.core.tenancy import system_scope

    keyring = Keyring.from_settings(make_settings())
    ctx = ApprovalContext(keyring=keyring, ttl_s=86_400, use_s=600, wait_s=0)
    binding = Binding(deployment_id, agent_id, f"tool:{SERVER_HANDLE}.alpha", "0" * 64, "1" * 64)
    request = ApprovalRequest(binding, SERVER_HANDLE, "alpha", f"{SERVER_HANDLE}__alpha", {}, 1)
    scope = system_scope(tenant_id, reason="fuzz seed")
    return (await pending_for(db, ctx, scope, request)).id


async def _make_database(url: str) -> Database:
    return Database.from_url(url, pool_size=2)


async def _dump(db: Database) -> Rows:
    rows: Rows = {}
    async with as_owner(db.engine) as owner, owner.connect() as conn:
        for table in Base.metadata.sorted_tables:
            result = await conn.execute(select(table))
            rows[table.name] = [dict(row) for row in result.mappings()]
    return rows


async def _restore(db: Database, rows: Rows) -> None:
    async with as_owner(db.engine) as owner, owner.begin() as conn:
        for table in Base.metadata.sorted_tables:
            if rows.get(table.name):
                await conn.execute(insert(table), rows[table.name])


async def _cleanup(db: Database, fetcher: Fetcher) -> None:
    try:
        await truncate_all(db.engine)
    finally:
        await db.dispose()
        await fetcher.aclose()
