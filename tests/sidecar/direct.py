"""A deployment with a direct-mode entry and a sidecar service principal, made through the API."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy
from tests.support.factories import Actor
from tests.support.stories import TenantAdmin

__all__ = ["DirectDeployed", "deploy_direct", "grant", "make_service"]


@dataclass
class DirectDeployed:
    deployed: Deployed
    sidecar: Actor

    @property
    def setup(self) -> TenantAdmin:
        return self.deployed.setup


async def _ok(response: httpx2.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()["data"]


async def make_service(client: httpx2.AsyncClient, deployed: Deployed, name: str) -> Actor:
    setup = deployed.setup
    admin = setup.admin.headers
    row = await _ok(
        await client.post(
            setup.url("principals"), json={"kind": "service", "name": name}, headers=admin
        )
    )
    key = await _ok(
        await client.post(setup.url("principals", row["id"], "keys"), json={}, headers=admin)
    )
    return Actor(uuid.UUID(row["id"]), setup.tenant_id, key["key"])


async def grant(
    client: httpx2.AsyncClient,
    deployed: Deployed,
    principal: Actor,
    resource: str,
    action: str,
    effect: str = "allow",
) -> None:
    await _ok(
        await client.post(
            deployed.setup.url("grants"),
            json={
                "principal_id": str(principal.principal_id),
                "resource": resource,
                "action": action,
                "effect": effect,
            },
            headers=deployed.setup.admin.headers,
        )
    )


async def deploy_direct(
    client: httpx2.AsyncClient,
    database: Database,
    upstreams: list[Upstream],
    direct: set[str],
    *,
    use_grant: bool = True,
) -> DirectDeployed:
    """Deploy ``upstreams``; the handles in ``direct`` become direct-mode entries, and a service
    principal (granted ``credential:<c>`` use on their credentials) the deployment's sidecar."""
    deployed = await deploy(client, database, upstreams)
    sidecar = await make_service(client, deployed, "sidecar")
    if use_grant:
        for handle in direct:
            credential = deployed.credentials.get(handle)
            if credential is not None:
                await grant(client, deployed, sidecar, f"credential:{credential}", "use")
    url = deployed.setup.url("deployments", deployed.deployment_id)
    current = await _ok(await client.get(url, headers=deployed.setup.admin.headers), 200)
    entries = [
        {**e, "mode": "direct" if e["server"] in direct else "relay"} for e in current["entries"]
    ]
    await _ok(
        await client.patch(
            url,
            json={"sidecar_id": str(sidecar.principal_id), "entries": entries},
            headers=deployed.setup.admin.headers,
        ),
        200,
    )
    return DirectDeployed(deployed, sidecar)
