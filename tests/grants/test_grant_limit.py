"""A principal holds at most ``HUB_MAX_GRANTS_PER_PRINCIPAL`` grants (stop 44).

A principal's policy is read and compiled whole, on the event loop every tenant shares, when its
grants change, and on every request once it is larger than the policy cache: 250,000 grants took
18 s of the loop a request. The bound is counted under the principal's row lock, so two creates
at the bound cannot both pass it.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx2
import pytest

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.settings import Settings
from hub.grants.cache import PolicyCache
from hub.grants.policy import CompiledPolicy
from hub.grants.service import load_policy
from hub.models import Grant
from tests.conftest import make_settings
from tests.support.factories import Actor, make_grants, make_principal, scope_of
from tests.support.stories import TenantAdmin, make_tenant_admin

LIMIT = 100


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, max_grants_per_principal=LIMIT)


async def _world(database: Database, *, holding: int = 0) -> tuple[TenantAdmin, Actor]:
    """A tenant admin, and an agent holding ``holding`` grants (no role's)."""
    team = await make_tenant_admin(database)
    agent = await make_principal(database, team.tenant_id, role=None, kind="agent", name="bot")
    await make_grants(database, team.tenant_id, agent.principal_id, holding)
    return team, agent


def _grant(agent: Actor, resource: str) -> dict[str, Any]:
    return {
        "principal_id": str(agent.principal_id),
        "resource": resource,
        "action": "call",
        "effect": "allow",
    }


async def test_a_grant_past_the_bound_is_409(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team, agent = await _world(database, holding=LIMIT - 1)
    url, headers = team.url("grants"), team.admin.headers
    last = await client.post(url, json=_grant(agent, "tool:last.*"), headers=headers)
    assert last.status_code == 201, last.text
    refused = await client.post(url, json=_grant(agent, "tool:over.*"), headers=headers)
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "conflict"
    assert error["limit"] == LIMIT
    assert "HUB_MAX_GRANTS_PER_PRINCIPAL" in error["message"]
    # nothing of the refused grant was written
    listed = await client.get(
        url, params={"principal_id": str(agent.principal_id), "limit": 200}, headers=headers
    )
    assert "tool:over.*" not in listed.text
    # one deleted, one more fits
    gone = await client.delete(team.url("grants", last.json()["data"]["id"]), headers=headers)
    assert gone.status_code == 204, gone.text
    again = await client.post(url, json=_grant(agent, "tool:over.*"), headers=headers)
    assert again.status_code == 201, again.text


async def test_two_creates_at_the_bound_cannot_both_pass_it(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team, agent = await _world(database, holding=LIMIT - 1)
    url, headers = team.url("grants"), team.admin.headers
    answers = await asyncio.gather(
        *(
            client.post(url, json=_grant(agent, f"tool:race{i}.*"), headers=headers)
            for i in range(4)
        )
    )
    assert sorted(a.status_code for a in answers) == [201, 409, 409, 409]


async def test_the_bound_is_the_principal_s_own(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team, _full = await _world(database, holding=LIMIT)
    other = await make_principal(database, team.tenant_id, role=None, kind="agent", name="two")
    made = await client.post(
        team.url("grants"), json=_grant(other, "tool:x.*"), headers=team.admin.headers
    )
    assert made.status_code == 201, made.text


async def _policy_with(
    database: Database, holding: int, resource: str, effect: str, **columns: Any
) -> CompiledPolicy:
    """The compiled policy of an agent holding ``holding`` plain grants and one on ``resource``
    written straight to the table with ``columns`` (its conditions, expiry)."""
    team, agent = await _world(database, holding=holding)
    with rls.scope(scope_of(team.tenant_id)):
        async with database.session() as session:
            session.add(
                Grant(
                    id=uuid.uuid4(),
                    tenant_id=team.tenant_id,
                    principal_id=agent.principal_id,
                    resource=resource,
                    action="call",
                    effect=effect,
                    created_at=clock.now(),
                    **columns,
                )
            )
        async with database.session() as session:
            return await load_policy(
                session, PolicyCache(), scope_of(team.tenant_id), agent.principal_id
            )


async def test_a_policy_is_read_from_plain_rows(database: Database) -> None:
    """What the engine needs of each grant, conditions and expiry included, read without an
    ORM object a row."""
    window = {"time_window": {"start": "00:00", "end": "23:59"}}
    expiry = clock.now().replace(year=2999)
    policy = await _policy_with(
        database, 3, "tool:timed.*", "ask", conditions=window, expires_at=expiry
    )
    assert policy.size == 4
    assert not policy.static
    timed = next(rule for rule in policy.rules() if rule.resource == "tool:timed.*")
    assert timed.effect == "ask"
    assert timed.window is not None
    assert timed.expires_at is not None
    assert timed.expires_at.year == 2999
    assert policy.decide("tool:srv1.tool1", "call", clock.now()).effect == "allow"


async def test_a_grant_whose_stored_conditions_are_invalid_denies(database: Database) -> None:
    """Conditions are validated when written; a row that holds invalid ones anyway (written by
    hand, say) fails closed: its grant denies."""
    invalid = {"time_window": "whenever"}
    policy = await _policy_with(database, 0, "tool:odd.*", "allow", conditions=invalid)
    assert policy.decide("tool:odd.x", "call", clock.now()).effect == "deny"
    assert [rule.effect for rule in policy.rules()] == ["deny"]
