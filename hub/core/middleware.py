"""Request id and last-resort error shape, as plain ASGI middleware.

It is plain ASGI (not ``BaseHTTPMiddleware``) and sits outside FastAPI's exception handling so it
holds for everything: Starlette's own 404/405, errors raised by middleware, and unhandled
exceptions. Every response gets an ``x-request-id`` header; an exception that escapes the app
becomes the DESIGN error body with status 500 and no stack trace (the trace goes to the log).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.core.errors import InternalError
from hub.core.logging import bind_context

__all__ = ["RequestContextMiddleware", "new_request_id"]

log = logging.getLogger("hub.request")

REQUEST_ID_HEADER = b"x-request-id"
_SAFE_INCOMING_ID = re.compile(r"^[A-Za-z0-9._-]{8,128}$")


def new_request_id() -> str:
    return uuid.uuid4().hex


def _incoming_request_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == REQUEST_ID_HEADER:
            candidate: str = value.decode("latin-1")
            if _SAFE_INCOMING_ID.match(candidate):
                return candidate
    return None


class RequestContextMiddleware:
    """Assign the request id, stamp it on the response, and shape unhandled errors."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming_request_id(scope) or new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        bind_context(request_id=request_id)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [
                    (k, v)
                    for (k, v) in message.get("headers", [])
                    if k.lower() != REQUEST_ID_HEADER
                ]
                headers.append((REQUEST_ID_HEADER, request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error", extra={"path": scope.get("path")})
            if started:
                raise
            await _send_error(send_with_id, InternalError(), request_id)


async def _send_error(send: Send, error: InternalError, request_id: str) -> None:
    body = json.dumps(error.body(request_id)).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    start: dict[str, Any] = {"type": "http.response.start", "status": 500, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})
