"""A catalog version's page shows its tools a hundred at a time, and a deployment's page says when
it shows a server's first 200 only (stop 44). A catalog can hold megabytes of definitions, each
shown whole: 5,000 tools (12.5 MB) took 1.3 s to format alone, on the loop every request shares.
"""

from __future__ import annotations

import re

import httpx2

from hub.core.db import Database
from tests.console.conftest import ConsoleWorld
from tests.console.support import ConsoleUser, seed_catalogs

TOOLS: list[dict[str, object]] = [
    {"name": f"tool_{i:04d}", "description": f"Tool {i}.", "inputSchema": {"type": "object"}}
    for i in range(250)
]


def _names(html: str) -> list[str]:
    return re.findall(r"<h3 id=\"tool-\d+\"><code>(tool_\d{4})</code></h3>", html)


async def test_a_catalog_page_shows_a_hundred_tools_and_links_the_rest(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    await seed_catalogs(database, world.tenant_id, "many", [TOOLS])
    here = world.page("servers", "many", "catalogs", "1")
    first = await user.get(here)
    assert first.status_code == 200, first.text
    assert _names(first.text) == [f"tool_{i:04d}" for i in range(100)]
    assert "Tools (250)" in first.text
    assert "Tools 1\u2013100 of 250." in first.text
    assert f'href="{here}?start=100">Next</a>' in first.text
    assert "Previous</a>" not in first.text
    last = await user.get(f"{here}?start=200")
    assert _names(last.text) == [f"tool_{i:04d}" for i in range(200, 250)]
    assert "Tools 201\u2013250 of 250." in last.text
    assert f'href="{here}?start=100">Previous</a>' in last.text
    assert "Next</a>" not in last.text
    past = await user.get(f"{here}?start=9999")  # past the end: the last tool
    assert _names(past.text) == ["tool_0249"]
    refused = await user.get(f"{here}?start=-1")
    assert refused.status_code == 400
    assert "Traceback" not in refused.text


async def test_a_small_catalog_page_has_no_pages(user: ConsoleUser, world: ConsoleWorld) -> None:
    page = await user.get(world.page("servers", "peer", "catalogs", "1"))
    assert page.status_code == 200
    assert "Tools (2)" in page.text
    assert 'aria-label="Pages of tools"' not in page.text


async def test_a_deployment_page_says_when_it_cuts_a_server_s_tools(
    client: httpx2.AsyncClient, user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    await seed_catalogs(database, world.tenant_id, "many", [TOOLS])
    made = await client.post(
        world.setup.url("deployments"),
        json={
            "agent_id": str(world.agent.principal_id),
            "entries": [
                {"server": "many", "catalog_version": 1},
                {"server": "peer", "catalog_version": 1},
            ],
        },
        headers=world.setup.admin.headers,
    )
    assert made.status_code == 201, made.text
    page = await user.get(world.page("deployments", made.json()["data"]["id"]))
    assert page.status_code == 200
    assert "Only the first 200 tools of many are shown" in page.text
    assert page.text.count("<code>many.tool_") == 200
    assert "<code>peer.search</code>" in page.text
    plain = await user.get(world.page("deployments", world.deployment_id))
    assert "Only the first" not in plain.text


async def test_a_diff_page_shows_a_hundred_changed_tools_and_links_the_rest(
    user: ConsoleUser, world: ConsoleWorld, database: Database
) -> None:
    changed = [{**tool, "description": f"{tool['description']} Changed."} for tool in TOOLS]
    await seed_catalogs(database, world.tenant_id, "many", [TOOLS, changed])
    here = world.page("servers", "many", "diff?from=1&to=2")
    first = await user.get(here)
    assert first.status_code == 200, first.text
    shown = re.findall(r"<h3 id=\"changed-\d+\"><code>(tool_\d{4})</code></h3>", first.text)
    assert shown == [f"tool_{i:04d}" for i in range(100)]
    assert "Changed (250)" in first.text
    assert "Tools 1\u2013100 of 250." in first.text
    assert 'href="' + here.replace("&", "&amp;") + '&amp;start=100">Next</a>' in first.text
    last = await user.get(f"{here}&start=200")
    shown = re.findall(r"<h3 id=\"changed-\d+\"><code>(tool_\d{4})</code></h3>", last.text)
    assert shown == [f"tool_{i:04d}" for i in range(200, 250)]
    assert "Next</a>" not in last.text
    small = await user.get(world.page("servers", "peer", "diff?from=1&to=2"))
    assert small.status_code == 200
    assert 'aria-label="Pages of tools"' not in small.text
