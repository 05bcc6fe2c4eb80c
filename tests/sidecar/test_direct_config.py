"""Who may make an entry direct, and what a direct entry needs (DESIGN §15)."""

from __future__ import annotations

import httpx2

from hub.core.db import Database
from tests.gateway.support import Upstream, deploy
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.direct import grant, make_service
from tests.support.factories import make_principal


async def test_direct_entries_need_a_sidecar_of_kind_service(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    deployed = await deploy(client, database, [Upstream("docs", peer.url, secret="s" * 20)])
    url = deployed.setup.url("deployments", deployed.deployment_id)
    admin = deployed.setup.admin.headers
    entries = (await client.get(url, headers=admin)).json()["data"]["entries"]
    direct = [{**e, "mode": "direct"} for e in entries]
    no_sidecar = await client.patch(url, json={"entries": direct}, headers=admin)
    assert no_sidecar.status_code == 400
    assert "sidecar_id" in no_sidecar.json()["error"]["message"]
    not_service = await client.patch(
        url, json={"sidecar_id": str(deployed.agent.principal_id), "entries": direct}, headers=admin
    )
    assert not_service.status_code == 400
    service = await make_service(client, deployed, "sidecar")
    made = await client.patch(
        url, json={"sidecar_id": str(service.principal_id), "entries": direct}, headers=admin
    )
    assert made.status_code == 200, made.text
    assert made.json()["data"]["sidecar_id"] == str(service.principal_id)
    assert made.json()["data"]["entries"][0]["mode"] == "direct"
    dropped = await client.patch(url, json={"sidecar_id": None}, headers=admin)
    assert dropped.status_code == 400  # a direct entry still needs it


async def test_only_a_holder_of_credential_use_may_make_an_entry_direct(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    deployed = await deploy(client, database, [Upstream("docs", peer.url, secret="s" * 20)])
    service = await make_service(client, deployed, "sidecar")
    url = deployed.setup.url("deployments", deployed.deployment_id)
    admin = deployed.setup.admin.headers
    entries = (await client.get(url, headers=admin)).json()["data"]["entries"]
    deployer = await make_principal(database, deployed.setup.tenant_id, role="deployer")
    await grant(client, deployed, deployer, f"principal:{service.principal_id}", "read")
    credential = deployed.credentials["docs"]
    await grant(client, deployed, deployer, f"credential:{credential}", "use", "deny")
    body = {
        "sidecar_id": str(service.principal_id),
        "entries": [{**e, "mode": "direct"} for e in entries],
    }
    refused = await client.patch(url, json=body, headers=deployer.headers)
    assert refused.status_code == 403, refused.text
    current = (await client.get(url, headers=admin)).json()["data"]
    assert current["entries"][0]["mode"] == "relay"
    assert current["sidecar_id"] is None


async def test_only_a_holder_of_credential_use_may_name_another_sidecar(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    """Re-pointing ``sidecar_id`` chooses who may lease a direct entry's secret: it needs the
    credential's use as making the entry direct does, even when no entries are sent."""
    peer = await sdk_peer("stateless-json")
    deployed = await deploy(client, database, [Upstream("docs", peer.url, secret="s" * 20)])
    first = await make_service(client, deployed, "sidecar")
    other = await make_service(client, deployed, "other-sidecar")
    url = deployed.setup.url("deployments", deployed.deployment_id)
    admin = deployed.setup.admin.headers
    entries = (await client.get(url, headers=admin)).json()["data"]["entries"]
    made = await client.patch(
        url,
        json={
            "sidecar_id": str(first.principal_id),
            "entries": [{**e, "mode": "direct"} for e in entries],
        },
        headers=admin,
    )
    assert made.status_code == 200, made.text
    deployer = await make_principal(database, deployed.setup.tenant_id, role="deployer")
    await grant(client, deployed, deployer, f"principal:{other.principal_id}", "read")
    credential = deployed.credentials["docs"]
    await grant(client, deployed, deployer, f"credential:{credential}", "use", "deny")
    refused = await client.patch(
        url, json={"sidecar_id": str(other.principal_id)}, headers=deployer.headers
    )
    assert refused.status_code == 403, refused.text
    current = (await client.get(url, headers=admin)).json()["data"]
    assert current["sidecar_id"] == str(first.principal_id)
    moved = await client.patch(url, json={"sidecar_id": str(other.principal_id)}, headers=admin)
    assert moved.status_code == 200, moved.text  # the tenant admin holds the use
