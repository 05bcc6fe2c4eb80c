"""Deployments and bundles: validation, audit, ETags, the self rule, wire names."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from hub.deployments.wirenames import WIRE_NAME
from tests.deployments.conftest import Bundled, World, deploy_to_agent, grant_to
from tests.support.factories import (
    Actor,
    make_catalog,
    make_principal,
    make_server,
    make_tenant,
    tool,
)
from tests.support.queries import count_queries
from tests.support.stories import audit_events, make_tenant_admin


async def test_create_keeps_the_order_of_the_entries(bundled: Bundled) -> None:
    assert [e["server"] for e in bundled.deployment["entries"]] == ["linear", "github"]


async def test_bundle_has_a_quoted_etag(bundled: Bundled) -> None:
    assert bundled.etag.startswith('"')


async def test_bundle_names_its_deployment_and_tenant(bundled: Bundled) -> None:
    data = bundled.first.json()["data"]
    assert data["deployment_id"] == bundled.deployment["id"]
    assert data["tenant_id"] == str(bundled.world.team.tenant_id)


async def test_bundle_server_has_its_handle_and_no_credential(bundled: Bundled) -> None:
    linear = bundled.first.json()["data"]["servers"][0]
    assert linear["handle"] == "linear"
    assert linear["credential_id"] is None


async def test_bundle_tool_has_grant_key_wire_name_and_hash(bundled: Bundled) -> None:
    search = bundled.tools_of_linear()["search"]
    assert search["grant_key"] == "tool:linear.search"
    assert search["wire_name"] == "linear__search"
    assert len(search["sha256"]) == 64


async def test_tool_listed_in_allow_without_ask_is_allowed_without_ask(bundled: Bundled) -> None:
    assert bundled.tools_of_linear()["search"]["allow_without_ask"] is True


async def test_bundle_tool_carries_its_effective_effect_and_drift_state(bundled: Bundled) -> None:
    tools = bundled.tools_of_linear()
    assert tools["search"]["effect"] == "allow"
    assert tools["delete_issue"]["effect"] == "ask"  # destructiveHint: the ask ceiling
    assert tools["create.issue"]["effect"] == "ask"  # an ask grant
    assert {t["drifted"] for t in tools.values()} == {False}


async def test_bundle_omits_denied_tools(bundled: Bundled) -> None:
    # no grant on github: every one of its tools is deny, so none is in the bundle
    github = bundled.first.json()["data"]["servers"][1]
    assert github["handle"] == "github"
    assert github["tools"] == []


async def test_bundle_names_no_upstream_url_for_relay_entries(bundled: Bundled) -> None:
    for server in bundled.first.json()["data"]["servers"]:
        assert server["mode"] == "relay"
        assert server["url"] is None
    assert "api.github.com" not in bundled.first.text


async def test_bundle_carries_the_entry_options_and_grants_version(bundled: Bundled) -> None:
    data = bundled.first.json()["data"]
    assert isinstance(data["grants_version"], int)
    assert [(s["arguments"], s["tool_names"]) for s in data["servers"]] == [
        ("strict", "prefixed"),
        ("strict", "prefixed"),
    ]


async def test_a_grant_change_changes_the_etag(
    client: httpx2.AsyncClient, bundled: Bundled
) -> None:
    await grant_to(client, bundled.world.team, bundled.world.agent, "tool:github.*", "ask")
    changed = await client.get(
        bundled.url, headers={**bundled.world.agent.headers, "if-none-match": bundled.etag}
    )
    assert changed.status_code == 200
    github = changed.json()["data"]["servers"][1]
    assert {t["effect"] for t in github["tools"]} == {"ask"}


async def test_destructive_tool_is_never_allowed_without_ask(bundled: Bundled) -> None:
    assert bundled.tools_of_linear()["delete_issue"]["allow_without_ask"] is False


async def test_dotted_tool_name_gets_a_sanitised_wire_name(bundled: Bundled) -> None:
    wire_name = bundled.tools_of_linear()["create.issue"]["wire_name"]
    assert wire_name.startswith("linear__create_issue_")


async def test_bundle_holds_no_secret(bundled: Bundled) -> None:
    assert "secret" not in bundled.first.text


async def test_bundle_reads_the_same_twice(client: httpx2.AsyncClient, bundled: Bundled) -> None:
    again = await client.get(bundled.url, headers=bundled.world.agent.headers)
    assert again.headers["etag"] == bundled.etag
    assert again.json() == bundled.first.json()


async def test_the_agents_own_read_reads_neither_its_grants_nor_the_deployment_twice(
    client: httpx2.AsyncClient, database: Database, bundled: Bundled
) -> None:
    """A sidecar reads its bundle every sync: its key's read brought its ``grants_version``, so
    its compiled policy comes from the cache, and the rows the self rule read are the ones
    served.
    An admin's read of the same bundle is the same bundle, read as of now."""
    agent = bundled.world.agent.headers
    assert (await client.get(bundled.url, headers=agent)).status_code == 200  # warm the cache
    with count_queries(database) as queries:
        again = await client.get(bundled.url, headers=agent)
    assert again.headers["etag"] == bundled.etag
    assert not [q for q in queries if re.search(r"\bFROM grants\b", q)], queries
    deployments = [q for q in queries if re.search(r"\bFROM deployments\b", q)]
    # one read of the deployment: its view rows, which the self rule checks and the bundle is
    # built from
    assert len(deployments) == 1, queries
    assert "JOIN deployment_entries" in deployments[0], queries
    admin = await client.get(bundled.url, headers=bundled.world.admin.headers)
    assert (admin.headers["etag"], admin.json()) == (bundled.etag, bundled.first.json())


async def test_matching_etag_answers_304_with_no_body(
    client: httpx2.AsyncClient, bundled: Bundled
) -> None:
    cached = await client.get(
        bundled.url, headers={**bundled.world.agent.headers, "if-none-match": bundled.etag}
    )
    assert cached.status_code == 304
    assert cached.content == b""


async def test_changed_deployment_answers_200_with_a_new_etag(
    client: httpx2.AsyncClient, bundled: Bundled
) -> None:
    w = bundled.world
    patched = await client.patch(
        w.deployments(bundled.deployment["id"]),
        json={"entries": [{"server": "github", "catalog_version": 1}]},
        headers=w.admin.headers,
    )
    assert patched.status_code == 200
    changed = await client.get(
        bundled.url, headers={**w.agent.headers, "if-none-match": bundled.etag}
    )
    assert changed.status_code == 200
    assert changed.headers["etag"] != bundled.etag


# ---------------------------------------------------------------- who may read a bundle
@pytest.fixture
async def deployed(client: httpx2.AsyncClient, world: World) -> str:
    """The id of a deployment of ``github`` to ``world.agent``."""
    deployment = await deploy_to_agent(client, world, [{"server": "github", "catalog_version": 1}])
    made: str = deployment["id"]
    return made


async def test_agent_reads_its_own_bundle(
    client: httpx2.AsyncClient, world: World, deployed: str
) -> None:
    url = world.deployments(deployed, "bundle")
    assert (await client.get(url, headers=world.agent.headers)).status_code == 200


async def test_other_agent_reads_403(
    client: httpx2.AsyncClient, world: World, deployed: str
) -> None:
    url = world.deployments(deployed, "bundle")
    assert (await client.get(url, headers=world.other.headers)).status_code == 403


async def test_missing_bundle_reads_403_not_404(client: httpx2.AsyncClient, world: World) -> None:
    url = world.deployments(uuid.uuid4(), "bundle")
    assert (await client.get(url, headers=world.other.headers)).status_code == 403


async def test_agent_needs_a_grant_to_read_its_own_deployment(
    client: httpx2.AsyncClient, world: World, deployed: str
) -> None:
    # the deployment itself (not the bundle) needs a grant even for its own agent
    url = world.deployments(deployed)
    assert (await client.get(url, headers=world.agent.headers)).status_code == 403


# ---------------------------------------------------------------- listing one agent's deployments
async def _listed(
    client: httpx2.AsyncClient, w: World, who: Actor, **params: str
) -> httpx2.Response:
    return await client.get(w.deployments(), params=params, headers=who.headers)


def _ids(response: httpx2.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {d["id"] for d in response.json()["data"]}


async def test_agent_id_filters_the_list(
    client: httpx2.AsyncClient, world: World, deployed: str
) -> None:
    other = await client.post(
        world.deployments(),
        json={"agent_id": str(world.other.principal_id), "entries": [ENTRY]},
        headers=world.admin.headers,
    )
    assert other.status_code == 201, other.text
    mine = str(world.agent.principal_id)
    assert _ids(await _listed(client, world, world.admin, agent_id=mine)) == {deployed}
    everyone = _ids(await _listed(client, world, world.admin))
    assert everyone == {deployed, other.json()["data"]["id"]}


async def test_agent_id_of_no_agent_lists_none(
    client: httpx2.AsyncClient, world: World, deployed: str, stranger: Actor
) -> None:
    # an unknown id, or another tenant's agent, filters to nothing (as other list filters do)
    for agent_id in (uuid.uuid4(), stranger.principal_id):
        listed = await _listed(client, world, world.admin, agent_id=str(agent_id))
        assert _ids(listed) == set()


async def test_agent_id_not_a_uuid_is_400(client: httpx2.AsyncClient, world: World) -> None:
    listed = await _listed(client, world, world.admin, agent_id="not-a-uuid")
    assert listed.status_code == 400, listed.text


async def test_agent_lists_its_own_deployments_with_no_grant(
    client: httpx2.AsyncClient, world: World, deployed: str
) -> None:
    mine = str(world.agent.principal_id)
    assert _ids(await _listed(client, world, world.agent, agent_id=mine)) == {deployed}
    none = await _listed(client, world, world.other, agent_id=str(world.other.principal_id))
    assert _ids(none) == set()


async def test_agent_own_list_pages_with_a_cursor(
    client: httpx2.AsyncClient, world: World, deployed: str
) -> None:
    second = (await deploy_to_agent(client, world, [ENTRY]))["id"]
    mine = str(world.agent.principal_id)
    first = await _listed(client, world, world.agent, agent_id=mine, limit="1")
    assert first.status_code == 200, first.text
    cursor = first.json()["next_cursor"]
    assert cursor is not None
    rest = await _listed(client, world, world.agent, agent_id=mine, limit="1", cursor=cursor)
    assert _ids(first) | _ids(rest) == {deployed, second}


@pytest.mark.parametrize("named", ["other", "none"])
async def test_agent_listing_other_than_its_own_is_403(
    client: httpx2.AsyncClient, world: World, deployed: str, named: str
) -> None:
    params = {"agent_id": str(world.other.principal_id)} if named == "other" else {}
    listed = await _listed(client, world, world.agent, **params)
    assert listed.status_code == 403, listed.text


def test_agent_id_is_declared_in_openapi(app: FastAPI) -> None:
    operation = app.openapi()["paths"]["/tenants/{t}/deployments"]["get"]
    assert "agent_id" in {p["name"] for p in operation["parameters"]}


@pytest.fixture
async def stranger(database: Database) -> Actor:
    """An agent of another tenant."""
    other_tenant = await make_tenant(database)
    return await make_principal(database, other_tenant.id, role="agent", kind="agent")


async def test_other_tenant_reads_404(
    client: httpx2.AsyncClient, world: World, deployed: str, stranger: Actor
) -> None:
    # another tenant's bundle: 404 (the tenant in the path is not the caller's)
    url = world.deployments(deployed, "bundle")
    assert (await client.get(url, headers=stranger.headers)).status_code == 404


async def test_other_tenants_id_under_own_tenant_reads_403(
    client: httpx2.AsyncClient, deployed: str, stranger: Actor
) -> None:
    # its id under the caller's own tenant: 403 without a grant (checks run before lookups)
    url = f"/tenants/{stranger.tenant_id}/deployments/{deployed}/bundle"
    assert (await client.get(url, headers=stranger.headers)).status_code == 403


# ---------------------------------------------------------------- bad input
Body = Callable[[World], dict[str, object]]
ENTRY: dict[str, object] = {"server": "linear", "catalog_version": 1}


def _to_agent(*entries: dict[str, object]) -> Body:
    return lambda w: {"agent_id": str(w.agent.principal_id), "entries": list(entries)}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        pytest.param(_to_agent({**ENTRY, "catalog_version": 7}), 404, id="unknown-version"),
        pytest.param(_to_agent({**ENTRY, "server": "nope"}), 404, id="unknown-server"),
        pytest.param(_to_agent({**ENTRY, "server": "Bad.Handle"}), 400, id="bad-handle"),
        pytest.param(_to_agent({**ENTRY, "allow_without_ask": ["zz"]}), 400, id="unknown-tool"),
        pytest.param(_to_agent(ENTRY, ENTRY), 400, id="server-twice"),
        pytest.param(
            lambda w: {"agent_id": str(w.admin.principal_id), "entries": [ENTRY]},
            400,
            id="not-an-agent",
        ),
        pytest.param(
            lambda w: {"agent_id": str(uuid.uuid4()), "entries": [ENTRY]}, 404, id="no-agent"
        ),
        pytest.param(
            lambda w: {"agent_id": "not-a-uuid", "entries": [ENTRY]}, 400, id="agent-not-a-uuid"
        ),
        pytest.param(_to_agent({**ENTRY, "catalog_version": 0}), 400, id="version-zero"),
        # read as version 1 by a lax model: the schema says integer
        pytest.param(_to_agent({**ENTRY, "catalog_version": True}), 400, id="version-true"),
        pytest.param(_to_agent({**ENTRY, "catalog_version": "1"}), 400, id="version-text"),
        pytest.param(_to_agent({**ENTRY, "catalog_version": 1.0}), 400, id="version-float"),
    ],
)
async def test_bad_body_is_a_clear_4xx(
    client: httpx2.AsyncClient, world: World, body: Body, status: int
) -> None:
    response = await client.post(world.deployments(), json=body(world), headers=world.admin.headers)
    assert response.status_code < 500
    assert response.status_code == status, response.text


async def test_valid_body_is_201(client: httpx2.AsyncClient, world: World) -> None:
    body = _to_agent(ENTRY)(world)
    response = await client.post(world.deployments(), json=body, headers=world.admin.headers)
    assert response.status_code == 201, response.text


# ---------------------------------------------------------------- audit
async def _change(client: httpx2.AsyncClient, w: World, change: str) -> str:
    """Create a deployment of ``linear``, then apply ``change`` to it; the deployment's id."""
    deployment_id: str = (await deploy_to_agent(client, w, [ENTRY]))["id"]
    if change == "update":
        response = await client.patch(
            w.deployments(deployment_id), json={"name": "n"}, headers=w.admin.headers
        )
        assert response.status_code == 200, response.text
    elif change == "delete":
        response = await client.delete(w.deployments(deployment_id), headers=w.admin.headers)
        assert response.status_code == 204, response.text
    return deployment_id


@pytest.mark.parametrize(
    ("change", "actions"),
    [
        ("create", ["deployment.create"]),
        ("update", ["deployment.create", "deployment.update"]),
        ("delete", ["deployment.create", "deployment.delete"]),
    ],
)
async def test_change_is_audited(
    client: httpx2.AsyncClient, database: Database, world: World, change: str, actions: list[str]
) -> None:
    deployment_id = await _change(client, world, change)
    events = await audit_events(database, resource=f"deployment:{deployment_id}")
    assert sorted(e.action for e in events) == actions


# ---------------------------------------------------------------- wire names at scale
def _awkward(prefix: str) -> list[dict[str, object]]:
    names = [f"{prefix}.op.{i}" for i in range(96)]  # dots
    names += ["n" * 100, "a b", "a_b", "plain"]  # 100 chars; a collision after sanitising
    return [tool(n, description=f"does {n} with spaces") for n in names]


@pytest.fixture
async def awkward_bundle(
    client: httpx2.AsyncClient, database: Database
) -> tuple[httpx2.Response, httpx2.Response]:
    """Two reads of the bundle of two servers with 100 awkwardly named tools each."""
    team = await make_tenant_admin(database)
    agent = await make_principal(database, team.tenant_id, role="agent", kind="agent")
    for handle in ("alpha", "beta"):
        server_id = await make_server(
            database, team.tenant_id, handle, f"https://{handle}.example/mcp"
        )
        await make_catalog(database, team.tenant_id, server_id, _awkward(handle))
    await grant_to(client, team, agent, "tool:*", "allow")
    created = await client.post(
        team.url("deployments"),
        json={
            "agent_id": str(agent.principal_id),
            "entries": [
                {"server": "alpha", "catalog_version": 1},
                {"server": "beta", "catalog_version": 1},
            ],
        },
        headers=team.admin.headers,
    )
    url = team.url("deployments", created.json()["data"]["id"], "bundle")
    return (
        await client.get(url, headers=agent.headers),
        await client.get(url, headers=agent.headers),
    )


def _wire_names(bundle: httpx2.Response) -> list[str]:
    return [t["wire_name"] for s in bundle.json()["data"]["servers"] for t in s["tools"]]


async def test_two_hundred_awkward_tool_names_get_unique_valid_wire_names(
    awkward_bundle: tuple[httpx2.Response, httpx2.Response],
) -> None:
    names = _wire_names(awkward_bundle[0])
    assert len(names) == 200
    assert len(set(names)) == 200
    assert all(WIRE_NAME.match(n) for n in names)


async def test_two_hundred_awkward_tool_names_bundle_stably(
    awkward_bundle: tuple[httpx2.Response, httpx2.Response],
) -> None:
    first, second = awkward_bundle
    assert first.headers["etag"] == second.headers["etag"]
    assert _wire_names(first) == _wire_names(second)


# ---------------------------------------------------------------- conditional updates (If-Match)
async def test_an_update_based_on_a_stale_read_is_refused_and_changes_nothing(
    client: httpx2.AsyncClient, world: World
) -> None:
    """A read-change-write client (``hub deployments update``) names its read's ETag: a change
    someone made in between is never overwritten (RFC 9110 §13.1.1, strong comparison)."""
    made = await deploy_to_agent(
        client, world, [{"server": "linear", "catalog_version": 1}], name="bot"
    )
    url = world.deployments(made["id"])
    admin = world.admin.headers
    read = await client.get(url, headers=admin)
    tag = read.headers["etag"]
    assert tag == f'"{tag[1:-1]}"'  # a strong, quoted tag
    assert len(tag) == 34
    assert (await client.get(url, headers=admin)).headers["etag"] == tag  # stable while unchanged

    first = await client.patch(url, json={"name": "first"}, headers={**admin, "if-match": tag})
    assert first.status_code == 200, first.text
    newer = first.headers["etag"]
    assert newer != tag
    assert (await client.get(url, headers=admin)).headers["etag"] == newer

    stale = await client.patch(url, json={"entries": []}, headers={**admin, "if-match": tag})
    assert stale.status_code == 412, stale.text
    assert stale.json()["error"]["code"] == "precondition_failed"
    now = (await client.get(url, headers=admin)).json()["data"]
    assert (now["name"], len(now["entries"])) == ("first", 1)  # nothing of the stale write

    weak = await client.patch(url, json={"name": "w"}, headers={**admin, "if-match": f"W/{newer}"})
    assert weak.status_code == 412  # a weak tag never matches If-Match
    listed = await client.patch(
        url, json={"name": "listed"}, headers={**admin, "if-match": f'"other", {newer}'}
    )
    assert listed.status_code == 200, listed.text
    anything = await client.patch(url, json={"name": "any"}, headers={**admin, "if-match": "*"})
    assert anything.status_code == 200, anything.text
    plain = await client.patch(url, json={"name": "unconditional"}, headers=admin)
    assert plain.status_code == 200  # without If-Match, as before


async def test_if_match_is_checked_after_authorisation(
    client: httpx2.AsyncClient, world: World
) -> None:
    made = await deploy_to_agent(client, world, [{"server": "linear", "catalog_version": 1}])
    url = world.deployments(made["id"])
    stale = {"if-match": '"0000"'}
    refused = await client.patch(url, json={"name": "x"}, headers={**world.agent.headers, **stale})
    assert refused.status_code == 403
    absent = world.deployments(str(uuid.uuid4()))
    gone = await client.patch(absent, json={"name": "x"}, headers={**world.admin.headers, **stale})
    assert gone.status_code == 404
