"""Start the SDK server the test fixtures use (``tests.peers.sdk_server``) for a benchmark."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["REPO_ROOT", "start_sdk_peer"]

REPO_ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"HUB_PEER_LISTENING (\d+)")


def start_sdk_peer(
    workdir: Path, tools: list[dict[str, Any]], *, mode: str, page_size: int
) -> tuple[subprocess.Popen[str], str]:
    """The running peer process and its MCP URL (it serves ``tools``, ``page_size`` a page)."""
    tools_file = workdir / "tools.json"
    tools_file.write_text(json.dumps(tools))
    argv = [sys.executable, "-m", "tests.peers.sdk_server", "--mode", mode, "--port", "0"]
    argv += ["--tools-file", str(tools_file), "--page-size", str(page_size)]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        found = READY.search(line)
        if found:
            return process, f"http://127.0.0.1:{found.group(1)}/mcp"
    process.wait()
    raise RuntimeError("the SDK peer exited before listening")
