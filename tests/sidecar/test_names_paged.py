"""``hub sidecar --deployment NAME`` finds any of the agent's deployments, not only the 200
``/whoami`` lists: the name is looked up in the deployments list (``?agent_id=`` the agent
itself), every page of it; none or several of the name are still one line each, and a hub that
hands out cursors forever is left after a bounded number of pages."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hub.sidecar.config import SidecarConfig
from hub.sidecar.errors import SidecarError
from hub.sidecar.names import MAX_PAGES, PAGE_LIMIT, resolved
from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import deploy_on, error_lines, live_hub, run_sidecar

FILLERS = 205  # created after the first deployment: whatever follows them is past the 200th


def _one_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = error_lines(done)
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


async def test_a_name_past_the_200th_deployment_starts_the_sidecar(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """The agent's first deployment is ``twin``; 205 more follow, then ``late`` (the first's
    entries) and a second ``twin``. ``late`` starts the sidecar (and is remembered: with the hub
    down it starts again); ``twin`` is two deployments; ``nobody`` is none, the line naming
    some of the agent's names and how many more it has."""
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        admin = deployed.setup.admin.headers
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            first = deployed.setup.url("deployments", deployed.deployment_id)
            assert (await http.patch(first, json={"name": "twin"}, headers=admin)).is_success
            copy = (await http.get(first, headers=admin)).json()["data"]
            entries = [
                {"server": e["server"], "catalog_version": e["catalog_version"]}
                for e in copy["entries"]
            ]

            async def create(name: str, with_entries: bool = False) -> str:
                body = {"agent_id": copy["agent_id"], "name": name}
                if with_entries:
                    body["entries"] = entries
                made = await http.post(deployed.setup.url("deployments"), json=body, headers=admin)
                assert made.status_code == 201, made.text
                return str(made.json()["data"]["id"])

            for n in range(FILLERS):
                await create(f"filler-{n:03}")
            late = await create("late", with_entries=True)
            await create("twin")
            me = (await http.get("/whoami", headers=deployed.agent.headers)).json()["data"]
            assert late not in {d["id"] for d in me["deployments"]}  # /whoami stops at 200

        def by_name(name: str) -> subprocess.CompletedProcess[str]:
            tenant = str(deployed.setup.tenant_id)
            return run_sidecar(
                tmp_path,
                "--stdio",
                key=deployed.agent.key,
                hub=hub.url,
                tenant=tenant,
                deployment=name,
            )

        # stdin at EOF: it resolves the name, syncs the bundle once and ends cleanly
        served = by_name("late")
        assert served.returncode == 0, served.stderr
        assert late in served.stderr
        _one_line(by_name("twin"), "2 of this agent's deployments", "give its id")
        nobody = _one_line(by_name("nobody"), "'nobody'", "no deployment of that name")
        shown = FILLERS + 2 - 20  # the first 20 names in order are shown, then how many more
        assert "'filler-000'" in nobody
        assert "'filler-019'" in nobody
        assert "'filler-020'" not in nobody
        assert f"and {shown} more" in nobody
        hub.stop()
        again = by_name("late")
        assert again.returncode == 0, again.stderr
        assert f"using the id {late} last resolved" in again.stderr


@contextlib.asynccontextmanager
async def _serving(app: Starlette) -> AsyncIterator[str]:
    """``app`` served on a loopback port in the test's event loop; its URL."""

    class NoSignals(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):  # type: ignore[no-untyped-def]
            yield

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = NoSignals(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
            await anyio.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            server.force_exit = True


TENANT = "00000000-0000-4000-8000-000000000001"
AGENT = "00000000-0000-4000-8000-000000000003"


async def test_a_hub_that_pages_forever_is_left_with_one_line(tmp_path: Path) -> None:
    """A hostile hub answers every page of the list with one deployment and another cursor: the
    sidecar reads ``MAX_PAGES`` pages, each asked for the agent ``/whoami`` named, and stops."""
    asked: list[dict[str, str]] = []

    async def whoami(request: Request) -> JSONResponse:
        principal: dict[str, Any] = {"id": AGENT, "kind": "agent", "name": "agent"}
        data = {"principal": principal, "tenant_id": TENANT, "tenant_slug": "acme"}
        return JSONResponse({"data": {**data, "deployments": []}})

    async def listed(request: Request) -> JSONResponse:
        asked.append(dict(request.query_params))
        n = len(asked)
        item = {"id": f"00000000-0000-4000-8000-{n:012d}", "name": f"d-{n}"}
        return JSONResponse({"data": [item], "next_cursor": f"cursor-{n}"})

    app = Starlette(
        routes=[
            Route("/whoami", whoami),
            Route(f"/tenants/{TENANT}/deployments", listed),
        ]
    )
    async with _serving(app) as url:
        config = SidecarConfig.checked(
            hub=url,
            tenant=TENANT,
            deployment="wanted",
            agent_key="hub_" + "x" * 51,
            cache_dir=tmp_path / "cache",
        )
        with pytest.raises(SidecarError) as refused:
            await resolved(config)
    line = str(refused.value)
    assert "\n" not in line
    assert "'wanted'" in line
    assert f"more than {MAX_PAGES} pages" in line, line
    assert len(asked) == MAX_PAGES
    assert asked[0] == {"agent_id": AGENT, "limit": str(PAGE_LIMIT)}
    assert [a.get("cursor") for a in asked[1:]] == [f"cursor-{n}" for n in range(1, MAX_PAGES)]
    assert all(a["agent_id"] == AGENT for a in asked)
    assert not list((tmp_path / "cache").glob("names-*.json"))
