"""The hub's messages say what to change (issue 19's friction list, DESIGN §14).

Plain ``http`` names ``HUB_ALLOW_LOOPBACK``; an unknown resource kind lists the kinds; a body
sent without ``content-type: application/json`` is told so instead of pydantic's "valid
dictionary"; a 403 names the resource and the action that were refused.
"""

from __future__ import annotations

import httpx2
import pytest

from hub.core.db import Database
from hub.core.handlers import NO_BODY, NO_CONTENT_TYPE, NOT_JSON
from hub.egress.urls import LOOPBACK_HINT, PLAIN_HTTP
from tests.support.factories import make_principal
from tests.support.stories import make_tenant_admin


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:9/mcp", LOOPBACK_HINT),
        ("http://localhost:9/mcp", LOOPBACK_HINT),
        ("http://mcp.example.com/mcp", PLAIN_HTTP),
    ],
)
async def test_plain_http_names_hub_allow_loopback(
    client: httpx2.AsyncClient, database: Database, url: str, message: str
) -> None:
    setup = await make_tenant_admin(database)
    headers = setup.admin.headers
    for route, body in [
        ("mcp/discover", {"url": url}),
        ("servers", {"handle": "local", "url": url}),
    ]:
        response = await client.post(setup.url(route), json=body, headers=headers)
        assert response.status_code == 400, route
        assert response.json()["error"]["message"] == message
        assert "HUB_ALLOW_LOOPBACK" in message
    credential = {"name": "c", "type": "api_key", "secret": "x" * 20, "api_base_url": url}
    response = await client.post(setup.url("credentials"), json=credential, headers=headers)
    assert response.json()["error"]["message"] == f"api_base_url: {message}"


async def test_an_unknown_resource_kind_lists_the_kinds(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    body = {
        "principal_id": str(setup.admin.principal_id),
        "resource": "tol:github.*",
        "action": "call",
        "effect": "allow",
    }
    response = await client.post(setup.url("grants"), json=body, headers=setup.admin.headers)
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    for kind in ("principal", "credential", "server", "catalog", "deployment", "tool", "audit"):
        assert kind in message


@pytest.mark.parametrize(
    ("content", "headers", "message"),
    [
        (b'{"kind": "user", "name": "x"}', {}, NO_CONTENT_TYPE),
        (b"kind=user&name=x", {"content-type": "application/x-www-form-urlencoded"}, NOT_JSON),
        (b'{"kind": "user", "name": "x"}', {"content-type": "text/plain"}, NOT_JSON),
        (b"", {"content-type": "application/json"}, NO_BODY),
    ],
    ids=["no-content-type", "form", "text", "empty"],
)
async def test_a_body_that_is_not_json_gets_a_clear_message(
    client: httpx2.AsyncClient,
    database: Database,
    content: bytes,
    headers: dict[str, str],
    message: str,
) -> None:
    setup = await make_tenant_admin(database)
    response = await client.post(
        setup.url("principals"), content=content, headers={**setup.admin.headers, **headers}
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    assert "content-type: application/json" in message


async def test_a_json_body_of_the_wrong_shape_keeps_the_generic_message(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    response = await client.post(setup.url("principals"), json=[1], headers=setup.admin.headers)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "the request is invalid"


async def test_a_403_names_the_resource_and_action(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    nobody = await make_principal(database, setup.tenant_id, role=None, name="nobody")
    response = await client.get(setup.url("principals"), headers=nobody.headers)
    assert response.status_code == 403
    error = response.json()["error"]
    assert (error["resource"], error["action"]) == ("principal:*", "read")
    assert error["message"] == "not permitted: read on principal:*"
