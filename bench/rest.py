"""The REST request path: the hub's authenticated routes against bare FastAPI routes.

Two cases, each on SQLite (a file) and on PostgreSQL (database ``hub_bench`` on 127.0.0.1:5432,
emptied, migrated, seeded and then vacuumed, analysed and checkpointed, so that autovacuum's
work on the new schema does not fall in the runs; served as the tests' non-owner app role so
row-level security applies; skipped when unreachable):

- ``GET /tenants/{t}/servers/{handle}`` as a tenant_admin;
- ``POST /tenants/{t}/grants/check`` by an operator holding 1,000 grants, about itself (its
  ``grants_version`` comes with its key: one query);
- the same check asked by the tenant_admin about that operator (the operator's
  ``grants_version`` is read too: two queries).

The hub runs as ``hub serve`` in a subprocess (on PostgreSQL also as ``hub serve --workers 2``);
the baseline is ``bench._bare`` (the same paths answered by plain FastAPI routes, no database)
under the same uvicorn options and logging. All stay up for the whole backend; the runs
alternate bare, hub, bare, hub… so machine noise falls on each. Load comes from wrk when it is
on PATH (:mod:`bench._wrk`; Debian's ``wrk`` package), else from :mod:`bench._load`:
``CONNECTIONS`` keep-alive connections, closed loop, ``SECONDS`` per run after a warm-up. The
table's title says which. Printed: the median req/s over ``ROUNDS`` runs, p50/p99 (over every
request of those runs; with wrk, the median of the runs' own), the ratio hub/bare, and two
workers against one; and each server's CPU time per
response (from ``/proc``, its worker processes included) with the ratio bare/hub of those: on a
machine shared with other work the rates move with its load, the CPU per request far less (the
database server's own CPU is not counted). Then each case's instructions per request in the
bare server and in the hub (one worker), counted by callgrind over sequential requests
(:mod:`bench._instructions`), which the machine's load does not move at all: the ratio bare/hub
of those is the one to compare across commits. A report, not a test: ``python -m bench rest``;
``BENCH_REST_BACKENDS=sqlite`` (or ``postgresql``) runs one backend, ``BENCH_REST_WORKERS=1``
leaves out the two-worker server.

On PostgreSQL each hub process keeps ``PG_POOL_SIZE`` connections (the default of
``HUB_DATABASE_POOL_SIZE``) and opens at most as many more: with two workers, 40 of the server's
100. A smaller pool under sixteen connections' load measures the pool's overflow instead of the
request path: its connections are opened and closed again around single reads (with 4, half
the rate and 3x the p99 on the GET).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2

from bench import _instructions as _instructions_module
from bench._instructions import Setup, instructions_per_call, valgrind_present
from bench._load import LoadResult, build_request, run_load
from bench._peer import REPO_ROOT
from bench._serving import cpu_seconds, hub_env, pid_serving, served
from bench._wrk import available, run_wrk
from hub.core import clock
from hub.core.db import Database
from hub.core.migrations import upgrade
from hub.grants.repository import bump_grants_version
from hub.grants.templates import ROLE_TEMPLATES
from hub.models import Grant
from tests.support.databases import fresh_postgres, prepare_app_role, settle_postgres
from tests.support.factories import make_principal, make_server, make_tenant, scope_of

CONNECTIONS = 16
Call = Callable[[], Awaitable[None]]
SECONDS = 4.0
ROUNDS = 3
WARMUP_SECONDS = 1.0
GRANTS = 1_000
OPERATOR_TEMPLATE = ROLE_TEMPLATES["operator"]
WORKERS_LABEL = "hub --workers 2"
PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/hub_bench"
#: as bench.gateway: one principal at hundreds of requests a second is far over any real limit
REST_LIMIT = "rest=off"
PG_POOL_SIZE = 10


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    headers: dict[str, str]
    body: object = None

    def request(self) -> bytes:
        return build_request(self.method, self.path, headers=self.headers, body=self.body)


async def _seed(db_url: str) -> list[Case]:
    """A tenant with a server, its tenant_admin, and an operator holding ``GRANTS`` grants."""
    db = Database.from_url(db_url)
    try:
        tenant = await make_tenant(db)
        admin = await make_principal(db, tenant.id)
        await make_server(db, tenant.id, "linear")
        operator = await make_principal(db, tenant.id, role="operator", name="operator")
        async with db.session() as session:
            for i in range(GRANTS - len(OPERATOR_TEMPLATE)):
                session.add(
                    Grant(
                        id=uuid.uuid4(),
                        tenant_id=tenant.id,
                        principal_id=operator.principal_id,
                        resource=f"tool:srv{i}.tool{i}" if i % 2 else f"tool:srv{i}.*",
                        action="call",
                        effect="allow" if i % 5 else "deny",
                        conditions={},
                        created_at=clock.now(),
                    )
                )
            await session.flush()
            await bump_grants_version(session, scope_of(tenant.id), operator.principal_id)
    finally:
        await db.dispose()
    base = f"/tenants/{tenant.id}"
    check = {
        "principal_id": str(operator.principal_id),
        "resource": "tool:srv501.tool501",
        "action": "call",
    }
    return [
        Case("GET server (tenant_admin)", "GET", f"{base}/servers/linear", admin.headers),
        Case(
            "grants/check (1,000 grants)", "POST", f"{base}/grants/check", operator.headers, check
        ),
        Case("grants/check, asked by admin", "POST", f"{base}/grants/check", admin.headers, check),
    ]


@dataclass
class Row:
    results: list[LoadResult]

    @property
    def rate(self) -> float:
        return statistics.median(r.rate for r in self.results)

    @property
    def cpu_per_request(self) -> float:
        """Median over the runs of the server's CPU seconds per response."""
        return statistics.median(r.cpu / r.completed if r.completed else 0.0 for r in self.results)

    def percentile(self, q: float) -> float:
        """Over every request of the runs; with wrk (no per-request list) the median of the
        runs' own quantiles."""
        if any(q in r.quantiles for r in self.results):
            return statistics.median(r.percentile(q) for r in self.results)
        merged = LoadResult(seconds=1, latencies=[x for r in self.results for x in r.latencies])
        return merged.percentile(q)


def _load(port: int, case: Case, seconds: float) -> LoadResult:
    wrk = available()
    if wrk is None:
        return asyncio.run(run_load(port, case.request(), connections=CONNECTIONS, seconds=seconds))
    return run_wrk(
        wrk,
        port,
        case.method,
        case.path,
        headers=case.headers,
        body=case.body,
        connections=CONNECTIONS,
        seconds=seconds,
    )


def _measure(port: int, case: Case, expected: int) -> LoadResult:
    pid = pid_serving(port)
    before = cpu_seconds(pid)
    result = _load(port, case, SECONDS)
    result.cpu = cpu_seconds(pid) - before
    wrong = {s: n for s, n in result.statuses.items() if s != expected}
    if wrong or result.errors:
        raise RuntimeError(f"{case.name}: statuses {result.statuses}, errors {result.errors}")
    return result


def _print_table(title: str, rows: dict[str, dict[str, Row]]) -> None:
    print(title)
    print(
        f"{'case':<30} {'server':<18} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'hub/bare':>9}"
        f" {'CPU us/req':>11} {'bare/hub CPU':>12}"
    )
    for case, servers in rows.items():
        bare = servers["bare"].rate
        bare_cpu = servers["bare"].cpu_per_request
        label_case = case
        for label, row in servers.items():
            ratio = "" if label == "bare" else f"{row.rate / bare:.2f}"
            cpu = row.cpu_per_request
            cpu_ratio = "" if label == "bare" or not cpu else f"{bare_cpu / cpu:.2f}"
            print(
                f"{label_case:<30} {label:<18} {row.rate:>9,.0f} {row.percentile(0.5) * 1000:>8.2f}"
                f" {row.percentile(0.99) * 1000:>8.2f} {ratio:>9} {cpu * 1e6:>11,.0f}"
                f" {cpu_ratio:>12}"
            )
            label_case = ""
        if WORKERS_LABEL in servers:
            scale = servers[WORKERS_LABEL].rate / servers["hub"].rate
            print(f"{'':<30} {'2 workers / 1':<18} {scale:>9.2f}x")


def _bench_backend(
    label: str, db_url: str, workdir: Path, *, workers: bool, serve_url: str | None = None
) -> None:
    """Alternate bare, hub (and the hub with two workers) on each case, ``ROUNDS`` times.

    The rows are seeded on ``db_url`` (the owner's); the hub serves on ``serve_url`` (on
    PostgreSQL the app's role, under row-level security, as deployed). The ``rest`` rate limit
    is off: one principal at this rate is over any limit, and a limit set high enough would
    measure a moving window of hundreds of thousands of entries."""
    cases = asyncio.run(_seed(db_url))
    if serve_url is not None:  # PostgreSQL: autovacuum's work done now, not during the runs
        asyncio.run(settle_postgres(db_url))
    env = hub_env(serve_url or db_url, workdir)
    env["HUB_RATE_LIMITS"] = REST_LIMIT
    if serve_url is not None:
        env["HUB_DATABASE_POOL_SIZE"] = str(PG_POOL_SIZE)
    hub_argv = [sys.executable, "-m", "hub.cli", "serve", "--host", "127.0.0.1"]
    servers = {
        "bare": [sys.executable, "-m", "bench._bare"],
        "hub": hub_argv,
        **({WORKERS_LABEL: [*hub_argv, "--workers", "2"]} if workers and _two_workers() else {}),
    }
    rows = {c.name: {name: Row([]) for name in servers} for c in cases}
    with contextlib.ExitStack() as stack:
        ports = {
            name: stack.enter_context(served(argv, env, workdir / f"{label}-{name}.log"))
            for name, argv in servers.items()
        }
        for case in cases:  # warm-up, not counted (wrk has none of its own)
            for port in ports.values():
                _load(port, case, WARMUP_SECONDS)
        for _ in range(ROUNDS):
            for case in cases:
                for name, port in ports.items():
                    rows[case.name][name].results.append(_measure(port, case, 200))
    generator = "wrk, one thread" if available() else "bench._load (Python; wrk not found)"
    _print_table(
        f"{label}: {CONNECTIONS} connections, {SECONDS:g} s a run, median of {ROUNDS} "
        f"alternating runs; load from {generator}",
        rows,
    )
    _instructions(label, cases, servers, env, workdir)


def _request_setup(case: Case) -> Setup:
    """``case`` on one keep-alive ``httpx2`` client, for a callgrind window (200 expected)."""

    async def setup(base: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
        http = httpx2.AsyncClient(base_url=base, headers=case.headers, timeout=120)

        async def call() -> None:
            answer = await http.request(case.method, case.path, json=case.body)
            if answer.status_code != 200:
                raise RuntimeError(f"{case.name}: {answer.status_code} {answer.text[:200]}")

        return call, http.aclose

    return setup


def _instructions(
    label: str, cases: list[Case], servers: dict[str, list[str]], env: dict[str, str], workdir: Path
) -> None:
    """Each case's instructions per request in the bare server and the hub (one worker), under
    callgrind (:mod:`bench._instructions`): the ratio bare/hub to compare across commits."""
    print(
        f"{label}: instructions per request in the server process (callgrind, "
        f"{_instructions_module.COUNT} sequential requests on one connection)"
    )
    if not valgrind_present():
        print("skipped: valgrind is not installed")
        return
    setups = [_request_setup(case) for case in cases]
    counts = {
        name: instructions_per_call(servers[name], env, REPO_ROOT, workdir, f"rest-{name}", setups)
        for name in ("bare", "hub")
    }
    print(f"{'case':<30} {'bare M':>8} {'hub M':>8} {'bare/hub':>9}")
    for i, case in enumerate(cases):
        bare, hub = counts["bare"][i], counts["hub"][i]
        print(f"{case.name:<30} {bare / 1e6:>8.3f} {hub / 1e6:>8.3f} {bare / hub:>9.2f}")


def _two_workers() -> bool:
    return os.environ.get("BENCH_REST_WORKERS", "1,2") != "1"


def _backends() -> set[str]:
    return set(os.environ.get("BENCH_REST_BACKENDS", "sqlite,postgresql").split(","))


def main() -> None:
    backends = _backends()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if "sqlite" in backends:
            sqlite_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
            upgrade(sqlite_url)
            _bench_backend("SQLite (file)", sqlite_url, workdir, workers=False)
        if "postgresql" not in backends:
            return
        try:
            fresh_postgres(PG_URL)
        except (OSError, TimeoutError) as exc:
            print(f"PostgreSQL: skipped, {PG_URL} unreachable ({type(exc).__name__})")
            return
        upgrade(PG_URL)
        app_url = prepare_app_role(PG_URL)
        _bench_backend(
            "PostgreSQL (app role, RLS)", PG_URL, workdir, workers=True, serve_url=app_url
        )


if __name__ == "__main__":
    main()
