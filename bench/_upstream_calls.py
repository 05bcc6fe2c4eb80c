"""One process making ``N`` ``tools/call`` requests to a peer one way (for :mod:`bench.upstream`).

``python -m bench._upstream_calls WAY URL N``, WAY one of:

- ``httpx2`` — the JSON-RPC message the hub's client sends, posted with a plain
  ``httpx2.AsyncClient`` (the library the egress fetcher is built on, with nothing of ours);
- ``fetcher`` — the same message through :class:`hub.egress.Fetcher` (one operation per call:
  its deadline, pin, slots, byte caps, redaction and the pinned transport);
- ``client`` — :meth:`hub.mcp.McpClient.call_tool`, as the gateway calls it (the fetcher plus the
  MCP client: envelope, headers, reply reading and checking).

Every answer is checked, so a way that fails cannot look cheap.
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx2

from hub import __version__
from hub.egress import Fetcher
from hub.egress.config import EgressConfig
from hub.mcp import McpClient

VERSION = "2026-07-28"
ARGUMENTS = {"text": "x"}
CLIENT_INFO = {"name": "mcp-hub", "version": __version__}  # as the hub's own (hub.wiring)


def _message() -> dict[str, object]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    params = {"name": "echo", "arguments": ARGUMENTS, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": VERSION,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def _check(answer: object) -> None:
    if not isinstance(answer, dict) or answer.get("isError") is not False:
        raise RuntimeError(f"unexpected answer: {answer!r}"[:300])


async def run(way: str, url: str, count: int) -> None:
    origin = url.rsplit("/", 1)[0]
    message = _message()
    async with Fetcher(EgressConfig(allow_loopback=True)) as fetcher, httpx2.AsyncClient() as raw:
        client = McpClient(fetcher, client_info=CLIENT_INFO)
        for _ in range(count):
            if way == "httpx2":
                response = await raw.post(url, json=message, headers=HEADERS)
                _check(response.json()["result"])
            elif way == "fetcher":
                async with fetcher.operation(pin=origin, deadline_s=60, scope="t") as op:
                    answer = await op.request("POST", url, json=message, headers=HEADERS)
                _check(json.loads(answer.content)["result"])
            else:
                done = await client.call_tool(
                    url, "echo", ARGUMENTS, pin=origin, bearer=None, deadline_s=60,
                    scope="t", era_hint="modern",
                )  # fmt: skip
                _check(done.result)


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], sys.argv[2], int(sys.argv[3])))
