"""A ``tools/call`` through the sidecar (relay and direct) vs the hub's endpoint vs the peer.

One official SDK server (``tests.peers.sdk_server``, stateless, JSON answers) serves ``echo``
behind an API-key credential pinned to its origin. A ``hub serve`` subprocess on an SQLite file
(rate limits off) gets a tenant, an agent and a deployment of that server in **direct** mode with
a sidecar service principal, ``echo`` allowed without asking. Then four long-lived official SDK
clients in the same run, calls interleaved so machine noise falls on all of them:

- **peer** — the SDK's streamable HTTP client straight to the peer (the baseline);
- **hub** — the SDK's streamable HTTP client on ``POST …/deployments/{d}/mcp``;
- **relay** — the SDK's stdio client spawning ``hub sidecar --stdio`` (the call goes to the hub's
  endpoint);
- **direct** — the same with ``--mode direct`` (a decision from the hub, a leased credential
  held for its 300 s, the upstream call from the sidecar, the outcome reported).

Printed per path: p50 and p99, the ratio of p50s to the peer and to the hub endpoint. A report,
not a test: ``python -m bench sidecar``.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench._calls import Call, calling, quantile, sdk_session
from bench._peer import REPO_ROOT, start_sdk_peer
from bench._serving import hub_env, served
from hub.core.db import Database
from hub.core.migrations import upgrade
from tests.gateway.support import Upstream
from tests.sidecar.direct import DirectDeployed, deploy_direct

WARMUP = 20
ROUNDS = 200
SECRET = "bench-sidecar-secret-0123456789"  # noqa: S105 - a benchmark fixture
TOOLS = [
    {
        "name": "echo",
        "description": "Returns its arguments.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
]


@contextlib.asynccontextmanager
async def sidecar_session(
    hub_url: str, world: DirectDeployed, mode: str, workdir: Path
) -> AsyncIterator[Client]:
    deployed = world.deployed
    args = ["-m", "hub.cli", "sidecar", "--hub", hub_url, "--stdio", "--mode", mode]
    args += ["--tenant", str(deployed.setup.tenant_id), "--deployment", deployed.deployment_id]
    args += ["--cache-dir", str(workdir / f"cache-{mode}"), "--log-level", "WARNING"]
    env = {"HUB_AGENT_KEY": deployed.agent.key, "PYTHONPATH": str(REPO_ROOT)}
    if mode == "direct":
        env["HUB_SIDECAR_KEY"] = world.sidecar.key
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=REPO_ROOT)
    with (workdir / f"sidecar-{mode}.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            yield client


async def measure(paths: dict[str, Call]) -> dict[str, list[float]]:
    for _ in range(WARMUP):
        for call in paths.values():
            await call()
    samples: dict[str, list[float]] = {name: [] for name in paths}
    order = list(paths.items())
    for i in range(ROUNDS):
        rotated = order[i % len(order) :] + order[: i % len(order)]
        for name, call in rotated:
            start = time.perf_counter()
            await call()
            samples[name].append(time.perf_counter() - start)
    return samples


def report(samples: dict[str, list[float]]) -> None:
    p50 = {name: statistics.median(times) for name, times in samples.items()}
    print(f"{'path':<8} {'p50 ms':>8} {'p99 ms':>8} {'/ peer':>8} {'/ hub':>8}")
    for name, times in samples.items():
        print(
            f"{name:<8} {p50[name] * 1000:>8.2f} {quantile(times, 0.99) * 1000:>8.2f} "
            f"{p50[name] / p50['peer']:>7.2f}x {p50[name] / p50['hub']:>7.2f}x"
        )


async def bench(port: int, peer_url: str, db_url: str, workdir: Path) -> None:
    base = f"http://127.0.0.1:{port}"
    db = Database.from_url(db_url)
    try:
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            upstream = Upstream("peer", peer_url, secret=SECRET, allow_without_ask=["echo"])
            world = await deploy_direct(http, db, [upstream], {"peer"})
    finally:
        await db.dispose()
    deployed = world.deployed
    async with (
        sdk_session(peer_url) as peer,
        sdk_session(base + deployed.url, headers=deployed.headers) as hub,
        sidecar_session(base, world, "relay", workdir) as relay,
        sidecar_session(base, world, "direct", workdir) as direct,
    ):
        samples = await measure(
            {
                "peer": calling(peer, "echo", {"text": "x"}),
                "hub": calling(hub, "peer__echo", {"text": "x"}),
                "relay": calling(relay, "peer__echo", {"text": "x"}),
                "direct": calling(direct, "peer__echo", {"text": "x"}),
            }
        )
    print(f"SQLite (file): {ROUNDS} interleaved calls per path (2026-07-28, allow)")
    report(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        peer, peer_url = start_sdk_peer(workdir, TOOLS, mode="stateless-json", page_size=50)
        try:
            db_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
            upgrade(db_url)
            env = hub_env(db_url, workdir)
            env.update(HUB_ALLOW_LOOPBACK="true", HUB_RATE_LIMITS="tool_call=off,rest=off")
            env.update(HUB_LOG_LEVEL="WARNING")
            argv = [sys.executable, "-m", "hub.cli", "serve", "--host", "127.0.0.1"]
            with served(argv, env, workdir / "hub.log") as port:
                asyncio.run(bench(port, peer_url, db_url, workdir))
        finally:
            peer.terminate()
            peer.wait(timeout=10)


if __name__ == "__main__":
    main()
