"""A throwaway minimal MCP client, only to prove the conformance toolchain (not the hub's client).

``python -m tests.peers.toy_client URL`` lists the server's tools and prints them as JSON. The
era follows ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (default ``2025-11-25``): a handshake version
runs ``initialize`` → ``notifications/initialized`` → ``tools/list`` → ``DELETE``; ``2026-07-28``
runs ``server/discover`` (retrying once with a version from ``data.supported`` on ``-32022``) and
``tools/list`` with the per-request ``_meta`` and headers. It exits non-zero on any failure.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import httpx2

MODERN = "2026-07-28"
CLIENT_INFO = {"name": "hub-toy-client", "version": "0.0.1"}


def _decode(response: httpx2.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response for ``request_id`` from a JSON or an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for block in response.text.split("\n\n"):
            data = "\n".join(
                line[5:].lstrip() for line in block.splitlines() if line.startswith("data:")
            )
            if data:
                msg = json.loads(data)
                if msg.get("id") == request_id and ("result" in msg or "error" in msg):
                    return dict(msg)
        raise RuntimeError(f"no response for id {request_id} in the SSE stream")
    msg = response.json()
    if msg.get("id") != request_id:
        raise RuntimeError(f"response id {msg.get('id')!r} is not {request_id}")
    return dict(msg)


class ToyClient:
    def __init__(self, url: str, version: str) -> None:
        self.url = url
        self.version = version
        self.http = httpx2.Client(timeout=10)
        self.session_id: str | None = None
        self.next_id = 0

    def post(self, method: str, params: dict[str, Any] | None, *, notify: bool = False) -> Any:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        headers = {"accept": "application/json, text/event-stream"}
        if self.version == MODERN:
            meta = {
                "io.modelcontextprotocol/protocolVersion": self.version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
            }
            params = {**(params or {}), "_meta": meta}
            headers |= {"mcp-protocol-version": self.version, "mcp-method": method}
        elif method != "initialize":
            headers["mcp-protocol-version"] = self.version
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if params is not None:
            msg["params"] = params
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        response = self.http.post(self.url, json=msg, headers=headers)
        if notify:
            response.raise_for_status()
            return None
        if method == "initialize":
            self.session_id = response.headers.get("mcp-session-id")
        answer = _decode(response, self.next_id)
        if "error" in answer:
            raise RpcFailure(answer["error"])
        return answer["result"]

    def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            result = self.post("tools/list", {"cursor": cursor} if cursor is not None else {})
            tools.extend(result["tools"])
            cursor = result.get("nextCursor")
            if cursor is None:
                return tools

    def run(self) -> list[dict[str, Any]]:
        if self.version == MODERN:
            try:
                self.post("server/discover", {})
            except RpcFailure as exc:
                supported = (exc.error.get("data") or {}).get("supported") or []
                if exc.error.get("code") != -32022 or not supported:
                    raise
                self.version = MODERN if MODERN in supported else supported[0]
                self.post("server/discover", {})
            return self.list_tools()
        result = self.post(
            "initialize",
            {"protocolVersion": self.version, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self.version = result["protocolVersion"]
        self.post("notifications/initialized", None, notify=True)
        tools = self.list_tools()
        if self.session_id:
            self.http.delete(
                self.url,
                headers={"mcp-session-id": self.session_id, "mcp-protocol-version": self.version},
            )
        return tools


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error)
        self.error = error


def main() -> int:
    url = sys.argv[-1]
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    client = ToyClient(url, version)
    try:
        tools = client.run()
    finally:
        client.http.close()
    sys.stdout.write(json.dumps({"protocolVersion": client.version, "tools": tools}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
