"""Grants over REST: create/list/delete/check, 400/404/409 rules, escalation, replicas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

import httpx2
import pytest
from fastapi import FastAPI

from hub.app import create_app
from hub.core import clock
from hub.core.db import Database
from hub.core.settings import Settings
from tests.conftest import ClockControl
from tests.support.factories import Actor, make_principal, make_tenant
from tests.support.stories import TenantAdmin, audit_events, make_tenant_admin


@pytest.fixture
async def second_client(
    settings: Settings, database: Database
) -> AsyncIterator[httpx2.AsyncClient]:
    """Another hub replica on the same database (its own policy cache)."""
    app: FastAPI = create_app(settings, database=database)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://b") as c,
    ):
        yield c


async def _grant(
    client: httpx2.AsyncClient, actor: Actor, tenant_id: object, **body: object
) -> httpx2.Response:
    return await client.post(f"/tenants/{tenant_id}/grants", json=body, headers=actor.headers)


async def _check(
    client: httpx2.AsyncClient, team: TenantAdmin, principal: Actor, resource: str
) -> httpx2.Response:
    """``POST …/grants/check``: may ``principal`` ``call`` ``resource``?"""
    return await client.post(
        team.url("grants", "check"),
        json={"principal_id": str(principal.principal_id), "resource": resource, "action": "call"},
        headers=team.admin.headers,
    )


@dataclass(frozen=True)
class Story:
    """A tenant with its admin, an agent, and (when made) one grant the admin gave the agent."""

    team: TenantAdmin
    agent: Actor
    grant_id: str = ""

    def allow(self, resource: str, **extra: object) -> dict[str, object]:
        """A grant body allowing the agent to ``call`` ``resource``."""
        return {
            "principal_id": str(self.agent.principal_id),
            "resource": resource,
            "action": "call",
            "effect": "allow",
            **extra,
        }


async def _story(database: Database, agent_role: str | None) -> Story:
    team = await make_tenant_admin(database)
    agent = await make_principal(database, team.tenant_id, role=agent_role, kind="agent")
    return Story(team, agent)


@pytest.fixture
async def story(database: Database) -> Story:
    """A tenant, its admin and an agent without a role (so without grants)."""
    return await _story(database, None)


@pytest.fixture
async def granted(client: httpx2.AsyncClient, database: Database) -> Story:
    """An agent of role ``agent`` its admin allowed ``call`` on ``tool:lin.*`` (answered 201)."""
    story = await _story(database, "agent")
    created = await _grant(
        client, story.team.admin, story.team.tenant_id, **story.allow("tool:lin.*")
    )
    assert created.status_code == 201, created.text
    return Story(story.team, story.agent, created.json()["data"]["id"])


# ---------------------------------------------------------------- lifecycle and check
async def test_check_inside_the_pattern_is_allowed_by_the_grant(
    client: httpx2.AsyncClient, granted: Story
) -> None:
    check = await _check(client, granted.team, granted.agent, "tool:lin.search")
    assert check.json()["data"] == {
        "effect": "allow",
        "grant_id": granted.grant_id,
        "grant_effect": None,
        "reasons": None,
    }


async def test_check_outside_the_pattern_is_denied(
    client: httpx2.AsyncClient, granted: Story
) -> None:
    check = await _check(client, granted.team, granted.agent, "tool:linx.search")
    assert check.json()["data"] == {
        "effect": "deny",
        "grant_id": None,
        "grant_effect": None,
        "reasons": None,
    }


async def test_list_by_principal_shows_its_grant(
    client: httpx2.AsyncClient, granted: Story
) -> None:
    listed = await client.get(
        granted.team.url("grants"),
        params={"principal_id": str(granted.agent.principal_id)},
        headers=granted.team.admin.headers,
    )
    assert [g["id"] for g in listed.json()["data"]] == [granted.grant_id]


async def test_deleting_a_grant_answers_204(client: httpx2.AsyncClient, granted: Story) -> None:
    url = granted.team.url("grants", granted.grant_id)
    assert (await client.delete(url, headers=granted.team.admin.headers)).status_code == 204


async def test_deleting_a_deleted_grant_is_404(client: httpx2.AsyncClient, granted: Story) -> None:
    url = granted.team.url("grants", granted.grant_id)
    await client.delete(url, headers=granted.team.admin.headers)
    assert (await client.delete(url, headers=granted.team.admin.headers)).status_code == 404


# ---------------------------------------------------------------- input rules
@pytest.mark.parametrize(
    "resource", ["tool:lin*", "tool:*.x", "*foo", "", "nonsense:*", "audit:x", "tool:a b"]
)
async def test_bad_resource_is_400(client: httpx2.AsyncClient, story: Story, resource: str) -> None:
    response = await _grant(client, story.team.admin, story.team.tenant_id, **story.allow(resource))
    assert response.status_code == 400


async def test_bad_action_is_400_without_echoing_it(
    client: httpx2.AsyncClient, story: Story
) -> None:
    body = {**story.allow("tool:*"), "action": "fly"}
    response = await _grant(client, story.team.admin, story.team.tenant_id, **body)
    assert response.status_code == 400
    assert "fly" not in response.text


@pytest.mark.parametrize(
    "conditions",
    [{"ip": "x"}, {"time_window": {"start": "9am"}}],
    ids=["unknown-condition", "bad-time-window"],
)
async def test_bad_condition_is_400(
    client: httpx2.AsyncClient, story: Story, conditions: dict[str, object]
) -> None:
    body = story.allow("tool:*", conditions=conditions)
    response = await _grant(client, story.team.admin, story.team.tenant_id, **body)
    assert response.status_code == 400


@pytest.mark.parametrize("expires_at", ["2001-01-01T00:00:00Z", "now"])
async def test_an_expiry_not_in_the_future_is_400_like_a_keys(
    client: httpx2.AsyncClient, story: Story, expires_at: str
) -> None:
    # such a grant never applied, yet was answered 201 (a key's past expiry was already 400)
    when = clock.now().isoformat() if expires_at == "now" else expires_at
    body = story.allow("tool:*", expires_at=when)
    response = await _grant(client, story.team.admin, story.team.tenant_id, **body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"] == "expires_at must be in the future"
    later = story.allow("tool:*", expires_at=(clock.now() + timedelta(hours=1)).isoformat())
    assert (
        await _grant(client, story.team.admin, story.team.tenant_id, **later)
    ).status_code == 201


async def test_principal_of_another_tenant_reads_404(
    client: httpx2.AsyncClient, database: Database, story: Story
) -> None:
    other_tenant = await make_tenant(database)
    stranger = await make_principal(database, other_tenant.id, role=None)
    body = {**story.allow("tool:*"), "principal_id": str(stranger.principal_id)}
    response = await _grant(client, story.team.admin, story.team.tenant_id, **body)
    assert response.status_code == 404


async def test_same_principal_resource_and_action_twice_is_409(
    client: httpx2.AsyncClient, story: Story
) -> None:
    admin, t = story.team.admin, story.team.tenant_id
    assert (await _grant(client, admin, t, **story.allow("tool:*"))).status_code == 201
    duplicate = await _grant(client, admin, t, **story.allow("tool:*", effect="deny"))
    assert duplicate.status_code == 409


async def test_an_expired_grant_gives_way_to_a_new_one(
    client: httpx2.AsyncClient, story: Story, database: Database, clock_control: ClockControl
) -> None:
    """It answered 409 "already has a grant" though it decided nothing any more; deleting it
    first was the only way on (a two-replica walk, stop 53). A live one still refuses."""
    admin, t = story.team.admin, story.team.tenant_id
    soon = (clock.now() + timedelta(minutes=5)).isoformat()
    first = await _grant(client, admin, t, **story.allow("tool:*", expires_at=soon))
    assert first.status_code == 201
    assert (await _grant(client, admin, t, **story.allow("tool:*"))).status_code == 409
    clock_control.advance(301)
    again = await _grant(client, admin, t, **story.allow("tool:*", effect="deny"))
    assert again.status_code == 201, again.text
    listed = await client.get(f"/tenants/{t}/grants", headers=admin.headers)
    mine = [g for g in listed.json()["data"] if g["resource"] == "tool:*"]
    assert [g["effect"] for g in mine] == ["deny"]
    created = await audit_events(database, action="grant.create")
    assert created[-1].details["replaced_expired_grant_id"] == first.json()["data"]["id"]
    assert "replaced_expired_grant_id" not in created[0].details


async def test_two_creates_replacing_one_expired_grant_one_wins(
    client: httpx2.AsyncClient, story: Story, clock_control: ClockControl
) -> None:
    """Both read the expired grant and raced to delete it: on PostgreSQL the second's delete
    matched nothing, a 500 (a review, stop 53). The principal's row is now locked first: one
    replaces the grant, the other then sees the new one, 409."""
    admin, t = story.team.admin, story.team.tenant_id
    for _ in range(3):
        soon = (clock.now() + timedelta(minutes=5)).isoformat()
        made = await _grant(client, admin, t, **story.allow("tool:read.*", expires_at=soon))
        assert made.status_code == 201, made.text
        clock_control.advance(301)
        answers = await asyncio.gather(
            _grant(client, admin, t, **story.allow("tool:read.*", effect="deny")),
            _grant(client, admin, t, **story.allow("tool:read.*", effect="allow")),
        )
        assert sorted(a.status_code for a in answers) == [201, 409], [a.text for a in answers]
        winner = next(a for a in answers if a.status_code == 201)
        deleted = await client.delete(
            f"/tenants/{t}/grants/{winner.json()['data']['id']}", headers=admin.headers
        )
        assert deleted.status_code == 204, deleted.text


async def test_bad_cursor_is_400(client: httpx2.AsyncClient, story: Story) -> None:
    response = await client.get(
        story.team.url("grants?cursor=zzz"), headers=story.team.admin.headers
    )
    assert response.status_code == 400


async def test_pagination_walks_every_grant_once(client: httpx2.AsyncClient, story: Story) -> None:
    admin, t = story.team.admin, story.team.tenant_id
    for i in range(7):
        assert (await _grant(client, admin, t, **story.allow(f"tool:s{i}.*"))).status_code == 201
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": "3", "principal_id": str(story.agent.principal_id)}
        if cursor:
            params["cursor"] = cursor
        page = (
            await client.get(story.team.url("grants"), params=params, headers=admin.headers)
        ).json()
        seen += [g["resource"] for g in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(f"tool:s{i}.*" for i in range(7))


# ---------------------------------------------------------------- escalation
@pytest.fixture
async def operator(database: Database) -> Actor:
    tenant = await make_tenant(database)
    return await make_principal(database, tenant.id, role="operator")


async def test_operator_cannot_grant_itself_everything(
    client: httpx2.AsyncClient, database: Database, operator: Actor
) -> None:
    response = await _grant(
        client,
        operator,
        operator.tenant_id,
        principal_id=str(operator.principal_id),
        resource="*",
        action="*",
        effect="allow",
    )
    assert response.status_code == 403
    events = await audit_events(database, action="grant.create")
    assert [e.outcome for e in events] == ["denied"]


async def test_operator_may_hand_on_what_it_holds(
    client: httpx2.AsyncClient, database: Database, operator: Actor
) -> None:
    response = await _grant(
        client,
        operator,
        operator.tenant_id,
        principal_id=str(operator.principal_id),
        resource="server:abc",
        action="read",
        effect="ask",
    )
    assert response.status_code == 201
    events = await audit_events(database, action="grant.create")
    assert [e.outcome for e in events] == ["success"]


@pytest.fixture
async def deployer(client: httpx2.AsyncClient, database: Database) -> Actor:
    """A deployer its tenant's admin gave every right on principals (still not a tenant_admin)."""
    team = await make_tenant_admin(database)
    deployer = await make_principal(database, team.tenant_id, role="deployer")
    grant = await _grant(
        client,
        team.admin,
        team.tenant_id,
        principal_id=str(deployer.principal_id),
        resource="principal:*",
        action="*",
        effect="allow",
    )
    assert grant.status_code == 201
    return deployer


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("boss", "tenant_admin"),
        ("op", "operator"),  # operator confers grant:* which the deployer lacks
    ],
)
async def test_deployer_cannot_create_a_principal_above_itself(
    client: httpx2.AsyncClient, database: Database, deployer: Actor, name: str, role: str
) -> None:
    response = await client.post(
        f"/tenants/{deployer.tenant_id}/principals",
        json={"kind": "user", "name": name, "role": role},
        headers=deployer.headers,
    )
    assert response.status_code == 403
    [denied] = await audit_events(database, action="principal.create", outcome="denied")
    assert denied.actor_id == deployer.principal_id


async def test_deployer_may_create_an_agent(
    client: httpx2.AsyncClient, database: Database, deployer: Actor
) -> None:
    response = await client.post(
        f"/tenants/{deployer.tenant_id}/principals",
        json={"kind": "agent", "name": "bot", "role": "agent"},
        headers=deployer.headers,
    )
    assert response.status_code == 201
    assert await audit_events(database, action="principal.create", outcome="denied") == []


# ---------------------------------------------------------------- replicas and tenants
@pytest.fixture
async def user(database: Database) -> tuple[TenantAdmin, Actor]:
    """A tenant with its admin, and a user without grants."""
    team = await make_tenant_admin(database)
    return team, await make_principal(database, team.tenant_id, role=None)


async def _grant_principal_read(client: httpx2.AsyncClient, team: TenantAdmin, user: Actor) -> str:
    created = await _grant(
        client,
        team.admin,
        team.tenant_id,
        principal_id=str(user.principal_id),
        resource="principal:*",
        action="read",
        effect="allow",
    )
    assert created.status_code == 201, created.text
    grant_id: str = created.json()["data"]["id"]
    return grant_id


async def test_grant_on_one_replica_is_seen_by_another(
    client: httpx2.AsyncClient,
    second_client: httpx2.AsyncClient,
    user: tuple[TenantAdmin, Actor],
) -> None:
    team, someone = user
    url = team.url("principals")
    assert (await second_client.get(url, headers=someone.headers)).status_code == 403
    await _grant_principal_read(client, team, someone)
    assert (await second_client.get(url, headers=someone.headers)).status_code == 200


async def test_revocation_on_one_replica_is_seen_by_another(
    client: httpx2.AsyncClient,
    second_client: httpx2.AsyncClient,
    user: tuple[TenantAdmin, Actor],
) -> None:
    team, someone = user
    url = team.url("principals")
    grant_id = await _grant_principal_read(client, team, someone)
    assert (await second_client.get(url, headers=someone.headers)).status_code == 200
    deleted = await client.delete(team.url("grants", grant_id), headers=team.admin.headers)
    assert deleted.status_code == 204
    assert (await second_client.get(url, headers=someone.headers)).status_code == 403


async def test_a_check_about_oneself_sees_a_grant_made_on_another_replica(
    client: httpx2.AsyncClient,
    second_client: httpx2.AsyncClient,
    database: Database,
) -> None:
    """A principal checking itself is decided on the ``grants_version`` its key was read with
    in the same request (no second read): a grant made on one replica shows on the other's next
    check, as it does for a check about someone else."""
    team = await make_tenant_admin(database)
    operator = await make_principal(database, team.tenant_id, role="operator")
    body = {"principal_id": str(operator.principal_id), "resource": "tool:x.y", "action": "call"}
    url = team.url("grants", "check")

    async def own_effect() -> str:
        answered = await second_client.post(url, json=body, headers=operator.headers)
        assert answered.status_code == 200, answered.text
        effect: str = answered.json()["data"]["effect"]
        return effect

    before = await own_effect()
    made = await _grant(
        client,
        team.admin,
        team.tenant_id,
        **{**body, "effect": "deny" if before != "deny" else "allow"},
    )
    assert made.status_code == 201, made.text
    assert await own_effect() != before


async def test_a_grant_in_one_tenant_never_decides_in_another(
    client: httpx2.AsyncClient, database: Database
) -> None:
    a, b = await make_tenant_admin(database), await make_tenant_admin(database)
    agent_b = await make_principal(database, b.tenant_id, role=None, kind="agent")
    before = await _check(client, b, agent_b, "tool:x.y")
    agent_a = await make_principal(database, a.tenant_id, role=None, kind="agent")
    await _grant(
        client,
        a.admin,
        a.tenant_id,
        principal_id=str(agent_a.principal_id),
        resource="*",
        action="*",
        effect="allow",
    )
    after = await _check(client, b, agent_b, "tool:x.y")
    assert before.json() == after.json()
    assert after.json()["data"]["effect"] == "deny"
