"""Raw MCP-over-HTTP requests with httpx2, for tests that talk to peers without any MCP client."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
CLIENT_INFO = {"name": "hub-peer-tests", "version": "0"}


def modern_meta(version: str = MODERN) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }


async def post_modern(
    client: httpx2.AsyncClient,
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    request_id: int | None = 1,
    version: str = MODERN,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    """POST one 2026-07-28 request (``_meta``, ``MCP-Protocol-Version``, ``Mcp-Method``, and
    ``Mcp-Name`` for ``tools/call``); ``headers`` are added last (``""`` removes one)."""
    body: dict[str, Any] = {
        "jsonrpc": "2.0",
        "method": method,
        "params": {**(params or {}), "_meta": modern_meta(version)},
    }
    if request_id is not None:
        body["id"] = request_id
    sent = {"accept": ACCEPT, "mcp-protocol-version": version, "mcp-method": method}
    if method == "tools/call" and params:
        sent["mcp-name"] = str(params.get("name"))
    sent |= headers or {}
    return await client.post(url, json=body, headers={k: v for k, v in sent.items() if v})


async def post_legacy(
    client: httpx2.AsyncClient,
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    request_id: int | None = 1,
    session_id: str | None = None,
    version: str | None = LEGACY,
) -> httpx2.Response:
    """POST one handshake-era message (``request_id=None``: a notification)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    if request_id is not None:
        body["id"] = request_id
    headers = {"accept": ACCEPT}
    if version is not None and method != "initialize":
        headers["mcp-protocol-version"] = version
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    return await client.post(url, json=body, headers=headers)


def initialize_params(version: str = LEGACY) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}


@dataclass
class LegacySession:
    session_id: str | None
    version: str
    result: dict[str, Any]


async def open_legacy_session(
    client: httpx2.AsyncClient, url: str, version: str = LEGACY
) -> LegacySession:
    """``initialize`` + ``notifications/initialized``; returns the session and the result."""
    response = await post_legacy(client, url, "initialize", initialize_params(version))
    response.raise_for_status()
    result = answer(response, 1)["result"]
    session_id = response.headers.get("mcp-session-id")
    negotiated = result["protocolVersion"]
    done = await post_legacy(
        client,
        url,
        "notifications/initialized",
        request_id=None,
        session_id=session_id,
        version=negotiated,
    )
    assert done.status_code == 202, done.text
    return LegacySession(session_id, negotiated, result)


@dataclass
class SseEvent:
    data: str
    id: str | None = None
    event: str | None = None
    retry: str | None = None
    comments: tuple[str, ...] = ()


def _last(fields: dict[str, list[str]], name: str) -> str | None:
    values = fields.get(name)
    return values[-1] if values else None


def sse_events(text: str) -> list[SseEvent]:
    """Parse an SSE body into events (comment-only blocks become events with empty data)."""
    events: list[SseEvent] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        fields: dict[str, list[str]] = {}
        comments: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].strip())
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value.removeprefix(" "))

        events.append(
            SseEvent(
                data="\n".join(fields.get("data", [])),
                id=_last(fields, "id"),
                event=_last(fields, "event"),
                retry=_last(fields, "retry"),
                comments=tuple(comments),
            )
        )
    return events


def messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """Every JSON-RPC message in a JSON or SSE response body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(e.data) for e in sse_events(response.text) if e.data]
    return [response.json()]


def answer(response: httpx2.Response, request_id: Any) -> dict[str, Any]:
    """The response (``result`` or ``error``) to ``request_id``, from a JSON or SSE body."""
    for msg in messages(response):
        if msg.get("id") == request_id and ("result" in msg or "error" in msg):
            return msg
    raise AssertionError(f"no answer to id {request_id!r} in {response.text[:500]!r}")
