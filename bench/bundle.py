"""A sidecar's sync: its bundle read again while nothing changed, in instructions.

Every sidecar reads its deployment's bundle on each sync (``GET …/deployments/{d}/bundle`` with
the ETag it holds) and almost always gets ``304``. For each catalog size in ``SIZES``, one
``hub serve`` on SQLite (a file) serves a deployment of one server whose pinned catalog has that
many tools, every tool granted to the agent; the agent's conditional read is counted under
callgrind (:mod:`bench._instructions`: instructions do not move with the machine's load), beside
the baseline measured in the same process: the same agent's ``GET …/servers/{handle}``, an
authenticated read of one row. Printed: instructions per request of each and their ratio.
A report, not a test: ``python -m bench bundle``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2

from bench import _instructions
from bench._instructions import Setup, instructions_per_call, valgrind_present
from bench._peer import REPO_ROOT
from bench._serving import hub_env
from hub.core.db import Database
from hub.core.migrations import upgrade
from tests.support.factories import Actor, make_catalog, make_principal, make_server, tool
from tests.support.stories import TenantAdmin, make_tenant_admin

SIZES = (20, 300)
Call = Callable[[], Awaitable[None]]


async def _seed(db_url: str, tools: int) -> tuple[TenantAdmin, Actor]:
    """A tenant with a server ``peer`` whose catalog has ``tools`` tools, and an agent."""
    db = Database.from_url(db_url)
    try:
        team = await make_tenant_admin(db)
        agent = await make_principal(db, team.tenant_id, role="agent", kind="agent")
        server = await make_server(db, team.tenant_id, "peer")
        await make_catalog(db, team.tenant_id, server, [tool(f"t{i}") for i in range(tools)])
    finally:
        await db.dispose()
    return team, agent


async def _post(admin: httpx2.AsyncClient, url: str, headers: dict[str, str], body: object) -> str:
    answer = await admin.post(url, json=body, headers=headers)
    if answer.status_code != 201:
        raise RuntimeError(f"seeding {url}: {answer.status_code} {answer.text[:300]}")
    made: str = answer.json()["data"]["id"]
    return made


def _setup(db_url: str, tools: int) -> tuple[Setup, Setup]:
    """The bundle's conditional read and the server read, both by the agent."""
    ready: dict[str, object] = {}

    async def prepare(base: str) -> tuple[httpx2.AsyncClient, str, str]:
        if not ready:
            team, agent = await _seed(db_url, tools)
            who = str(agent.principal_id)
            async with httpx2.AsyncClient(base_url=base, timeout=120) as admin:
                for resource, action in (("tool:peer.*", "call"), ("server:peer", "read")):
                    grant = {"principal_id": who, "resource": resource, "action": action}
                    grant["effect"] = "allow"
                    await _post(admin, team.url("grants"), team.admin.headers, grant)
                deployment = await _post(
                    admin,
                    team.url("deployments"),
                    team.admin.headers,
                    {"agent_id": who, "entries": [{"server": "peer", "catalog_version": 1}]},
                )
            ready.update(
                headers=agent.headers,
                bundle=team.url("deployments", deployment, "bundle"),
                server=team.url("servers", "peer"),
            )
        headers = ready["headers"]
        assert isinstance(headers, dict)
        http = httpx2.AsyncClient(base_url=base, headers=headers, timeout=120)
        return http, str(ready["bundle"]), str(ready["server"])

    async def bundle(base: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
        http, path, _ = await prepare(base)
        etag = (await http.get(path)).headers["etag"]

        async def call() -> None:
            answer = await http.get(path, headers={"if-none-match": etag})
            if answer.status_code != 304:
                raise RuntimeError(f"bundle: {answer.status_code} {answer.text[:200]}")

        return call, http.aclose

    async def server(base: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
        http, _, path = await prepare(base)

        async def call() -> None:
            answer = await http.get(path)
            if answer.status_code != 200:
                raise RuntimeError(f"server: {answer.status_code} {answer.text[:200]}")

        return call, http.aclose

    return server, bundle


def main() -> None:
    print(
        "a sidecar's sync: GET …/bundle answered 304, against GET …/servers/{handle}, by the "
        f"agent (callgrind, {_instructions.COUNT} sequential requests, SQLite)"
    )
    if not valgrind_present():
        print("skipped: valgrind is not installed")
        return
    print(f"{'tools':>6} {'server M':>9} {'bundle M':>9} {'bundle/server':>14}")
    argv = [sys.executable, "-m", "hub.cli", "serve", "--host", "127.0.0.1"]
    for tools in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            db_url = f"sqlite+aiosqlite:///{workdir / 'bundle.db'}"
            upgrade(db_url)
            env = hub_env(db_url, workdir)
            env.update(HUB_RATE_LIMITS="rest=off", HUB_LOG_LEVEL="WARNING")
            server, bundle = _setup(db_url, tools)
            counts = instructions_per_call(
                argv, env, REPO_ROOT, workdir, f"bundle-{tools}", [server, bundle]
            )
        server_m, bundle_m = (count / 1e6 for count in counts)
        print(f"{tools:>6} {server_m:>9.3f} {bundle_m:>9.3f} {bundle_m / server_m:>14.2f}")


if __name__ == "__main__":
    main()
