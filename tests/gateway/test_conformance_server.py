"""The MCP conformance suite's SERVER scenarios against the agents' endpoint (issue 14, DESIGN §15).

The stack is real and on loopback only: the fixture upstream (``tests.peers.conformance_upstream``,
the official SDK server with the tools the scenarios call) in a subprocess; ``hub serve`` in a
subprocess on a fresh SQLite database (``hub db upgrade``, ``hub bootstrap``), reached through
its REST API to make a tenant, a tenant_admin, the agent, the server, its catalog, the grant and a
deployment (``tool_names: "plain"`` so the tools keep the names the scenarios call;
``allow_without_ask`` naming every tool so no call waits for an approval); and the test-only
:mod:`~tests.gateway.conformance_proxy` that adds the agent's key, whose origin is the hub's
``HUB_ALLOWED_ORIGINS`` (the ``dns-rebinding-protection`` scenario sends ``Origin``). Then, once
per requirement set::

    node tests/peers/node/node_modules/@modelcontextprotocol/conformance/dist/index.js server \\
        --url http://127.0.0.1:<proxy>/mcp --requirements <2026-07-28|2025-11-25> \\
        --expected-failures <tmp>/expected-failures.yaml -o <tmp>/results

where ``<tmp>/expected-failures.yaml`` is the runner's baseline (``server:`` and the ids alone)
written from ``tests/gateway/conformance-expected-failures-<set>.yaml``, whose every entry is an
``id`` with the ``reason`` the hub cannot pass it (:func:`expected_failure_entries`; checked
without Node by ``test_conformance_expectations.py``). The runner exits non-zero on a failure the
file does not list and on a listed entry that now passes (stale baseline); either fails the
test, which prints every failing check.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from tests.conftest import TEST_KEY, TEST_PEPPER
from tests.gateway.conformance_proxy import KeyAddingProxy, bind_loopback, serve_proxy
from tests.peers.conformance import CONFORMANCE_PACKAGE
from tests.peers.conformance_upstream import TOOLS
from tests.peers.fixtures import REPO_ROOT, ChildProcess, NodeTools

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
REQUIREMENT_SETS = ("2026-07-28", "2025-11-25")
HANDLE = "conformance"
RUN_TIMEOUT_S = 600.0
HUB_START_TIMEOUT_S = 30.0
LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def expected_failures(requirements: str) -> Path:
    """The requirement set's expected failures, each entry with its reason."""
    return HERE / f"conformance-expected-failures-{requirements}.yaml"


@dataclass(frozen=True)
class ExpectedFailure:
    """A whole scenario or ``scenario:check-id`` the hub is expected to fail, and why."""

    id: str
    reason: str


def expected_failure_entries(requirements: str) -> list[ExpectedFailure]:
    """The entries of :func:`expected_failures`, in order; a malformed file fails the test."""
    path = expected_failures(requirements)
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict), f"{path.name}: a mapping with 'server'"
    assert set(loaded) == {"server"}, f"{path.name}: only 'server' ({sorted(loaded)})"
    entries = loaded["server"]
    assert isinstance(entries, list), f"{path.name}: 'server' is a list"
    found = []
    for entry in entries:
        assert isinstance(entry, dict), f"{path.name}: {entry!r} is not {{id, reason}}"
        assert set(entry) == {"id", "reason"}, f"{path.name}: {entry!r} is not {{id, reason}}"
        assert isinstance(entry["id"], str), f"{path.name}: {entry!r}: id is not a string"
        assert isinstance(entry["reason"], str), f"{path.name}: {entry!r}: no reason"
        found.append(ExpectedFailure(entry["id"], entry["reason"]))
    return found


def runner_baseline(requirements: str, directory: Path) -> Path:
    """The runner's ``--expected-failures`` file (``server:`` with the ids alone)."""
    path = directory / "expected-failures.yaml"
    ids = [entry.id for entry in expected_failure_entries(requirements)]
    path.write_text(yaml.safe_dump({"server": ids}, sort_keys=False))
    return path


# ---------------------------------------------------------------------------- the hub process
@dataclass
class HubProcess:
    proc: asyncio.subprocess.Process
    url: str
    log: bytearray
    pump: asyncio.Task[None]

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the hub's log, without the access log."""
        kept = [
            line
            for line in self.log.decode(errors="replace").splitlines()
            if '"logger": "uvicorn.access"' not in line
        ]
        return "\n".join(kept[-lines:])

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        await self.pump


def hub_env(database: Path, allowed_origin: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        {
            "HUB_ENV": "development",
            "HUB_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
            "HUB_ENCRYPTION_KEYS": f"t1:{TEST_KEY}",
            "HUB_ACTIVE_KEY_ID": "t1",
            "HUB_API_KEY_PEPPER": TEST_PEPPER,
            "HUB_ALLOW_LOOPBACK": "true",
            "HUB_APPROVAL_WAIT_S": "0",
            "HUB_ALLOWED_ORIGINS": allowed_origin,
            "HUB_WORKERS": "false",
        }
    )
    return env


async def hub_command(env: dict[str, str], cwd: Path, *args: str) -> str:
    """``hub <args>`` to completion; its stdout (a failure fails the test with its stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hub.cli",
        *args,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"hub {' '.join(args)} exited {proc.returncode}:\n{err.decode()}"
    return out.decode()


async def start_hub(env: dict[str, str], cwd: Path) -> HubProcess:
    """``hub serve`` on an ephemeral loopback port, once uvicorn says where it listens."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hub.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    log = bytearray()
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def collect() -> None:
        assert proc.stderr is not None
        async for line in proc.stderr:
            log.extend(line)
            found = LISTENING.search(line.decode(errors="replace"))
            if found and not listening.done():
                listening.set_result(int(found.group(1)))
        if not listening.done():
            listening.set_exception(RuntimeError("hub serve exited before listening"))

    pump = asyncio.create_task(collect())
    try:
        port = await asyncio.wait_for(asyncio.shield(listening), HUB_START_TIMEOUT_S)
    except (TimeoutError, RuntimeError) as exc:
        hub = HubProcess(proc, "", log, pump)
        await hub.stop()
        pytest.fail(f"hub serve did not start ({exc!r}):\n{hub.log_tail()}")
    return HubProcess(proc, f"http://127.0.0.1:{port}", log, pump)


# ---------------------------------------------------------------------------- the deployment
async def _created(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 201, f"{response.request.url}: {response.text}"
    data: dict[str, Any] = response.json()["data"]
    return data


@dataclass
class Deployment:
    path: str
    agent_key: str
    tools: list[str] = field(default_factory=list)


async def build_deployment(hub_url: str, platform_key: str, upstream_url: str) -> Deployment:
    """Tenant → tenant_admin → agent → server → catalog → grant → deployment, through REST."""
    async with httpx2.AsyncClient(base_url=hub_url, timeout=30, trust_env=False) as api:
        platform = {"authorization": f"Bearer {platform_key}"}
        tenant = await _created(
            await api.post(
                "/tenants", json={"slug": "conformance", "name": "Conformance"}, headers=platform
            )
        )
        base = f"/tenants/{tenant['id']}"
        admin_row = await _created(
            await api.post(
                f"{base}/principals",
                json={"kind": "user", "name": "admin", "role": "tenant_admin"},
                headers=platform,
            )
        )
        admin_key = await _created(
            await api.post(f"{base}/principals/{admin_row['id']}/keys", json={}, headers=platform)
        )
        admin = {"authorization": f"Bearer {admin_key['key']}"}
        agent_row = await _created(
            await api.post(
                f"{base}/principals", json={"kind": "agent", "name": "agent"}, headers=admin
            )
        )
        agent_key = await _created(
            await api.post(f"{base}/principals/{agent_row['id']}/keys", json={}, headers=admin)
        )
        await _created(
            await api.post(
                f"{base}/servers", json={"handle": HANDLE, "url": upstream_url}, headers=admin
            )
        )
        catalog = await _created(await api.post(f"{base}/servers/{HANDLE}/catalogs", headers=admin))
        names = [tool["name"] for tool in catalog["tools"]]
        await _created(
            await api.post(
                f"{base}/grants",
                json={
                    "principal_id": agent_row["id"],
                    "resource": f"tool:{HANDLE}.*",
                    "action": "call",
                    "effect": "allow",
                },
                headers=admin,
            )
        )
        entry = {
            "server": HANDLE,
            "catalog_version": catalog["version"],
            "allow_without_ask": names,
            "arguments": "strict",
            "tool_names": "plain",
        }
        deployment = await _created(
            await api.post(
                f"{base}/deployments",
                json={"agent_id": agent_row["id"], "entries": [entry]},
                headers=admin,
            )
        )
    return Deployment(f"{base}/deployments/{deployment['id']}/mcp", agent_key["key"], names)


# ---------------------------------------------------------------------------- the runner
@dataclass(frozen=True)
class RunnerResult:
    requirements: str
    command: list[str]
    exit_code: int
    stdout: str
    stderr: str
    out_dir: Path
    seconds: float

    def checks(self) -> dict[str, list[dict[str, Any]]]:
        """Scenario → its checks (the newest result folder of each scenario)."""
        found: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        for path in self.out_dir.glob("*/checks.json"):
            matched = RESULT_DIR.match(path.parent.name)
            if matched is None:
                continue
            scenario, mtime = matched.group("scenario"), path.stat().st_mtime
            if scenario not in found or found[scenario][0] < mtime:
                found[scenario] = (mtime, json.loads(path.read_text()))
        return {scenario: checks for scenario, (_, checks) in sorted(found.items())}

    def failing(self) -> list[str]:
        """``scenario:check-id STATUS message`` for every failed or warned check."""
        return [
            f"{scenario}:{check.get('id')} {check.get('status')} "
            f"{(check.get('errorMessage') or '')[:300]}"
            for scenario, checks in self.checks().items()
            for check in checks
            if check.get("status") in ("FAILURE", "WARNING")
        ]

    def report(self) -> str:
        summary = self.stdout[self.stdout.find("=== SUMMARY") :] if self.stdout else ""
        return "\n".join(
            [
                f"$ {' '.join(self.command)}",
                f"exit {self.exit_code} after {self.seconds:.1f} s",
                "--- failing checks (listed or not) ---",
                *self.failing(),
                "--- runner summary ---",
                summary[-8000:],
                "--- runner stderr ---",
                self.stderr[-3000:],
            ]
        )


async def run_server_suite(
    tools: NodeTools, url: str, requirements: str, workdir: Path
) -> RunnerResult:
    out_dir = workdir / "results"
    out_dir.mkdir()
    command = [
        str(tools.node),
        str(tools.package_entry(CONFORMANCE_PACKAGE)),
        "server",
        "--url",
        url,
        "--requirements",
        requirements,
        "--expected-failures",
        str(runner_baseline(requirements, workdir)),
        "-o",
        str(out_dir),
    ]
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *command,
        cwd=tools.directory,
        env={k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
    return RunnerResult(
        requirements,
        command,
        proc.returncode if proc.returncode is not None else -1,
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        out_dir,
        time.monotonic() - started,
    )


# ---------------------------------------------------------------------------- the stack
@dataclass
class Stack:
    url: str
    hub: HubProcess
    upstream: ChildProcess
    proxy: KeyAddingProxy
    deployment: Deployment

    def diagnostics(self) -> str:
        return "\n".join(
            [
                f"proxy {self.url} → hub {self.hub.url}{self.deployment.path} "
                f"({self.proxy.requests} requests forwarded); tools: {self.deployment.tools}",
                "--- hub log (tail) ---",
                self.hub.log_tail(),
                "--- upstream output (tail) ---",
                "\n".join(self.upstream.output().splitlines()[-30:]),
            ]
        )


@pytest.fixture(scope="module")
async def stack(
    node_tools: NodeTools, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    workdir = tmp_path_factory.mktemp("conformance-server")
    upstream = await ChildProcess.start(
        [sys.executable, "-m", "tests.peers.conformance_upstream", "--port", "0"], cwd=REPO_ROOT
    )
    sock = bind_loopback()
    origin = "http://{}:{}".format(*sock.getsockname()[:2])
    hub: HubProcess | None = None
    try:
        env = hub_env(workdir / "hub.db", origin)
        await hub_command(env, workdir, "db", "upgrade")
        platform_key = (await hub_command(env, workdir, "bootstrap")).strip()
        hub = await start_hub(env, workdir)
        deployment = await build_deployment(
            hub.url, platform_key, f"http://127.0.0.1:{upstream.port}/mcp"
        )
        assert sorted(deployment.tools) == sorted(tool["name"] for tool in TOOLS), (
            "the catalog lost a fixture tool"
        )
        proxy = KeyAddingProxy(f"{hub.url}{deployment.path}", deployment.agent_key)
        async with serve_proxy(proxy, sock) as url:
            assert url == f"{origin}/mcp"
            yield Stack(url, hub, upstream, proxy, deployment)
    finally:
        sock.close()
        if hub is not None:
            await hub.stop()
        await upstream.stop()


@pytest.mark.parametrize("requirements", REQUIREMENT_SETS)
async def test_server_scenarios_pass_or_are_expected_failures(
    stack: Stack,
    node_tools: NodeTools,
    tmp_path: Path,
    requirements: str,
) -> None:
    result = await run_server_suite(node_tools, stack.url, requirements, tmp_path)
    assert result.checks(), f"no results written\n{result.report()}\n{stack.diagnostics()}"
    assert result.exit_code == 0, f"{result.report()}\n{stack.diagnostics()}"
