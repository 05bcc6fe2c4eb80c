"""Pytest fixtures that start real and scriptable MCP peers on loopback.

Use them from any test package by importing them into its ``conftest.py``::

    from tests.peers.fixtures import everything_peer, handmade_peer, node_tools, sdk_peer

    __all__ = ["everything_peer", "handmade_peer", "node_tools", "sdk_peer"]

- ``sdk_peer`` → ``start(mode, tools=None, page_size=None, *, sieve=False, retry_ms=None,
  legacy_only=False) -> SdkPeer``: the official Python SDK server in a subprocess
  (``tests.peers.sdk_server``; modes ``sse``, ``stateless``, ``json``, ``stateless-json``;
  ``legacy_only``: it refuses the 2026-07-28 wire, so it is reached in the handshake era).
  ``tools=None`` serves ``default_tools()``.
- ``handmade_peer`` → ``start(**knobs) -> HandmadePeer``: the scriptable peer of
  ``tests.peers.handmade``, in the test's event loop.
- ``everything_peer`` → ``EverythingPeer`` (``.url``): ``@modelcontextprotocol/server-everything``
  in ``streamableHttp`` mode (legacy eras only).
- ``oauth_peers`` → ``start(auth={…}, guard={…}, **knobs) -> OAuthPeers``: the scriptable
  authorization server of ``tests.peers.oauth_server`` and a handmade peer it protects;
- ``node_tools`` (session) → ``NodeTools``: the project-local Node 22 and packages; skips when npm
  is missing, or fails when ``HUB_TEST_REQUIRE_NODE=1``.

Every peer is stopped at the end of the test that started it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.peers.handmade import HandmadePeer
from tests.peers.oauth_server import AuthServer, protect
from tests.support.forkserver import ForkServer, fork_server

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = Path(__file__).resolve().parent / "node"
READY = re.compile(rb"HUB_PEER_LISTENING (\d+)")
STARTUP_TIMEOUT = 20.0

Tool = dict[str, Any]


# ---------------------------------------------------------------------------- tool sets
def default_tools() -> list[Tool]:
    """A small, varied tool set.

    ``echo``, ``add`` (integer params), ``delete_record`` (outputSchema, annotations with
    destructiveHint, ``_meta``), ``fail`` and ``search_region`` (an ``x-mcp-header`` property).
    """
    return [
        {
            "name": "echo",
            "title": "Echo",
            "description": "Returns its arguments.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
        {
            "name": "add",
            "description": "Adds two integers.",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
        {
            "name": "delete_record",
            "description": "Deletes a record (a destructive tool with an output schema).",
            "inputSchema": {
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
            },
            "annotations": {
                "title": "Delete record",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "_meta": {"example.com/owner": "records-team"},
        },
        {
            "name": "fail",
            "description": "Always fails with isError: true.",
            "inputSchema": {"type": "object", "additionalProperties": False},
        },
        {
            "name": "search_region",
            "description": "Searches one region (its region parameter is mirrored into a header).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"},
                },
                "required": ["region", "query"],
            },
        },
    ]


def many_tools(n: int, prefix: str = "tool") -> list[Tool]:
    """``n`` tools with distinct, zero-padded (so sorted) names."""
    width = len(str(max(n - 1, 0)))
    return [
        {
            "name": f"{prefix}_{i:0{width}d}",
            "description": f"Generated tool number {i}.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }
        for i in range(n)
    ]


# ---------------------------------------------------------------------------- subprocesses
class ChildProcess:
    """A peer subprocess whose stdout+stderr are collected in memory (``output()``)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._output = bytearray()
        self._ready = asyncio.Event()
        self.port: int | None = None
        self._pump = asyncio.create_task(self._collect())

    @classmethod
    async def start(
        cls, argv: list[str], env: dict[str, str] | None = None, cwd: Path = REPO_ROOT
    ) -> ChildProcess:
        """Start ``argv`` and wait for its ``HUB_PEER_LISTENING <port>`` line and open port."""
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
        )
        child = cls(proc)
        try:
            async with asyncio.timeout(STARTUP_TIMEOUT):
                await child._ready.wait()
            if child.port is None:
                raise RuntimeError("exited before listening")
            _, writer = await asyncio.open_connection("127.0.0.1", child.port)
            writer.close()
            await writer.wait_closed()
        except (TimeoutError, RuntimeError, OSError) as exc:
            await child.stop()
            pytest.fail(
                f"{argv[:3]} did not start ({exc!r}, exit {proc.returncode}):\n{child.output()}"
            )
        return child

    async def _collect(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            self._output += line
            found = READY.search(line)
            if found and self.port is None:
                self.port = int(found.group(1))
                self._ready.set()
        self._ready.set()

    def output(self) -> str:
        return self._output.decode(errors="replace")

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        await self._pump


# ---------------------------------------------------------------------------- SDK peer
@dataclass
class SdkPeer:
    """The official SDK server, running. Edit ``tools_file`` (or ``set_tools``) at any time."""

    url: str
    mode: str
    tools_file: Path
    process: ChildProcess

    def set_tools(self, tools: list[Tool]) -> None:
        """Replace the served tools; the next ``tools/list`` sees them (atomic write)."""
        tmp = self.tools_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(tools), encoding="utf-8")
        tmp.replace(self.tools_file)

    def log(self) -> str:
        """The server's output so far (stdout and stderr)."""
        return self.process.output()


SdkPeerStarter = Callable[..., Awaitable[SdkPeer]]


@pytest.fixture(scope="session")
def sdk_peer_forks() -> Iterator[ForkServer]:
    """The SDK peer's module imported once per test process (``tests.support.forkserver``):
    each :func:`sdk_peer` is a fork of it, started in milliseconds instead of the 1.5-2 s an
    import of the SDK server costs. The peer is the same program run the same way (``python -m
    tests.peers.sdk_server …`` as ``__main__``); stopping it ends the fork."""
    with fork_server("tests.peers.sdk_server") as server:
        yield server


@pytest.fixture
async def sdk_peer(
    tmp_path_factory: pytest.TempPathFactory, sdk_peer_forks: ForkServer
) -> AsyncIterator[SdkPeerStarter]:
    """Factory: ``await sdk_peer(mode, tools=None, page_size=None, *, sieve=False,
    retry_ms=None, legacy_only=False) -> SdkPeer``."""
    started: list[SdkPeer] = []

    async def start(
        mode: str,
        tools: list[Tool] | None = None,
        page_size: int | None = None,
        *,
        sieve: bool = False,
        retry_ms: int | None = None,
        legacy_only: bool = False,
    ) -> SdkPeer:
        workdir = tmp_path_factory.mktemp("sdk-peer")
        tools_file = workdir / "tools.json"
        tools_file.write_text(json.dumps(default_tools() if tools is None else tools))
        argv = [*sdk_peer_forks.argv, "--mode", mode, "--port", "0"]
        argv += ["--tools-file", str(tools_file)]
        if page_size is not None:
            argv += ["--page-size", str(page_size)]
        if sieve:
            argv.append("--sieve")
        if retry_ms is not None:
            argv += ["--retry-ms", str(retry_ms)]
        if legacy_only:
            argv.append("--legacy-only")
        child = await ChildProcess.start(argv)
        peer = SdkPeer(f"http://127.0.0.1:{child.port}/mcp", mode, tools_file, child)
        started.append(peer)
        return peer

    try:
        yield start
    finally:
        for peer in started:
            await peer.process.stop()


# ---------------------------------------------------------------------------- handmade peer
HandmadePeerStarter = Callable[..., Awaitable[HandmadePeer]]


@pytest.fixture
async def handmade_peer() -> AsyncIterator[HandmadePeerStarter]:
    """Factory: ``await handmade_peer(host="127.0.0.1", **knobs) -> HandmadePeer``."""
    started: list[HandmadePeer] = []

    async def start(host: str = "127.0.0.1", **knobs: Any) -> HandmadePeer:
        peer = HandmadePeer(**knobs)
        await peer.start(host)
        started.append(peer)
        return peer

    try:
        yield start
    finally:
        for peer in started:
            await peer.stop()


# ---------------------------------------------------------------------------- OAuth peers
@dataclass
class OAuthPeers:
    """An authorization server and a handmade MCP peer protected by its tokens."""

    auth: AuthServer
    peer: HandmadePeer


OAuthPeersStarter = Callable[..., Awaitable[OAuthPeers]]


@pytest.fixture
async def oauth_peers() -> AsyncIterator[OAuthPeersStarter]:
    """Factory: ``await oauth_peers(auth={AuthKnobs}, guard={protect() options}, **peer_knobs)``
    (the peer is ``era="modern"`` unless a knob says otherwise)."""
    started: list[OAuthPeers] = []

    async def start(
        *, auth: dict[str, Any] | None = None, guard: dict[str, Any] | None = None, **peer: Any
    ) -> OAuthPeers:
        server = await AuthServer(**(auth or {})).start()
        started.append(OAuthPeers(server, HandmadePeer(**{"era": "modern", **peer})))
        await started[-1].peer.start()
        protect(started[-1].peer, server, **(guard or {}))
        return started[-1]

    try:
        yield start
    finally:
        for made in started:
            await made.peer.stop()
            await made.auth.stop()


# ---------------------------------------------------------------------------- Node peers
@dataclass(frozen=True)
class NodeTools:
    """The project-local Node toolchain of ``tests/peers/node``."""

    directory: Path

    @property
    def node(self) -> Path:
        """Node 22 (from the ``node`` npm package)."""
        return self.directory / "node_modules" / ".bin" / "node"

    def package_entry(self, package: str) -> Path:
        return self.directory / "node_modules" / package / "dist" / "index.js"


def ensure_node_tools() -> NodeTools:
    """Run ``tests/peers/node/setup.sh`` (a no-op when installed); skip or fail if impossible."""
    required = os.environ.get("HUB_TEST_REQUIRE_NODE") == "1"

    def unavailable(reason: str) -> NodeTools:
        if required:
            pytest.fail(f"Node tools are required (HUB_TEST_REQUIRE_NODE=1) but {reason}")
        pytest.skip(f"Node tools unavailable: {reason} (run tests/peers/node/setup.sh)")

    if shutil.which("npm") is None and not (NODE_DIR / "node_modules" / ".hub-installed").exists():
        return unavailable("npm is not on PATH")
    done = subprocess.run(
        ["bash", str(NODE_DIR / "setup.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return unavailable(f"setup.sh failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return NodeTools(NODE_DIR)


@pytest.fixture(scope="session")
def node_tools() -> NodeTools:
    return ensure_node_tools()


@dataclass
class EverythingPeer:
    url: str
    process: ChildProcess

    def log(self) -> str:
        return self.process.output()


@pytest.fixture
async def everything_peer(node_tools: NodeTools) -> AsyncIterator[EverythingPeer]:
    """``@modelcontextprotocol/server-everything`` (streamableHttp, sessions, SSE answers).

    It speaks only the handshake eras (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05,
    2024-10-07; anything else is counter-offered 2025-11-25) and answers a modern request with
    400 ``-32000`` "Bad Request: Server not initialized".
    """
    entry = node_tools.package_entry("@modelcontextprotocol/server-everything")
    argv = [str(node_tools.node), "--require", str(NODE_DIR / "loopback.cjs"), str(entry)]
    env = {**os.environ, "PORT": "0", "HUB_PEER_HOST": "127.0.0.1"}
    child = await ChildProcess.start([*argv, "streamableHttp"], env=env, cwd=NODE_DIR)
    try:
        yield EverythingPeer(f"http://127.0.0.1:{child.port}/mcp", child)
    finally:
        await child.stop()
