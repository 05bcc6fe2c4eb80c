"""Who may call the agents' endpoint (DESIGN §10.4, §15): the deployment's agent with a valid
key (401 ``40100`` without one; 403 for anyone else, admins included; 404 for another tenant or
an unknown deployment, the tenant named by id or slug), from no browser Origin or an allowed one
(403 otherwise).
"""

from __future__ import annotations

import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.endpoint_support import deploy_echo_and_region, post, rpc_message
from tests.gateway.support import Deployed, deploy
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.factories import make_principal


@pytest.fixture
async def deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    return await deploy_echo_and_region(client, database, handmade_peer)


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer hub_garbage"}])
async def test_no_valid_key_is_401_with_json_rpc_40100(
    client: httpx2.AsyncClient, deployed: Deployed, headers: dict[str, str]
) -> None:
    r = await client.post(deployed.url, json=rpc_message("tools/list"), headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["code"] == 40100
    assert r.json()["error"]["data"] == {"class": "unauthenticated"}


async def test_a_repeated_authorization_header_is_401_even_with_the_agents_key_first(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    """The agents' endpoint reads the key as every route does: two ``Authorization`` headers
    (or two ``x-api-key``) are ambiguous and refused, whichever comes first."""
    agent = deployed.headers["authorization"]
    for name, first, second in (
        ("authorization", agent, "Bearer hub_garbage"),
        ("authorization", agent, agent),
        ("x-api-key", agent.removeprefix("Bearer "), "garbage"),
    ):
        r = await client.post(
            deployed.url, json=rpc_message("tools/list"), headers=[(name, first), (name, second)]
        )
        assert r.status_code == 401, r.text
        assert r.json()["error"]["code"] == 40100


async def test_someone_who_is_not_the_agent_is_403_admins_included(
    client: httpx2.AsyncClient, database: Database, deployed: Deployed
) -> None:
    other_agent = await make_principal(
        database, deployed.setup.tenant_id, role="agent", kind="agent"
    )
    for headers in (deployed.setup.admin.headers, other_agent.headers):
        r = await client.post(deployed.url, json=rpc_message("tools/list"), headers=headers)
        assert r.status_code == 403
        assert r.json()["error"]["code"] == 40300


async def test_another_tenant_or_an_unknown_deployment_is_404(
    client: httpx2.AsyncClient, database: Database, deployed: Deployed
) -> None:
    other = await deploy(client, database, [])
    elsewhere = deployed.url.replace(str(deployed.setup.tenant_id), str(other.setup.tenant_id))
    unknown = deployed.url.replace(deployed.deployment_id, "00000000-0000-4000-8000-000000000000")
    for url, headers in (
        (deployed.url, other.headers),
        (elsewhere, deployed.headers),
        (unknown, deployed.headers),
    ):
        r = await client.post(url, json=rpc_message("tools/list"), headers=headers)
        assert r.status_code == 404, r.text
        assert r.json()["error"]["data"]["class"] == "not_found"


async def _slug(client: httpx2.AsyncClient, deployed: Deployed) -> str:
    me = await client.get("/whoami", headers=deployed.headers)
    return str(me.json()["data"]["tenant_slug"])


async def test_the_tenant_may_be_named_by_its_slug(
    client: httpx2.AsyncClient, database: Database, deployed: Deployed
) -> None:
    """``{t}`` is an id or a slug on every tenant route (DESIGN §14), this one included: the
    README's agent calls ``/tenants/acme/deployments/{d}/mcp``."""
    tenant = str(deployed.setup.tenant_id)
    by_slug = deployed.url.replace(tenant, await _slug(client, deployed))
    listed = await client.post(by_slug, json=rpc_message("tools/list"), headers=deployed.headers)
    assert listed.status_code == 200, listed.text
    by_id = await post(client, deployed, rpc_message("tools/list"))
    assert listed.json() == by_id.json()
    call = rpc_message("tools/call", {"name": "up__echo", "arguments": {"text": "by slug"}})
    called = await client.post(by_slug, json=call, headers=deployed.headers)
    assert called.status_code == 200, called.text
    assert called.json()["result"]["structuredContent"] == {"text": "by slug"}, called.text


async def test_another_tenants_slug_an_unknown_slug_or_a_malformed_one_is_404(
    client: httpx2.AsyncClient, database: Database, deployed: Deployed
) -> None:
    other = await deploy(client, database, [])
    tenant = str(deployed.setup.tenant_id)
    for t in (await _slug(client, other), "no-such-tenant", "Not_A_Slug"):
        r = await client.post(
            deployed.url.replace(tenant, t),
            json=rpc_message("tools/list"),
            headers=deployed.headers,
        )
        assert r.status_code == 404, (t, r.text)
        assert r.json()["error"]["data"]["class"] == "not_found"


async def test_a_browser_origin_not_allowed_is_403(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await post(client, deployed, rpc_message("tools/list"), origin="http://evil.example")
    assert r.status_code == 403


CONSOLE = "http://console.example"


@pytest.mark.parametrize("settings", [{"allowed_origins": [CONSOLE]}], indirect=True)
async def test_an_allowed_origin_is_served_and_any_other_is_403(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    """``HUB_ALLOWED_ORIGINS`` names the browser origins served: exactly those (no prefix, no
    other scheme or port), and a request with no ``Origin`` (not a browser) as before."""
    for origin in (CONSOLE, None):
        headers = {} if origin is None else {"origin": origin}
        served = await post(client, deployed, rpc_message("tools/list"), **headers)
        assert served.status_code == 200, (origin, served.text)
        tools = {t["name"] for t in served.json()["result"]["tools"]}
        assert tools == {"up__echo", "up__region"}, origin
    for origin in (
        "http://evil.example",
        "https://console.example",
        "http://console.example:8080",
        "http://console.example.evil.example",
        "null",
    ):
        refused = await post(client, deployed, rpc_message("tools/list"), origin=origin)
        assert refused.status_code == 403, (origin, refused.text)
        assert refused.json()["error"]["code"] == 40300, origin
