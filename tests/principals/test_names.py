"""Names of principals, credentials and deployments read as what they are (``hub.core.names``):
blank, padded, path-step, invisible, reordering or UUID-shaped names are a 400 naming what is
refused, on create and on rename; ordinary names in any script are kept as sent."""

from __future__ import annotations

import uuid

import httpx2
import pytest

from hub.core.db import Database
from hub.core.names import name_problem
from tests.support.factories import Actor, make_principal, make_tenant

BAD = [
    pytest.param(".", "'.' or '..'", id="dot"),
    pytest.param("..", "'.' or '..'", id="dotdot"),
    pytest.param("   ", "empty or only blanks", id="blanks"),
    pytest.param("\t", "empty or only blanks", id="tab-only"),
    pytest.param("ops\tteam", "\\u0009", id="tab"),
    pytest.param("admin\u202egnp.exe", "\\u202e", id="rtl-override"),
    pytest.param("ad\u200bmin", "\\u200b", id="zero-width"),
    pytest.param("admin\ufe0f", "\\ufe0f", id="variation-selector"),
    pytest.param("ops\u00a0team", "\\u00a0", id="no-break-space"),
    pytest.param(" ops", "start or end with a space", id="leading-space"),
    pytest.param("ops ", "start or end with a space", id="trailing-space"),
    pytest.param(str(uuid.uuid4()), "look like a UUID", id="uuid"),
    pytest.param(uuid.uuid4().hex.upper(), "look like a UUID", id="uuid-other-spelling"),
]

GOOD = ["ops", "ops team", "Zoë's bot", "运维", "a.b", "...", "bot 🤖"]


@pytest.mark.parametrize(("name", "words"), BAD)
def test_bad_name_has_a_problem_saying_what(name: str, words: str) -> None:
    problem = name_problem(name)
    assert problem is not None
    assert words in problem


@pytest.mark.parametrize("name", GOOD)
def test_ordinary_names_have_no_problem(name: str) -> None:
    assert name_problem(name) is None


@pytest.fixture
async def admin(database: Database) -> Actor:
    tenant = await make_tenant(database)
    return await make_principal(database, tenant.id)


def _refused(response: httpx2.Response, words: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["request_id"]
    assert any(words in d["msg"] and d["loc"][-1] == "name" for d in error["details"]), error


@pytest.mark.parametrize(("name", "words"), BAD)
async def test_principal_create_refuses_a_bad_name(
    client: httpx2.AsyncClient, admin: Actor, name: str, words: str
) -> None:
    response = await client.post(
        f"/tenants/{admin.tenant_id}/principals",
        json={"kind": "agent", "name": name, "role": "agent"},
        headers=admin.headers,
    )
    _refused(response, words)


async def test_principal_named_by_anothers_id_is_refused(
    client: httpx2.AsyncClient, admin: Actor
) -> None:
    # the walk's case: a principal named by another's id, which `hub principals show` then
    # read as that other principal
    response = await client.post(
        f"/tenants/{admin.tenant_id}/principals",
        json={"kind": "user", "name": str(admin.principal_id)},
        headers=admin.headers,
    )
    _refused(response, "look like a UUID")


async def test_principal_rename_refuses_a_bad_name_and_keeps_ordinary_ones(
    client: httpx2.AsyncClient, admin: Actor
) -> None:
    url = f"/tenants/{admin.tenant_id}/principals/{admin.principal_id}"
    _refused(await client.patch(url, json={"name": ".."}, headers=admin.headers), "'..'")
    for name in GOOD:
        renamed = await client.patch(url, json={"name": name}, headers=admin.headers)
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["data"]["name"] == name


async def test_credential_names_are_checked(client: httpx2.AsyncClient, admin: Actor) -> None:
    url = f"/tenants/{admin.tenant_id}/credentials"
    body = {"type": "secret", "secret": "s3cret-0123456789"}
    made = await client.post(url, json={**body, "name": "gh\u202e"}, headers=admin.headers)
    _refused(made, "\\u202e")
    made = await client.post(url, json={**body, "name": "gh token"}, headers=admin.headers)
    assert made.status_code == 201, made.text
    item = f"{url}/{made.json()['data']['id']}"
    _refused(await client.patch(item, json={"name": " gh"}, headers=admin.headers), "space")


async def test_deployment_names_are_checked(
    client: httpx2.AsyncClient, database: Database, admin: Actor
) -> None:
    assert admin.tenant_id is not None
    agent = await make_principal(database, admin.tenant_id, role="agent", kind="agent")
    url = f"/tenants/{admin.tenant_id}/deployments"
    body = {"agent_id": str(agent.principal_id), "entries": []}
    made = await client.post(url, json={**body, "name": "."}, headers=admin.headers)
    _refused(made, "'.'")
    made = await client.post(url, json={**body, "name": "support bot"}, headers=admin.headers)
    assert made.status_code == 201, made.text
    item = f"{url}/{made.json()['data']['id']}"
    renamed = await client.patch(item, json={"name": str(uuid.uuid4())}, headers=admin.headers)
    _refused(renamed, "UUID")
