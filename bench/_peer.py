"""Start the SDK server the test fixtures use (``tests.peers.sdk_server``) for a benchmark."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["REPO_ROOT", "start_sdk_peer"]

REPO_ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"HUB_PEER_LISTENING (\d+)")
STARTUP_S = 60.0


def start_sdk_peer(
    workdir: Path,
    tools: list[dict[str, Any]],
    *,
    mode: str,
    page_size: int,
    legacy_only: bool = False,
) -> tuple[subprocess.Popen[bytes], str]:
    """The running peer process and its MCP URL (it serves ``tools``, ``page_size`` a page;
    ``legacy_only``: it refuses the 2026-07-28 wire, so it is reached in the handshake era).

    Its output goes to ``peer.log`` in ``workdir`` (``legacy-peer.log`` for a legacy-only peer,
    so both can share a directory), not to a pipe: nobody reads a pipe once the peer listens,
    and a peer that logs enough would block on the full pipe mid-bench."""
    name = "legacy-peer" if legacy_only else "peer"
    tools_file = workdir / f"{name}-tools.json"
    tools_file.write_text(json.dumps(tools))
    log = workdir / f"{name}.log"
    argv = [sys.executable, "-m", "tests.peers.sdk_server", "--mode", mode, "--port", "0"]
    argv += ["--tools-file", str(tools_file), "--page-size", str(page_size)]
    argv += ["--legacy-only"] if legacy_only else []
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            argv, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        found = READY.search(log.read_text(errors="replace"))
        if found:
            return process, f"http://127.0.0.1:{found.group(1)}/mcp"
        if process.poll() is not None:
            raise RuntimeError(f"the SDK peer exited before listening: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    process.kill()
    process.wait()
    raise RuntimeError(f"the SDK peer did not listen within {STARTUP_S:g} s")
