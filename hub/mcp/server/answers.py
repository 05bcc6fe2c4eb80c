"""What the endpoint's dispatcher hands back, and the handler it dispatches to.

:class:`HttpAnswer` is a finished HTTP answer (status, JSON body or none, extra headers).
:class:`ToolsHandler` is what a host (the hub's gateway) implements: the server's description,
``tools/list`` and ``tools/call``. :class:`RpcError` is how a handler answers a request with a
JSON-RPC error instead of a result (with an HTTP status and headers of its own when the error
table says so, e.g. ``Retry-After``). :class:`InputRequired` is how it answers a 2026-07-28
``tools/call`` with an MRTR interim result (SEP-2322) instead of a complete one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hub.mcp.wire import Era

__all__ = [
    "CallContext",
    "HttpAnswer",
    "InputRequired",
    "RpcError",
    "ToolsHandler",
    "error_message",
    "request_id_of",
    "result_message",
]


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: Any = None  # a JSON-RPC message (or list of them); None for no body (202)
    headers: Mapping[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        if self.body is None:
            return b""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode()


class RpcError(Exception):
    """A JSON-RPC error answer: code, message, ``data``; ``status`` and ``headers`` for HTTP."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status
        self.headers = dict(headers or {})

    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def result_message(request_id: Any, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def error_message(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.error()}


@dataclass(frozen=True)
class InputRequired:
    """An ``InputRequiredResult``: what the client must ask for (``inputRequests``, keyed by the
    server's own names) and the opaque ``requestState`` it echoes on its retry."""

    input_requests: Mapping[str, Any]
    request_state: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    def result(self) -> dict[str, Any]:
        return {
            "resultType": "input_required",
            "inputRequests": dict(self.input_requests),
            "requestState": self.request_state,
            "_meta": dict(self.meta),
        }


@dataclass(frozen=True)
class CallContext:
    """What a handler knows of one request beyond the JSON-RPC params."""

    era: Era
    protocol_version: str
    headers: Mapping[str, str]


class ToolsHandler(Protocol):
    """The host behind the endpoint (only tools: resources and prompts are ``-32601``)."""

    @property
    def server_info(self) -> Mapping[str, Any]: ...

    @property
    def instructions(self) -> str | None: ...

    async def list_tools(self, ctx: CallContext) -> list[dict[str, Any]]: ...

    async def call_tool(
        self, name: str, arguments: Any, params: Mapping[str, Any], ctx: CallContext
    ) -> dict[str, Any] | InputRequired:
        """The call's result; an :class:`InputRequired` only for a 2026-07-28 request."""
        ...


def request_id_of(raw: Any) -> Any:
    """The id of a single JSON-RPC request, to echo on an error about the whole request."""
    if isinstance(raw, dict):
        request_id = raw.get("id")
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            return request_id
    return None
