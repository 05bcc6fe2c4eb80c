"""Wire vocabulary of the handmade peer: replies, SSE events, JSON-RPC messages, the request log.

Everything here is plain data; ``handmade.py`` holds the peer itself.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = -32600
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022

Json = Any
"""Any JSON value (what ``json.loads`` returns)."""


class RpcError(Exception):
    """A JSON-RPC error to answer with, and the HTTP status it goes out with."""

    def __init__(self, code: int, message: str, data: Json = None, *, status: int = 200) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status


def rpc_result(request_id: Json, result: Mapping[str, Json]) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def rpc_error(request_id: Json, code: int, message: str, data: Json = None) -> dict[str, Json]:
    error: dict[str, Json] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the peer received, as it arrived."""

    http_method: str
    path: str
    headers: Mapping[str, str]
    """Case-insensitive (a Starlette ``Headers``); ``headers.get("mcp-method")`` works."""
    body: bytes
    json: Json
    """The parsed body, or ``None`` when it was empty or not JSON."""

    @property
    def message(self) -> dict[str, Json]:
        """The body as a JSON-RPC object (``{}`` when it is not one)."""
        return self.json if isinstance(self.json, dict) else {}

    @property
    def rpc_method(self) -> str | None:
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def rpc_id(self) -> Json:
        return self.message.get("id")

    @property
    def params(self) -> dict[str, Json]:
        params = self.message.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def is_response(self) -> bool:
        """A JSON-RPC response the client POSTed back (to a server→client request)."""
        msg = self.message
        return "method" not in msg and "id" in msg and ("result" in msg or "error" in msg)


@dataclass
class Reply:
    """An arbitrary HTTP answer, for overrides (hostile peers).

    ``body`` may be bytes, text, or any other JSON value (serialised, with
    ``Content-Type: application/json`` unless ``headers`` names one). With ``chunks``, the body
    is streamed chunk by chunk, ``chunk_delay`` seconds apart (a slow drip); ``body`` is ignored.
    """

    status: int = 200
    body: Json | bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Sequence[bytes] | None = None
    chunk_delay: float = 0.0

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = dict(self.headers)
        has_type = any(k.lower() == "content-type" for k in headers)
        if isinstance(self.body, bytes):
            return self.body, headers
        if isinstance(self.body, str):
            if not has_type:
                headers["content-type"] = "text/plain; charset=utf-8"
            return self.body.encode(), headers
        if not has_type:
            headers["content-type"] = "application/json"
        return json.dumps(self.body).encode(), headers


Override = Reply | Callable[[RecordedRequest], "Reply | Awaitable[Reply | None] | None"]
"""A fixed ``Reply``, or a function of the request returning one (``None``: answer normally)."""


@dataclass(frozen=True)
class SseEvent:
    """One SSE event. Empty ``data`` with an ``id`` is a 2025-11-25 priming event."""

    data: str | None = None
    id: str | None = None
    event: str | None = None
    retry: int | None = None
    comment: str | None = None
    server_request_id: Json = None
    """Set when ``data`` is a server→client request (the peer may wait for its answer)."""

    def encode(self) -> bytes:
        lines: list[str] = []
        if self.comment is not None:
            lines.append(f": {self.comment}")
        if self.event is not None:
            lines.append(f"event: {self.event}")
        if self.id is not None:
            lines.append(f"id: {self.id}")
        if self.retry is not None:
            lines.append(f"retry: {self.retry}")
        if self.data is not None:
            lines.extend(f"data: {line}" for line in self.data.split("\n"))
        return ("\n".join(lines) + "\n\n").encode()


def priming(event_id: str = "prime-0", retry: int | None = None) -> SseEvent:
    """A priming event: an ``id`` and an empty ``data`` field."""
    return SseEvent(data="", id=event_id, retry=retry)


def comment(text: str = "keep-alive") -> SseEvent:
    return SseEvent(comment=text)


def message_event(message: Mapping[str, Json], event_id: str | None = None) -> SseEvent:
    return SseEvent(data=json.dumps(message), event="message", id=event_id)


def notification(method: str, params: Mapping[str, Json] | None = None) -> SseEvent:
    msg: dict[str, Json] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = dict(params)
    return message_event(msg)


def progress(token: str | int, value: float, total: float | None = None) -> SseEvent:
    params: dict[str, Json] = {"progressToken": token, "progress": value}
    if total is not None:
        params["total"] = total
    return notification("notifications/progress", params)


def server_request(
    request_id: Json = "srv-1",
    method: str = "roots/list",
    params: Mapping[str, Json] | None = None,
) -> SseEvent:
    """A server→client request on the response stream (legacy eras only, in the spec)."""
    msg: dict[str, Json] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = dict(params)
    return SseEvent(data=json.dumps(msg), event="message", server_request_id=request_id)
