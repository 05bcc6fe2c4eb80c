"""``POST /tenants/{t}/credentials/{c}/lease``: only the deployment's sidecar, only its direct-mode
credentials, at most 300 s, with the egress policy; every refusal audited as denied."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta

import httpx2
import pytest

from hub.core import clock
from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.direct import DirectDeployed, deploy_direct, make_service
from tests.sidecar.support import CANARY
from tests.support.factories import Actor, make_principal, make_tenant
from tests.support.stories import audit_events

OTHER = "other-canary-secret-77aa66bb55cc"


@pytest.fixture
async def world(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> DirectDeployed:
    peer = await sdk_peer("stateless-json")
    relay_peer = await sdk_peer("stateless-json")
    return await deploy_direct(
        client,
        database,
        [Upstream("docs", peer.url, secret=CANARY), Upstream("wiki", relay_peer.url, secret=OTHER)],
        {"docs"},
    )


def _lease_url(world: DirectDeployed, credential: str) -> str:
    return world.setup.url("credentials", credential, "lease")


async def _lease(
    client: httpx2.AsyncClient, world: DirectDeployed, credential: str, who: Actor
) -> httpx2.Response:
    return await client.post(
        _lease_url(world, credential),
        json={"deployment_id": world.deployed.deployment_id},
        headers=who.headers,
    )


async def test_the_sidecar_leases_its_direct_credential(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    credential = world.deployed.credentials["docs"]
    leased = await _lease(client, world, credential, world.sidecar)
    assert leased.status_code == 200, leased.text
    data = leased.json()["data"]
    assert data["secret"] == CANARY
    assert data["origin"].startswith("http://127.0.0.1:")
    assert data["egress"]["allow_loopback"] is True
    expires = datetime.fromisoformat(data["expires_at"])
    assert timedelta(0) < expires - clock.now() <= timedelta(seconds=300)
    rows = await audit_events(database, action="credential.lease", outcome="success")
    assert len(rows) == 1
    assert rows[0].details["fingerprint"] == data["fingerprint"]
    # the pepper-keyed fingerprint the credential's own audit rows carry, never a bare hash
    [created] = [
        r
        for r in await audit_events(database, action="credential.create")
        if r.resource.endswith(credential)
    ]
    assert data["fingerprint"] == created.details["secret_fp"]
    assert data["fingerprint"] != hashlib.sha256(CANARY.encode()).hexdigest()[:16]
    assert rows[0].actor_id == world.sidecar.principal_id
    assert CANARY not in str(rows[0].details)


async def test_the_bundle_names_the_url_and_era_of_the_direct_entry_only(
    client: httpx2.AsyncClient, world: DirectDeployed
) -> None:
    """The era is the server row's (what the hub last reached it in), so the sidecar's first
    call does not probe for it."""
    deployed = world.deployed
    row = await client.get(
        deployed.setup.url("servers", "docs"), headers=deployed.setup.admin.headers
    )
    assert row.json()["data"]["era"] in ("modern", "legacy")
    bundle = await client.get(
        deployed.setup.url("deployments", deployed.deployment_id, "bundle"),
        headers=deployed.agent.headers,
    )
    servers = {s["handle"]: s for s in bundle.json()["data"]["servers"]}
    assert servers["docs"]["mode"] == "direct"
    assert servers["docs"]["url"].startswith("http://127.0.0.1:")
    assert servers["docs"]["era"] == row.json()["data"]["era"]
    assert servers["wiki"]["mode"] == "relay"
    assert servers["wiki"]["url"] is None
    assert servers["wiki"]["era"] is None
    assert CANARY not in bundle.text


async def _refused(
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    credential: str,
    who: Actor,
    status: int,
    reason: str | None = None,
) -> None:
    before = len(await audit_events(database, action="credential.lease"))
    response = await _lease(client, world, credential, who)
    assert response.status_code == status, response.text
    assert CANARY not in response.text
    assert OTHER not in response.text
    if reason is not None:
        assert response.json()["error"]["reason"] == reason, response.text
    rows = await audit_events(database, action="credential.lease")
    assert len(rows) == before + 1
    assert rows[-1].outcome == "denied"  # a 404 refusal of a secret too
    assert rows[-1].actor_id == who.principal_id


async def test_the_agents_own_key_is_refused(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    credential = world.deployed.credentials["docs"]
    await _refused(client, database, world, credential, world.deployed.agent, 403, "not_sidecar")


async def test_another_service_principal_is_refused_even_with_the_use_grant(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    from tests.sidecar.direct import grant

    other = await make_service(client, world.deployed, "another-sidecar")
    credential = world.deployed.credentials["docs"]
    await grant(client, world.deployed, other, f"credential:{credential}", "use")
    await _refused(client, database, world, credential, other, 403, "not_sidecar")


async def test_another_agent_is_refused(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    other = await make_principal(database, world.setup.tenant_id, role="agent", kind="agent")
    credential = world.deployed.credentials["docs"]
    await _refused(client, database, world, credential, other, 403, "not_sidecar")


async def test_a_relay_mode_entrys_credential_is_refused(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    from tests.sidecar.direct import grant

    credential = world.deployed.credentials["wiki"]
    await grant(client, world.deployed, world.sidecar, f"credential:{credential}", "use")
    await _refused(client, database, world, credential, world.sidecar, 403, "not_direct")


async def test_a_credential_not_in_the_deployment_is_refused(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    made = await client.post(
        world.setup.url("credentials"),
        json={
            "name": "unrelated",
            "type": "api_key",
            "secret": "unrelated-secret-0123456789",
            "api_base_url": "https://api.example.com",
        },
        headers=world.setup.admin.headers,
    )
    credential = made.json()["data"]["id"]
    await _refused(client, database, world, credential, world.sidecar, 403, "not_in_deployment")


async def test_no_use_grant_is_refused(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    world = await deploy_direct(
        client, database, [Upstream("docs", peer.url, secret=CANARY)], {"docs"}, use_grant=False
    )
    credential = world.deployed.credentials["docs"]
    await _refused(client, database, world, credential, world.sidecar, 403)


async def test_another_tenant_is_404(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    tenant = await make_tenant(database)
    stranger = await make_principal(database, tenant.id, role="tenant_admin", kind="service")
    credential = world.deployed.credentials["docs"]
    response = await _lease(client, world, credential, stranger)
    assert response.status_code == 404
    # its own tenant's path with the other tenant's deployment: 404 too
    own = await client.post(
        f"/tenants/{tenant.id}/credentials/{credential}/lease",
        json={"deployment_id": world.deployed.deployment_id},
        headers=stranger.headers,
    )
    assert own.status_code == 404
    rows = await audit_events(database, action="credential.lease", actor_id=stranger.principal_id)
    assert [r.outcome for r in rows] == ["denied", "denied"]
    assert uuid.UUID(str(rows[-1].tenant_id)) == tenant.id
