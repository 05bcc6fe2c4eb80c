"""``hub mcp probe`` and ``hub mcp call`` against handmade peers.

The commands run in a worker thread (each runs its own event loop, as from a shell) while the
peer serves in the test's loop; one test runs the real ``hub`` entry point in a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from hub.cli.mcp import mcp_app
from hub.core import portable_json
from hub.core.settings import get_settings
from tests.mcp.support import TOOLS
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import Reply

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``HUB_ALLOW_LOOPBACK=true`` for the commands (their settings are read afresh)."""
    monkeypatch.setenv("HUB_ALLOW_LOOPBACK", "true")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


async def hub_mcp(*args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner()
    return await asyncio.to_thread(lambda: runner.invoke(mcp_app, list(args), env=env))


@pytest.fixture
async def peer(handmade_peer: HandmadePeerStarter) -> HandmadePeer:
    bad = {
        "name": "bad_header",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
        },
    }
    return await handmade_peer(era="dual", tools=[*TOOLS, bad])


@pytest.mark.usefixtures("loopback")
async def test_probe_prints_era_version_server_and_tools(peer: HandmadePeer) -> None:
    done = await hub_mcp("probe", peer.url)
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "era       modern",
        "protocol  2026-07-28",
        "server    handmade-peer 0.1.0",
        "tools     3 (dropped 1)",
    ]
    assert lines[5].split() == ["NAME", "PARAMETERS", "DESCRIPTION"]
    assert lines[6].split() == ["echo", "text", "Echoes."]
    assert lines[7].split()[:2] == ["search_region", "region,"]
    assert lines[-1] == "dropped   bad_header: invalid_x_mcp_header"


@pytest.mark.usefixtures("loopback")
async def test_probe_json_carries_the_raw_discovery(peer: HandmadePeer) -> None:
    done = await hub_mcp("probe", peer.url, "--json", "--protocol-version", "2025-06-18")
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["era"] == "legacy"
    assert found["protocol_version"] == "2025-06-18"
    assert found["server_info"] == {"name": "handmade-peer", "version": "0.1.0"}
    assert found["capabilities"] == {"tools": {}}
    assert found["instructions"] == "A scriptable test peer."
    assert found["tools"] == TOOLS
    assert found["dropped_tools"] == [{"name": "bad_header", "reason": "invalid_x_mcp_header"}]


@pytest.mark.usefixtures("loopback")
async def test_the_bearer_comes_from_the_named_environment_variable(peer: HandmadePeer) -> None:
    done = await hub_mcp(
        "probe", peer.url, "--bearer-env", "PEER_TOKEN", env={"PEER_TOKEN": "tok-123456"}
    )
    assert done.exit_code == 0, done.output
    assert {r.headers.get("authorization") for r in peer.requests} == {"Bearer tok-123456"}

    missing = await hub_mcp("probe", peer.url, "--bearer-env", "NO_SUCH_TOKEN_VAR")
    assert missing.exit_code == 2
    assert "NO_SUCH_TOKEN_VAR is not set" in missing.stderr


@pytest.mark.usefixtures("loopback")
async def test_call_prints_the_raw_result_and_mirrors_headers(peer: HandmadePeer) -> None:
    arguments = {"region": "eu", "limit": 3, "query": "q"}
    done = await hub_mcp("call", peer.url, "search_region", "--arguments", json.dumps(arguments))
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["structuredContent"] == arguments
    (sent,) = peer.rpc_requests("tools/call")
    assert (sent.headers["mcp-param-region"], sent.headers["mcp-param-limit"]) == ("eu", "3")


@pytest.mark.usefixtures("loopback")
async def test_call_exits_1_on_an_error_result(peer: HandmadePeer) -> None:
    done = await hub_mcp("call", peer.url, "fail", "--protocol-version", "2025-11-25")
    assert done.exit_code == 1
    assert json.loads(done.stdout)["isError"] is True


@pytest.mark.usefixtures("loopback")
async def test_call_failures_exit_2_with_the_hubs_message_and_reason(peer: HandmadePeer) -> None:
    unknown = await hub_mcp("call", peer.url, "nope")
    assert unknown.exit_code == 2
    assert unknown.stderr.strip() == (
        "hub mcp: the MCP server answered the tool call with an error "
        "(reason: tool_error, code: -32602)"
    )
    dropped = await hub_mcp("call", peer.url, "bad_header", "--arguments", '{"n": 1}')
    assert dropped.exit_code == 2
    assert "invalid_x_mcp_header" in dropped.stderr
    assert peer.count("tools/call") == 1
    not_object = await hub_mcp("call", peer.url, "echo", "--arguments", "[1]")
    assert not_object.exit_code == 2
    assert "must be a JSON object" in not_object.stderr
    for unportable, reason in [
        ('{"n": NaN}', "non_finite_number"),  # json.loads took it, and it was sent as it came
        ('{"n": ' + "[" * 100_000 + "]" * 100_000 + "}", "too_deep"),  # was a traceback
    ]:
        refused = await hub_mcp("call", peer.url, "echo", "--arguments", unportable)
        assert refused.exit_code == 2
        expected = f"hub mcp: --arguments must be a JSON object: {portable_json.REASONS[reason]}"
        assert refused.stderr.strip() == expected
    assert peer.count("tools/call") == 1  # none of them was sent
    bad_version = await hub_mcp("probe", peer.url, "--protocol-version", "2024-11-05")
    assert bad_version.exit_code == 2
    assert "unsupported protocol version" in bad_version.stderr


@pytest.mark.usefixtures("loopback")
async def test_an_unauthorized_probe_exits_2_without_echoing_anything(peer: HandmadePeer) -> None:
    peer.override("*", lambda r: Reply(401, f"bad {r.headers.get('authorization')}"))
    done = await hub_mcp("probe", peer.url, "--bearer-env", "T", env={"T": "secret-canary-1"})
    assert done.exit_code == 2
    assert done.stderr.strip() == (
        "hub mcp: the MCP server refused the credentials (reason: unauthorized)"
    )
    assert "secret-canary-1" not in done.output


async def test_loopback_is_refused_unless_the_settings_allow_it(
    peer: HandmadePeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HUB_ALLOW_LOOPBACK", raising=False)
    get_settings.cache_clear()
    try:
        done = await hub_mcp("probe", peer.url)
    finally:
        get_settings.cache_clear()
    assert done.exit_code == 2
    assert "(reason: invalid_url)" in done.stderr
    assert peer.requests == []


@pytest.mark.usefixtures("loopback")
async def test_server_text_cannot_drive_the_terminal(handmade_peer: HandmadePeerStarter) -> None:
    evil = {
        "name": "evil\x1b]0;pwned\x07",
        "description": "red \x1b[31m text\rover",
        "inputSchema": {"type": "object"},
    }
    peer = await handmade_peer(
        era="modern", tools=[evil], server_info={"name": "x\x1b[2J", "version": "1"}
    )
    done = await hub_mcp("probe", peer.url)
    assert done.exit_code == 0, done.output
    assert "\x1b" not in done.stdout
    assert "\r" not in done.stdout
    assert "\\x1b[31m" in done.stdout


@pytest.mark.slow
async def test_the_hub_entry_point_runs_the_probe(peer: HandmadePeer) -> None:
    env = {**os.environ, "HUB_ALLOW_LOOPBACK": "true"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hub.cli",
        "mcp",
        "probe",
        peer.url,
        "--json",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=env,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    assert json.loads(stdout)["tools"] == TOOLS


@pytest.mark.usefixtures("loopback")
async def test_the_timeout_option_bounds_the_whole_probe(peer: HandmadePeer) -> None:
    async def hang(request: object) -> Reply:
        await asyncio.sleep(5)
        return Reply(500)

    peer.override("*", hang)
    started = time.monotonic()
    done = await hub_mcp("probe", peer.url, "--timeout", "1")
    assert time.monotonic() - started < 3
    assert done.exit_code == 2
    assert done.stderr.strip() == "hub mcp: upstream did not answer in time (reason: timeout)"
