"""The console's grant form honours ``HUB_MAX_GRANTS_PER_PRINCIPAL`` as the API does (stop 44)."""

from __future__ import annotations

import pytest

from hub.core.db import Database
from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.console.conftest import ConsoleWorld
from tests.console.support import ConsoleUser
from tests.support.factories import make_grants

LIMIT = 100


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, max_grants_per_principal=LIMIT)


async def test_the_grant_form_past_the_bound_says_why(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    await make_grants(database, world.tenant_id, world.agent.principal_id, LIMIT)
    form = {
        "principal_id": str(world.agent.principal_id),
        "resource": "tool:peer.over",
        "action": "call",
        "effect": "allow",
    }
    refused = await user.post(world.page("grants"), form)
    assert refused.status_code == 409
    assert "the most one principal may hold" in refused.text
    assert "Traceback" not in refused.text
