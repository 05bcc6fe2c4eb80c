"""A credential named in a body, or used by a server, is authorised like one in a path, and its
secret never follows a moved pin (DESIGN §8 "Objects named in a body"; SECURITY §7.43, §7.44).

A principal allowed ``credential:*`` (every action) but denied ``credential:<c>`` : ``use`` is
refused — and the upstream sees no request at all — when discovery, a server registration or
update, a snapshot, or a deployment names ``c``; moving ``api_base_url`` needs a new secret.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import httpx2
import pytest

from hub.core.db import Database
from hub.core.settings import Settings
from hub.models import Grant
from tests.conftest import make_settings
from tests.peers.fixtures import HandmadePeerStarter, handmade_peer
from tests.peers.handmade import HandmadePeer
from tests.support.databases import owner_session
from tests.support.factories import Actor, make_principal, scope_of
from tests.support.stories import TenantAdmin, make_tenant_admin

__all__ = ["handmade_peer"]

SECRET = "use-test-secret-0123456789"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, allow_loopback=True, discovery_timeout_s=10)


@dataclass
class World:
    setup: TenantAdmin
    peer: HandmadePeer
    credential: str
    denied: Actor  # credential:* * allow, credential:<c> use deny, and what deploying needs

    @property
    def origin(self) -> str:
        return self.peer.url.rsplit("/", 1)[0]


async def _grants(
    db: Database, tenant: uuid.UUID, principal: uuid.UUID, *rows: tuple[str, str, str]
) -> None:
    async with owner_session(db) as session:
        for resource, action, effect in rows:
            session.add(
                Grant(
                    id=uuid.uuid4(),
                    tenant_id=scope_of(tenant).value,
                    principal_id=principal,
                    resource=resource,
                    action=action,
                    effect=effect,
                    conditions={},
                )
            )


@pytest.fixture
async def world(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> World:
    setup = await make_tenant_admin(database)
    peer = await handmade_peer(era="modern")
    r = await client.post(
        setup.url("credentials"),
        json={
            "name": "peer",
            "type": "api_key",
            "secret": SECRET,
            "api_base_url": peer.url.rsplit("/", 1)[0],
        },
        headers=setup.admin.headers,
    )
    assert r.status_code == 201, r.text
    credential = r.json()["data"]["id"]
    denied = await make_principal(database, setup.tenant_id, role="deployer", name="deployer")
    await _grants(
        database,
        setup.tenant_id,
        denied.principal_id,
        ("credential:*", "write", "allow"),
        (f"credential:{credential}", "use", "deny"),
    )
    return World(setup, peer, credential, denied)


def _refused(r: httpx2.Response, w: World) -> None:
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert (error["resource"], error["action"]) == (f"credential:{w.credential}", "use")
    assert w.peer.requests == []  # nothing left the hub: no Authorization, no request at all


async def test_discover_naming_a_denied_credential_is_403(
    client: httpx2.AsyncClient, world: World
) -> None:
    r = await client.post(
        world.setup.url("mcp", "discover"),
        json={"url": world.peer.url, "credential_id": world.credential},
        headers=world.denied.headers,
    )
    _refused(r, world)


async def test_server_create_naming_a_denied_credential_is_403(
    client: httpx2.AsyncClient, world: World
) -> None:
    r = await client.post(
        world.setup.url("servers"),
        json={"handle": "peer", "url": world.peer.url, "credential_id": world.credential},
        headers=world.denied.headers,
    )
    _refused(r, world)


async def _admin_server(
    client: httpx2.AsyncClient, w: World, handle: str, credential: bool
) -> None:
    body: dict[str, object] = {"handle": handle, "url": w.peer.url}
    if credential:
        body["credential_id"] = w.credential
    r = await client.post(w.setup.url("servers"), json=body, headers=w.setup.admin.headers)
    assert r.status_code == 201, r.text


async def test_server_update_naming_a_denied_credential_is_403(
    client: httpx2.AsyncClient, world: World
) -> None:
    await _admin_server(client, world, "plain", credential=False)
    r = await client.patch(
        world.setup.url("servers", "plain"),
        json={"credential_id": world.credential},
        headers=world.denied.headers,
    )
    _refused(r, world)


async def test_snapshot_of_a_server_with_a_denied_credential_is_403(
    client: httpx2.AsyncClient, world: World
) -> None:
    await _admin_server(client, world, "guarded", credential=True)
    r = await client.post(
        world.setup.url("servers", "guarded", "catalogs"), headers=world.denied.headers
    )
    _refused(r, world)


async def test_deployment_naming_a_server_with_a_denied_credential_is_403(
    client: httpx2.AsyncClient, world: World
) -> None:
    await _admin_server(client, world, "guarded", credential=True)
    snap = await client.post(
        world.setup.url("servers", "guarded", "catalogs"), headers=world.setup.admin.headers
    )
    assert snap.status_code == 201, snap.text
    world.peer.requests.clear()
    agent = await client.post(
        world.setup.url("principals"),
        json={"kind": "agent", "name": "a"},
        headers=world.setup.admin.headers,
    )
    r = await client.post(
        world.setup.url("deployments"),
        json={
            "agent_id": agent.json()["data"]["id"],
            "entries": [{"server": "guarded", "catalog_version": 1}],
        },
        headers=world.denied.headers,
    )
    _refused(r, world)


async def test_deployment_naming_an_agent_needs_principal_read(
    client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    agent = await client.post(
        world.setup.url("principals"),
        json={"kind": "agent", "name": "hidden"},
        headers=world.setup.admin.headers,
    )
    agent_id = agent.json()["data"]["id"]
    await _grants(
        database,
        world.setup.tenant_id,
        world.denied.principal_id,
        (f"principal:{agent_id}", "read", "deny"),
    )
    r = await client.post(
        world.setup.url("deployments"),
        json={"agent_id": agent_id, "entries": []},
        headers=world.denied.headers,
    )
    assert r.status_code == 403, r.text
    assert r.json()["error"]["resource"] == f"principal:{agent_id}"


async def test_deployer_template_can_use_credentials_and_deploy(
    client: httpx2.AsyncClient, database: Database, world: World
) -> None:
    """The deployer role holds ``credential:*`` use and ``principal:*`` read (DESIGN §8)."""
    deployer = await make_principal(database, world.setup.tenant_id, role="deployer", name="d2")
    r = await client.post(
        world.setup.url("servers"),
        json={"handle": "ok", "url": world.peer.url, "credential_id": world.credential},
        headers=deployer.headers,
    )
    assert r.status_code == 201, r.text
    snap = await client.post(world.setup.url("servers", "ok", "catalogs"), headers=deployer.headers)
    assert snap.status_code == 201, snap.text
    agent = await client.post(
        world.setup.url("principals"),
        json={"kind": "agent", "name": "a"},
        headers=world.setup.admin.headers,
    )
    r = await client.post(
        world.setup.url("deployments"),
        json={
            "agent_id": agent.json()["data"]["id"],
            "entries": [{"server": "ok", "catalog_version": 1}],
        },
        headers=deployer.headers,
    )
    assert r.status_code == 201, r.text


# --- no retargeting ------------------------------------------------------------------------


async def test_moving_api_base_url_without_a_new_secret_is_400(
    client: httpx2.AsyncClient, world: World
) -> None:
    r = await client.patch(
        world.setup.url("credentials", world.credential),
        json={"api_base_url": "https://attacker.example.com"},
        headers=world.setup.admin.headers,
    )
    assert r.status_code == 400, r.text
    assert SECRET not in r.text
    got = await client.get(
        world.setup.url("credentials", world.credential), headers=world.setup.admin.headers
    )
    assert got.json()["data"]["api_base_url"] == world.origin


async def test_moving_api_base_url_with_a_new_secret_is_allowed(
    client: httpx2.AsyncClient, world: World
) -> None:
    r = await client.patch(
        world.setup.url("credentials", world.credential),
        json={"api_base_url": "https://elsewhere.example.com", "secret": "a-new-secret-0123456789"},
        headers=world.setup.admin.headers,
    )
    assert r.status_code == 200, r.text
    assert r.json()["data"]["api_base_url"] == "https://elsewhere.example.com"


async def test_same_api_base_url_needs_no_new_secret(
    client: httpx2.AsyncClient, world: World
) -> None:
    r = await client.patch(
        world.setup.url("credentials", world.credential),
        json={"api_base_url": world.origin, "name": "renamed"},
        headers=world.setup.admin.headers,
    )
    assert r.status_code == 200, r.text


async def test_old_secret_never_reaches_a_moved_pin(
    client: httpx2.AsyncClient, world: World, handmade_peer: HandmadePeerStarter
) -> None:
    """Tried end to end: the refused PATCH leaves the pin, so discovery at the other origin is
    refused before any I/O and the other peer never sees the secret."""
    other = await handmade_peer(era="modern")
    moved = await client.patch(
        world.setup.url("credentials", world.credential),
        json={"api_base_url": other.url.rsplit("/", 1)[0]},
        headers=world.setup.admin.headers,
    )
    assert moved.status_code == 400
    r = await client.post(
        world.setup.url("mcp", "discover"),
        json={"url": other.url, "credential_id": world.credential},
        headers=world.setup.admin.headers,
    )
    assert r.status_code == 422
    assert r.json()["error"]["reason"] == "origin_refused"
    assert other.requests == []
