"""Relay mode never holds the upstream secret; a hostile hub cannot hang or crash the sidecar;
stdin EOF and SIGTERM end it cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.front import front_for
from tests.sidecar.support import (
    CANARY,
    INIT,
    ROOT,
    Sidecar,
    deploy_on,
    error_lines,
    live_hub,
    run_sidecar,
    sidecar_argv,
    stdio_sidecar,
)

START_ALLOWANCE = 8.0  # a Python process starting on a busy machine


async def test_relay_mode_never_sees_the_secret_and_asks_for_no_lease(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(
            hub, [Upstream("docs", peer.url, secret=CANARY, allow_without_ask=["echo"])]
        )
        async with front_for(hub.url) as front:
            sidecar = Sidecar(hub, deployed, tmp_path, ("--log-level", "DEBUG"), hub_url=front.url)
            results = []
            async with stdio_sidecar(sidecar) as mcp:
                listed = await mcp.list_tools()
                results.append(listed.model_dump_json())
                calls: list[tuple[str, dict[str, Any]]] = [
                    ("docs__echo", {"text": "hi"}),
                    ("docs__add", {"a": 1, "b": 2}),  # ask: a pending approval
                    ("docs__fail", {}),
                ]
                for name, arguments in calls:
                    done = await mcp.call_tool(name, arguments)
                    results.append(done.model_dump_json())
            assert '"approval_pending"' in results[2]
        planted = [*results, sidecar.stderr_path.read_text()]
        planted += [p.read_text() for p in sidecar.cache_dir.iterdir()]
        assert "DEBUG" in sidecar.stderr_path.read_text().upper()
        for text in planted:
            assert CANARY not in text
        bundle = f"GET {deployed.setup.url('deployments', deployed.deployment_id, 'bundle')}"
        mcp_path = f"POST {deployed.url}"
        assert front.paths, "the sidecar went around the front"
        assert set(front.paths) <= {bundle, mcp_path}
        assert not [p for p in front.paths if "lease" in p or "credentials" in p]


@pytest.mark.parametrize(
    "behaviour", ["slow", "oversized", "wrong_type", "drip", "not_modified", "deep", "not_finite"]
)
async def test_hostile_hub_at_start_is_a_one_line_error_in_bounded_time(
    tmp_path: Path, behaviour: str
) -> None:
    async with front_for("http://127.0.0.1:9") as front:
        front.hostile["/bundle"] = behaviour
        started = time.monotonic()
        done = await anyio.to_thread.run_sync(
            lambda: run_sidecar(tmp_path, "--stdio", key="hub_x", hub=front.url)
        )
        elapsed = time.monotonic() - started
    assert elapsed < 10 + START_ALLOWANCE + 1.5
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = error_lines(done)
    assert len(lines) == 1, done.stderr
    assert "no cached bundle" in lines[0]


@pytest.mark.parametrize(
    "behaviour", ["slow", "oversized", "wrong_type", "drip", "deep", "not_finite"]
)
async def test_hostile_hub_on_a_call_fails_it_closed_in_bounded_time(
    tmp_path: Path, sdk_peer: SdkPeerStarter, behaviour: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        async with front_for(hub.url) as front:
            extra = ("--call-timeout", "3")
            sidecar = Sidecar(hub, deployed, tmp_path, extra, hub_url=front.url)
            async with stdio_sidecar(sidecar) as mcp:
                front.hostile["/mcp"] = behaviour
                started = time.monotonic()
                done = await mcp.call_tool("docs__echo", {"text": "x"})
                assert time.monotonic() - started < 3 + 1.5
                assert done.is_error is True
                assert (done.meta or {})["io.mcphub/error"]["class"] == "unavailable"
                del front.hostile["/mcp"]
                again = await mcp.call_tool("docs__echo", {"text": "y"})  # still alive
                assert again.is_error is False


def _spawn(sidecar: Sidecar) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        sidecar_argv(sidecar, "--stdio"),
        env=sidecar.env(),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("ending", ["eof", "sigterm"])
async def test_stdio_ends_cleanly_on_eof_and_sigterm(
    tmp_path: Path, sdk_peer: SdkPeerStarter, ending: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path)
        process = _spawn(sidecar)
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(json.dumps(INIT).encode() + b"\n")
        process.stdin.flush()
        answer = await anyio.to_thread.run_sync(process.stdout.readline)
        assert json.loads(answer)["result"]["serverInfo"]["name"] == "mcp-hub-sidecar"
        started = time.monotonic()
        if ending == "eof":
            process.stdin.close()
        else:
            process.send_signal(signal.SIGTERM)
        try:
            await anyio.to_thread.run_sync(lambda: process.wait(timeout=20))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert time.monotonic() - started < 5 + 1.5
        out = process.stdout.read()
        assert process.stderr is not None
        err = process.stderr.read()
        process.stdout.close()
        process.stderr.close()
        if not process.stdin.closed:
            process.stdin.close()
        assert process.returncode == 0, err.decode()[-2000:]
        assert out == b""  # nothing but the answer ever reached stdout
        assert "Traceback" not in err.decode()
