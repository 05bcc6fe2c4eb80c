"""Reading the answer to one POSTed request from a JSON or SSE body (MCP-PROTOCOL §3a, §3c, §9.3).

A server may answer a request with ``application/json`` (one JSON-RPC message; a 2025-03-26 server
may send a batch array) or with ``text/event-stream``. On a stream the answer is not necessarily
the first event, so the reader:

- skips events with empty ``data`` (2025-11-25 priming events), events of another type than
  ``message``, and comments (the SSE parser already drops those);
- skips notifications (progress, logs) and responses carrying an id the client never sent;
- hands each server→client request to ``on_request`` (legacy era: the session answers it with a
  POST, or the server may hold the answer until it did; ``None`` ignores them, as 2026-07-28
  servers must not send any);
- returns the first response (``result`` or ``error``) whose id is the request's id — or a null
  id with an ``error``, the server's way to refuse a request whose id it could not read — and the
  caller then leaves the stream, which closes it.

A stream that ends without the answer, data that is not JSON, or a message that is not JSON-RPC
is ``protocol_error``. A server that keeps the stream open without ever answering is stopped by
the operation's deadline, and one that sends too much by its byte caps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from hub.egress import InvalidJson, ServerSentEvent, StreamedResponse
from hub.egress.responses import parse_json
from hub.mcp.challenge import parse_bearer_challenge
from hub.mcp.errors import McpError
from hub.mcp.wire import JSON, Json

__all__ = [
    "Media",
    "Reply",
    "ServerRequestHandler",
    "answer_from_events",
    "answer_from_json",
    "read_reply",
]

EVENT_STREAM = "text/event-stream"
Media = Literal["json", "sse", "none", "other"]
ServerRequestHandler = Callable[[dict[str, Json]], Awaitable[None]]
MessageKind = Literal["response", "request", "notification", "invalid"]
_BROKEN: Any = object()
"""Stands for data that is not JSON (``None`` already means an empty body)."""


@dataclass(frozen=True)
class Reply:
    """What came back for one POST: status, body kind, session header and the answer, if any.

    ``answer`` is the JSON-RPC response to the request (``result`` or ``error``), or ``None``
    when the body held none (an empty, non-JSON or non-JSON-RPC body, as error statuses often
    have). Bodies are never kept: only the answer object.
    """

    status: int
    media: Media
    session_id: str | None = None
    answer: dict[str, Json] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error(self) -> dict[str, Json] | None:
        error = self.answer.get("error") if self.answer is not None else None
        return error if isinstance(error, dict) else None

    @property
    def error_code(self) -> int | None:
        code = self.error.get("code") if self.error is not None else None
        return code if type(code) is int else None


def _kind(message: Any) -> MessageKind:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "invalid"
    has_id = "id" in message
    if "method" in message:
        if not isinstance(message["method"], str):
            return "invalid"
        return "request" if has_id else "notification"
    if has_id and ("result" in message) != ("error" in message):
        return "response"
    return "invalid"


def _answers(message: dict[str, Json], request_id: int) -> bool:
    msg_id = message.get("id")
    if msg_id is None:
        return "error" in message
    return type(msg_id) is int and msg_id == request_id


def answer_from_json(payload: Json, request_id: int, *, strict: bool) -> dict[str, Json] | None:
    """The answer to ``request_id`` in a JSON body (one message or a batch array).

    ``strict`` (a 2xx body): anything but JSON-RPC, or no answer at all, is ``protocol_error``.
    Otherwise (an error status) a body that does not answer simply yields ``None``.
    """
    messages = payload if isinstance(payload, list) else [payload]
    for message in messages:
        kind = _kind(message)
        if kind == "response" and _answers(message, request_id):
            return dict(message)
        if kind == "invalid" and strict:
            raise McpError("protocol_error")
    if strict:
        raise McpError("protocol_error")
    return None


async def answer_from_events(
    events: AsyncIterator[ServerSentEvent],
    request_id: int,
    on_request: ServerRequestHandler | None,
) -> dict[str, Json]:
    """The answer to ``request_id`` on an SSE stream (see the module docstring)."""
    async for event in events:
        if not event.data or event.event != "message":
            continue
        try:
            payload = event.json()
        except InvalidJson:
            payload = _BROKEN
        if payload is _BROKEN:
            raise McpError("protocol_error")
        for message in payload if isinstance(payload, list) else [payload]:
            kind = _kind(message)
            if kind == "invalid":
                raise McpError("protocol_error")
            if kind == "response" and _answers(message, request_id):
                return dict(message)
            if kind == "request" and on_request is not None:
                await on_request(dict(message))
    raise McpError("protocol_error")


async def _json_body(response: StreamedResponse) -> Json:
    """The parsed body, ``None`` when empty, ``_BROKEN`` when it is not JSON."""
    raw = await response.read()
    if not raw.strip():
        return None
    try:
        return parse_json(raw)
    except InvalidJson:
        pass
    return _BROKEN


async def read_reply(
    response: StreamedResponse,
    request_id: int,
    on_request: Callable[[dict[str, Json], str | None], Awaitable[None]] | None = None,
) -> Reply:
    """Read the answer to ``request_id`` from ``response`` (401/403 are ``unauthorized`` at once).

    ``on_request(message, session_id)`` gets the server→client requests of an SSE answer, with
    the ``Mcp-Session-Id`` of this very response (it may be the ``initialize`` one).
    """
    status = response.status_code
    if status in (401, 403):
        challenge = parse_bearer_challenge(response.headers)
        raise McpError("unauthorized", status=status, challenge=challenge)
    session_id = response.headers.get("mcp-session-id")
    media = response.content_type
    ok = 200 <= status < 300
    if media == JSON:
        payload = await _json_body(response)
        if payload is None:
            return Reply(status, "none", session_id)
        if payload is _BROKEN:
            if ok:
                raise McpError("protocol_error")
            return Reply(status, "other", session_id)
        return Reply(status, "json", session_id, answer_from_json(payload, request_id, strict=ok))
    if media == EVENT_STREAM and ok:
        handler: ServerRequestHandler | None = None
        if on_request is not None:
            callback = on_request

            async def handler(message: dict[str, Json]) -> None:
                await callback(message, session_id)

        answer = await answer_from_events(response.events(), request_id, handler)
        return Reply(status, "sse", session_id, answer)
    if media:
        return Reply(status, "other", session_id)
    return Reply(status, "none" if await _is_empty(response) else "other", session_id)


async def _is_empty(response: StreamedResponse) -> bool:
    """Whether a body without a ``Content-Type`` is empty (it is read, within the caps)."""
    raw = await response.read()
    return not raw.strip()
