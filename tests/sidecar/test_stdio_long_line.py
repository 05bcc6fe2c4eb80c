"""A stdin line longer than the sidecar reads (``MAX_LINE``, 16 MiB) is answered ``-32600`` with
the bound in ``data`` (its id cannot be read: null), logged, and skipped to its newline; the
session goes on with the next line. Before, the sidecar read it as the end of stdin and stopped
at once, silently, exit 0."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from hub.sidecar.stdio import MAX_LINE, Lines, too_long
from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import INIT, ROOT, Sidecar, deploy_on, live_hub, sidecar_argv


def _spawn(sidecar: Sidecar) -> subprocess.Popen[bytes]:
    with sidecar.stderr_path.open("wb") as errlog:
        return subprocess.Popen(
            sidecar_argv(sidecar, "--stdio"),
            env=sidecar.env(),
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
        )


def _send(process: subprocess.Popen[bytes], *lines: bytes) -> None:
    assert process.stdin is not None
    for line in lines:
        process.stdin.write(line + b"\n")
    process.stdin.flush()


async def _answer(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    line = await anyio.to_thread.run_sync(process.stdout.readline)
    assert line, "the sidecar stopped"
    answer: dict[str, Any] = json.loads(line)
    return answer


async def test_an_over_long_line_is_refused_and_the_session_goes_on(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path)
        process = _spawn(sidecar)
        try:
            _send(process, json.dumps(INIT).encode())
            assert (await _answer(process))["id"] == 1
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
            long = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "x": "' + b"a" * MAX_LINE
            await anyio.to_thread.run_sync(
                lambda: _send(process, json.dumps(initialized).encode(), long + b'"}')
            )
            _send(process, json.dumps(listing).encode())
            refused = await _answer(process)
            assert refused == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32600,
                    "message": (
                        f"the message is larger than this sidecar accepts ({MAX_LINE} bytes)"
                    ),
                    "data": {"max_bytes": MAX_LINE},
                },
            }
            listed = await _answer(process)
            assert listed["id"] == 2
            assert "docs__echo" in {t["name"] for t in listed["result"]["tools"]}
        finally:
            if process.stdin is not None:
                process.stdin.close()
            await anyio.to_thread.run_sync(lambda: process.wait(timeout=20))
            assert process.stdout is not None
            process.stdout.close()
    assert process.returncode == 0


async def test_the_refusal_is_logged_and_a_long_line_at_eof_ends_stdin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The reader itself, in process: one ERROR line naming the bound per refused line; lines
    over it in several pieces are skipped whole; an over-long last line without its newline is
    the end of stdin."""
    reader = asyncio.StreamReader(limit=MAX_LINE)
    lines = Lines(reader)
    send, answers = anyio.create_memory_object_stream[Any](10)
    lines.answer = send
    reader.feed_data(b"a" * (MAX_LINE + 10) + b"\n")  # over, its newline buffered
    reader.feed_data(b'{"first": 1}\n')
    assert await lines.__anext__() == '{"first": 1}\n'
    for _ in range(3):  # over, in pieces each past the bound
        reader.feed_data(b"b" * MAX_LINE)
    reader.feed_data(b"b\n" + b'{"second": 2}\n' + b"c" * (MAX_LINE + 1))
    assert await lines.__anext__() == '{"second": 2}\n'
    reader.feed_eof()
    with pytest.raises(StopAsyncIteration):
        await lines.__anext__()
    with send, answers:
        sent = [answers.receive_nowait() for _ in range(2)]
    assert [m.message.model_dump(by_alias=True, exclude_unset=True) for m in sent] == [
        too_long(MAX_LINE).message.model_dump(by_alias=True, exclude_unset=True)
    ] * 2
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 3
    assert all(f"longer than {MAX_LINE} bytes" in e for e in errors)
