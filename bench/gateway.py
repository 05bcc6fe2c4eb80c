"""The data plane's cost: ``tools/call`` through the hub's endpoint vs the same SDK client direct.

One official SDK server (``tests.peers.sdk_server``, stateless, JSON answers) serves ``echo`` and
``approve_me``, both echoing their arguments. For each backend — SQLite (a file) and PostgreSQL
(database ``hub_bench``, emptied and migrated, and vacuumed, analysed and checkpointed once
seeded; skipped when unreachable) — a ``hub serve``
subprocess gets a tenant, an agent and a deployment of that server (``echo`` allowed without
asking, ``approve_me`` behind ``ask``), with the ``tool_call`` rate limit off. Then, in both eras
(the SDK client's ``mode="auto"``, 2026-07-28, and ``mode="legacy"``, the handshake era), one
long-lived SDK client per path makes sequential calls, hub and direct interleaved so machine noise
falls on both:

- **allow** — ``echo`` through the hub vs ``echo`` direct;
- **ask, approved** — before each timed call, the same call is made once untimed (it files a
  pending approval), a tenant admin approves it over REST, and the timed call consumes the
  approval and runs: the cost of an approved call, against ``echo`` direct.

Then **allow, legacy upstream**: the same SDK server made handshake-only (``--legacy-only``,
stateful, JSON answers) is the deployment's second server, so the hub reaches it in the 2025-11-25
era with a session, kept between calls (``HUB_UPSTREAM_SESSION_IDLE_S``); the agent speaks
2026-07-28 to the hub, and the direct path is the SDK client in its handshake mode (one session).
A second ``hub serve`` on the same database with ``HUB_UPSTREAM_SESSION_IDLE_S=0`` (a session
per call: ``initialize``, ``notifications/initialized``, ``tools/call``, ``DELETE``) is the
``per-call`` row, the three paths interleaved.

Printed per row: p50 and p99 of the calls, the ratio of the p50s (hub / direct) and the p50
overhead in ms; for allow also the hub process's CPU per call (from ``/proc``: steadier than the
latencies on a shared machine, as in ``bench.rest``). Then throughput with ``CLIENTS`` concurrent
SDK clients (allow, 2026-07-28) and the protocol layer alone: the hub's own dispatcher
(:mod:`bench._echo_dispatcher`, no database, no upstream) vs the SDK server, the same echo tool,
both eras — the measurement behind serving the endpoint with our dispatcher rather than the SDK's
server (docs/decisions.md); and the floor: the same peer behind a bare forwarding proxy
(:mod:`bench._forward`: uvicorn, one FastAPI route and an ``httpx2`` client, no hub code) vs
direct, what the two HTTP legs a gateway adds cost before it does any work of its own. Last,
the number to compare across commits: the instructions an allowed call costs the hub's process
(callgrind, :mod:`bench._instructions`) on each backend, against the floor proxy's, which do not
move with the machine's load as times do. A report, not a test: ``python -m bench gateway``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2
from mcp.client import Client

from bench import _instructions
from bench._calls import Call, Samples, calling, sdk_session, timed
from bench._instructions import Setup, instructions_per_call, valgrind_present
from bench._peer import REPO_ROOT, start_sdk_peer
from bench._serving import cpu_seconds, hub_env, pid_serving, served
from hub.core.db import Database
from hub.core.migrations import upgrade
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.support.databases import fresh_postgres, settle_postgres

PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/hub_bench"
WARMUP = 20
ROUNDS = 300
ASK_ROUNDS = 100
CLIENTS = 8
THROUGHPUT_SECONDS = 4.0
ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}
CASE = 22  # the case column's width
TOOLS = [
    {
        "name": name,
        "description": "Returns its arguments.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    for name in ("echo", "approve_me")
]


async def interleaved(calls: list[Call], rounds: int) -> list[Samples]:
    """Each call ``rounds`` times, in turn, the order rotating every round."""
    for _ in range(WARMUP):
        for call in calls:
            await call()
    samples = [Samples() for _ in calls]
    for i in range(rounds):
        for k in range(len(calls)):
            j = (i + k) % len(calls)
            samples[j].times.append(await timed(calls[j]))
    return samples


def row(era: str, case: str, path: str, samples: Samples, base: Samples | None) -> None:
    ratio = "" if base is None else f"{samples.p50 / base.p50:.2f}x"
    extra = "" if base is None else f"{(samples.p50 - base.p50) * 1000:+.2f}"
    print(
        f"{era:<11} {case:<{CASE}} {path:<8} {samples.p50 * 1000:>8.2f} "
        f"{samples.quantile(0.99) * 1000:>8.2f} {ratio:>7} {extra:>9}"
    )


def header() -> None:
    columns = f"{'p50 ms':>8} {'p99 ms':>8} {'ratio':>7} {'+p50 ms':>9}"
    print(f"{'era':<11} {'case':<{CASE}} {'path':<8} {columns}")


async def approved_call(
    http: httpx2.AsyncClient, deployed: Deployed, client: Client, i: int
) -> Call:
    """The ``i``-th ask call made ready: filed untimed, approved over REST; the call to time."""
    arguments = {"text": f"approved-{i}"}
    filed = await rpc(
        http, deployed, "tools/call", {"name": "peer__approve_me", "arguments": arguments}
    )
    approval = filed.json()["result"]["_meta"]["io.mcphub/approval"]["id"]
    decided = await http.post(
        deployed.setup.url("approvals", approval, "decision"),
        json={"decision": "approve"},
        headers=deployed.setup.admin.headers,
    )
    if decided.status_code != 200:
        raise RuntimeError(f"approve: {decided.status_code} {decided.text}")
    return calling(client, "peer__approve_me", arguments)


async def ask_rounds(
    http: httpx2.AsyncClient, deployed: Deployed, hub: Client, direct: Call
) -> tuple[Samples, Samples]:
    hub_samples, direct_samples = Samples(), Samples()
    for i in range(ASK_ROUNDS):
        ready = await approved_call(http, deployed, hub, i)
        hub_samples.times.append(await timed(ready))
        direct_samples.times.append(await timed(direct))
    return hub_samples, direct_samples


async def throughput(url: str, headers: dict[str, str] | None) -> float:
    """Calls per second from ``CLIENTS`` concurrent SDK clients (2026-07-28), closed loop."""
    counts = [0] * CLIENTS

    async def one(index: int) -> None:
        async with sdk_session(url, "auto", headers) as client:
            call = calling(client, "echo" if headers is None else "peer__echo", {"text": "x"})
            for _ in range(WARMUP):
                await call()
            until = time.perf_counter() + THROUGHPUT_SECONDS
            while time.perf_counter() < until:
                await call()
                counts[index] += 1

    await asyncio.gather(*(one(i) for i in range(CLIENTS)))
    return sum(counts) / THROUGHPUT_SECONDS


async def legacy_upstream(
    http: httpx2.AsyncClient, ports: tuple[int, int], deployed: Deployed, legacy_url: str
) -> None:
    """allow, with the hub reaching a handshake-only upstream (see the module docstring): the
    hub keeping its session (``ports[0]``) and a hub opening one per call (``ports[1]``)."""
    server = await http.get(
        deployed.setup.url("servers", "old"), headers=deployed.setup.admin.headers
    )
    if server.json()["data"]["era"] != "legacy":
        raise RuntimeError(
            f"the legacy-only peer was not reached in the handshake era: {server.text}"
        )
    kept_port, per_call_port = ports
    async with (
        sdk_session(
            f"http://127.0.0.1:{kept_port}{deployed.url}", "auto", deployed.headers
        ) as kept,
        sdk_session(
            f"http://127.0.0.1:{per_call_port}{deployed.url}", "auto", deployed.headers
        ) as per_call,
        sdk_session(legacy_url, "legacy") as direct,
    ):
        before = [cpu_seconds(pid_serving(port)) for port in ports]
        direct_s, kept_s, per_call_s = await interleaved(
            [
                calling(direct, "echo", {"text": "x"}),
                calling(kept, "old__echo", {"text": "x"}),
                calling(per_call, "old__echo", {"text": "x"}),
            ],
            ROUNDS,
        )
        cpu = [
            (cpu_seconds(pid_serving(port)) - b) / (WARMUP + ROUNDS)
            for port, b in zip(ports, before, strict=True)
        ]
    case = "allow, legacy upstream"
    row("2026-07-28", case, "direct", direct_s, None)
    row("2026-07-28", case, "hub", kept_s, direct_s)
    row("2026-07-28", case, "per-call", per_call_s, direct_s)
    print(
        f"{'2026-07-28':<11} {case:<{CASE}} hub CPU per call {cpu[0] * 1000:.2f} ms, "
        f"a session per call {cpu[1] * 1000:.2f} ms"
    )


async def bench_hub(ports: tuple[int, int], peer_url: str, legacy_url: str, db_url: str) -> None:
    port = ports[0]
    base = f"http://127.0.0.1:{port}"
    db = Database.from_url(db_url)
    try:
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            upstreams = [
                Upstream("peer", peer_url, allow_without_ask=["echo"]),
                Upstream("old", legacy_url, allow_without_ask=["echo"]),
            ]
            deployed = await deploy(http, db, upstreams)
            if db_url.startswith("postgresql"):  # autovacuum's work now, not during the runs
                await settle_postgres(db_url)
            header()
            for era, mode in ERAS.items():
                async with (
                    sdk_session(base + deployed.url, mode, deployed.headers) as hub,
                    sdk_session(peer_url, mode) as direct,
                ):
                    direct_echo = calling(direct, "echo", {"text": "x"})
                    cpu_before = cpu_seconds(pid_serving(port))
                    hub_s, direct_s = await interleaved(
                        [calling(hub, "peer__echo", {"text": "x"}), direct_echo], ROUNDS
                    )
                    cpu = (cpu_seconds(pid_serving(port)) - cpu_before) / (WARMUP + ROUNDS)
                    row(era, "allow", "direct", direct_s, None)
                    row(era, "allow", "hub", hub_s, direct_s)
                    print(f"{era:<11} {'allow':<{CASE}} hub CPU per call {cpu * 1000:.2f} ms")
                    ask_s, ask_direct = await ask_rounds(http, deployed, hub, direct_echo)
                    row(era, "ask, approved", "direct", ask_direct, None)
                    row(era, "ask, approved", "hub", ask_s, ask_direct)
            await legacy_upstream(http, ports, deployed, legacy_url)
            hub_rate = await throughput(base + deployed.url, deployed.headers)
            direct_rate = await throughput(peer_url, None)
            print(
                f"throughput, {CLIENTS} clients (allow, 2026-07-28): hub {hub_rate:,.0f} calls/s, "
                f"direct {direct_rate:,.0f} calls/s ({hub_rate / direct_rate:.2f}x)"
            )
    finally:
        await db.dispose()


async def bench_protocol(dispatcher_url: str, peer_url: str) -> None:
    print("protocol layer alone: the same echo tool, SDK client, no database, no upstream")
    header()
    for era, mode in ERAS.items():
        async with (
            sdk_session(dispatcher_url, mode) as ours,
            sdk_session(peer_url, mode) as theirs,
        ):
            ours_s, theirs_s = await interleaved(
                [calling(ours, "echo", {"text": "x"}), calling(theirs, "echo", {"text": "x"})],
                ROUNDS,
            )
        row(era, "echo", "sdk", theirs_s, None)
        row(era, "echo", "hub's", ours_s, theirs_s)


async def bench_floor(forward_port: int, peer_url: str) -> None:
    """The peer through a bare forwarding proxy (:mod:`bench._forward`) vs direct, both eras."""
    print(
        "floor: the peer through a bare forwarding proxy (uvicorn, FastAPI, httpx2; nothing else)"
    )
    header()
    forward_url = f"http://127.0.0.1:{forward_port}/mcp"
    for era, mode in ERAS.items():
        async with (
            sdk_session(forward_url, mode) as proxied,
            sdk_session(peer_url, mode) as direct,
        ):
            cpu_before = cpu_seconds(pid_serving(forward_port))
            proxied_s, direct_s = await interleaved(
                [calling(proxied, "echo", {"text": "x"}), calling(direct, "echo", {"text": "x"})],
                ROUNDS,
            )
            cpu = (cpu_seconds(pid_serving(forward_port)) - cpu_before) / (WARMUP + ROUNDS)
        row(era, "echo", "direct", direct_s, None)
        row(era, "echo", "proxy", proxied_s, direct_s)
        print(f"{era:<11} {'echo':<{CASE}} proxy CPU per call {cpu * 1000:.2f} ms")


def backend(label: str, db_url: str, workdir: Path, peer_url: str, legacy_url: str) -> None:
    env = hub_env(db_url, workdir)
    env.update(HUB_ALLOW_LOOPBACK="true", HUB_RATE_LIMITS="tool_call=off,rest=off")
    env.update(HUB_APPROVAL_WAIT_S="0", HUB_LOG_LEVEL="WARNING")
    argv = [sys.executable, "-m", "hub.cli", "serve", "--host", "127.0.0.1"]
    per_call = {**env, "HUB_UPSTREAM_SESSION_IDLE_S": "0"}  # the same hub, no session kept
    with (
        served(argv, env, workdir / f"{label}-hub.log") as port,
        served(argv, per_call, workdir / f"{label}-per-call-hub.log") as per_call_port,
    ):
        print(f"{label}: {ROUNDS} interleaved calls per era ({ASK_ROUNDS} for ask)")
        asyncio.run(bench_hub((port, per_call_port), peer_url, legacy_url, db_url))


def _session_setup(path: str, name: str, headers: dict[str, str] | None = None) -> Setup:
    """An SDK client (2026-07-28) on ``base + path`` calling ``name``, for the callgrind window."""

    async def setup(base: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
        stack = contextlib.AsyncExitStack()
        client = await stack.enter_async_context(sdk_session(base + path, "auto", headers))
        return calling(client, name, {"text": "x"}), stack.aclose

    return setup


def _hub_setup(db_url: str, peer_url: str) -> Setup:
    """A tenant, agent and deployment of the peer (``echo`` allowed), then its SDK client."""

    async def setup(base: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
        db = Database.from_url(db_url)
        try:
            async with httpx2.AsyncClient(base_url=base, timeout=120) as http:
                deployed = await deploy(
                    http, db, [Upstream("peer", peer_url, allow_without_ask=["echo"])]
                )
        finally:
            await db.dispose()
        if db_url.startswith("postgresql"):
            await settle_postgres(db_url)
        return await _session_setup(deployed.url, "peer__echo", deployed.headers)(base)

    return setup


def bench_instructions(workdir: Path, peer_url: str, pg: bool) -> None:
    """The hub's instructions per allowed call against the floor proxy's (both under callgrind,
    :mod:`bench._instructions`): the number to compare across commits, as times are not."""
    print(
        f"instructions per allowed call in the server process (callgrind, "
        f"{_instructions.COUNT} calls, "
        "2026-07-28, one SDK client)"
    )
    if not valgrind_present():
        print("skipped: valgrind is not installed")
        return
    forward = [sys.executable, "-m", "bench._forward", "--upstream", peer_url]
    [floor] = instructions_per_call(
        forward,
        hub_env("", workdir),
        REPO_ROOT,
        workdir,
        "forward",
        [_session_setup("/mcp", "echo")],
    )
    print(f"{'floor proxy':<22} {floor / 1e6:>8.3f} M")
    hub = [sys.executable, "-m", "hub.cli", "serve", "--host", "127.0.0.1"]
    urls = {"hub, SQLite": f"sqlite+aiosqlite:///{workdir / 'instructions.db'}"}
    if pg:
        urls["hub, PostgreSQL"] = PG_URL
    for label, db_url in urls.items():
        if db_url.startswith("postgresql"):
            fresh_postgres(db_url)
        upgrade(db_url)
        env = hub_env(db_url, workdir)
        env.update(HUB_ALLOW_LOOPBACK="true", HUB_RATE_LIMITS="tool_call=off,rest=off")
        env.update(HUB_LOG_LEVEL="WARNING")
        [cost] = instructions_per_call(
            hub, env, REPO_ROOT, workdir, label.split()[-1], [_hub_setup(db_url, peer_url)]
        )
        print(f"{label:<22} {cost / 1e6:>8.3f} M  {cost / floor:.2f}x the floor proxy")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        peer, peer_url = start_sdk_peer(workdir, TOOLS, mode="stateless-json", page_size=50)
        old, legacy_url = start_sdk_peer(
            workdir, TOOLS, mode="json", page_size=50, legacy_only=True
        )
        try:
            echo = [sys.executable, "-m", "bench._echo_dispatcher"]
            with served(echo, hub_env("", workdir), workdir / "echo.log") as port:
                asyncio.run(bench_protocol(f"http://127.0.0.1:{port}/mcp", peer_url))
            forward = [sys.executable, "-m", "bench._forward", "--upstream", peer_url]
            with served(forward, hub_env("", workdir), workdir / "forward.log") as port:
                asyncio.run(bench_floor(port, peer_url))
            sqlite_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
            upgrade(sqlite_url)
            backend("SQLite (file)", sqlite_url, workdir, peer_url, legacy_url)
            try:
                fresh_postgres(PG_URL)
            except (OSError, TimeoutError) as exc:
                print(f"PostgreSQL: skipped, {PG_URL} unreachable ({type(exc).__name__})")
                bench_instructions(workdir, peer_url, pg=False)
                return
            upgrade(PG_URL)
            backend("PostgreSQL", PG_URL, workdir, peer_url, legacy_url)
            bench_instructions(workdir, peer_url, pg=True)
        finally:
            for process in (peer, old):
                process.terminate()
                process.wait(timeout=10)


if __name__ == "__main__":
    main()
