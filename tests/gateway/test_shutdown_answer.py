"""A call still running when ``hub serve``'s shutdown grace ends gets a JSON-RPC answer.

At SIGTERM uvicorn lets the requests in flight run for ``HUB_SHUTDOWN_GRACE_S``, then cancels
them; a request cancelled before it answered got uvicorn's own ``500 Internal Server Error``
(``text/plain``), which no MCP client reads as an answer. The agent now gets the endpoint's
``unavailable`` error (``50300``, HTTP 503) saying the hub is shutting down and the call's outcome
is unknown, in both eras (each request of a batch its own; in a batch cut part way, the messages
it had run are answered and those after the one running are told they did not run), and the
call's audit row still says ``cancelled``; a request cut before it was dispatched (its body still
arriving) is told it did not run. A real ``hub serve`` and a real upstream whose ``tools/call``
hangs past the grace.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.conftest import TEST_PEPPER
from tests.deploy.serving import _wait_until_serving, free_port, hub_command, hub_env
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest, Reply
from tests.support.hubcommand import hub_argv
from tests.support.stories import audit_events

GRACE_S = 2
HANG_S = 60.0  # far past the grace and the end of the test: the call cannot finish first
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]
DATA = {"class": "unavailable", "reason": "hub_stopping"}
STOPPING = {
    "code": 50300,
    "message": "the hub is shutting down: the call's outcome is unknown (it may have run)",
    "data": DATA,
}
#: the answer to a request cut before anything was dispatched (here: its body still arriving)
NOT_RUN = {
    "code": 50300,
    "message": "the hub is shutting down: the request did not run",
    "data": DATA,
}


BATCH = [
    {"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": "up__echo"}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]
#: a batch cut in its second message: the first was answered, the third never ran
BATCH_PART_RUN = [
    {"jsonrpc": "2.0", "id": 30, "method": "ping"},
    {"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": {"name": "up__echo"}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 32, "method": "tools/call", "params": {"name": "up__echo"}},
]


async def _hang(request: RecordedRequest) -> Reply:
    await asyncio.sleep(HANG_S)
    return Reply(500, b"too late")


def _serve(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``hub serve``, its log to a file (a pipe nobody reads could fill and block it)."""
    with (tmp_path / "serve.log").open("wb") as log:
        return subprocess.Popen(
            hub_argv("serve"),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


async def _half_sent(
    port: int, deployed: Deployed
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A ``tools/call`` whose head and half its body are sent, the rest never: the request is
    in the endpoint, reading its body, when the grace ends. Its connection."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}).encode()
    head = (
        f"POST {deployed.url} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: {deployed.headers['authorization']}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + body[: len(body) // 2])
    await writer.drain()
    return reader, writer


async def _answer_of(
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of the connection's answer (the hub closes it after that)."""
    reader, writer = connection
    try:
        raw = await asyncio.wait_for(reader.read(), GRACE_S + 10)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), raw
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _log(tmp_path: Path) -> str:
    return (tmp_path / "serve.log").read_text(errors="replace")[-3000:]


@pytest.mark.slow
async def test_a_call_cut_by_the_end_of_the_grace_gets_a_json_rpc_answer(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    port = free_port()
    settings = {
        "HUB_ALLOW_LOOPBACK": "true",
        "HUB_SHUTDOWN_GRACE_S": str(GRACE_S),
        "HUB_API_KEY_PEPPER": TEST_PEPPER,  # the tenant admin is written by this test's factories
        "HUB_EGRESS_MAX_PER_TENANT_ORIGIN": "8",  # five calls hang on the peer at once
    }
    env = hub_env(tmp_path, port, **settings)
    await asyncio.to_thread(hub_command, tmp_path, port, "db", "upgrade", **settings)
    proc = await asyncio.to_thread(_serve, tmp_path, env)
    base = f"http://127.0.0.1:{port}"
    database = Database.from_url(env["HUB_DATABASE_URL"])
    try:
        await asyncio.to_thread(_wait_until_serving, proc, base)
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            deployed = await deploy(http, database, [Upstream("up", peer.url)])
            peer.override("tools/call", _hang)
            half_sent = await _half_sent(port, deployed)
            params = {"name": "up__echo", "arguments": {}}
            calls = {
                era: asyncio.create_task(
                    rpc(http, deployed, "tools/call", params, era=era, tool=TOOLS[0], request_id=n)
                )
                for n, era in enumerate(["modern", "2025-11-25", "2025-03-26"], start=7)
            }
            batch = asyncio.create_task(  # 2025-03-26: a call and a notification in one body
                http.post(deployed.url, json=BATCH, headers=deployed.headers)
            )
            part_run = asyncio.create_task(
                http.post(deployed.url, json=BATCH_PART_RUN, headers=deployed.headers)
            )
            hanging = len(calls) + 2
            deadline = time.monotonic() + 30
            while peer.count("tools/call") < hanging:
                assert time.monotonic() < deadline, (peer.count("tools/call"), _log(tmp_path))
                await asyncio.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            answers = {era: await call for era, call in calls.items()}
            batched = await batch
            partly = await part_run
            answered = time.monotonic() - signalled
            cut_early = await _answer_of(half_sent)
        returncode = await asyncio.to_thread(proc.wait, GRACE_S + 10)
        rows = await audit_events(database, action="tool.call")
    finally:
        await database.dispose()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    for n, (era, answer) in enumerate(answers.items(), start=7):
        assert answer.status_code == 503, (era, answer.text, _log(tmp_path))
        assert answer.headers["content-type"] == "application/json", era
        assert answer.json() == {"jsonrpc": "2.0", "id": n, "error": STOPPING}, era
    assert batched.status_code == 503, batched.text
    assert batched.json() == [{"jsonrpc": "2.0", "id": 20, "error": STOPPING}]  # one per request
    # what had run is answered (at 200: a client reads it), what had not is told it did not run
    assert partly.status_code == 200, partly.text
    assert partly.json() == [
        {"jsonrpc": "2.0", "id": 30, "result": {}},
        {"jsonrpc": "2.0", "id": 31, "error": STOPPING},
        {"jsonrpc": "2.0", "id": 32, "error": NOT_RUN},
    ]
    assert answered < GRACE_S + 1.5
    assert cut_early == (503, {"jsonrpc": "2.0", "id": None, "error": NOT_RUN})
    assert returncode == 0, _log(tmp_path)
    assert len(rows) == len(calls) + 2  # the batches' calls that ran; id 32 never did
    for row in rows:
        assert (row.outcome, row.details["reason"]) == ("failed", "cancelled"), row.details
