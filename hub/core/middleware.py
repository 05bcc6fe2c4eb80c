"""Request id and last-resort error shape, as plain ASGI middleware.

Every request gets an id the hub makes (``x-request-id`` on the response, ``request_id`` in error
bodies, logs and audit rows). A client's own well-formed ``x-request-id`` is never adopted — two
requests could then share an id in the audit trail — but it is kept for correlation: logged as
``client_request_id``, recorded in audit details and echoed as ``x-client-request-id``. The
client's address (``scope["client"]``, which uvicorn rewrites from ``X-Forwarded-For`` only for
``HUB_TRUSTED_PROXIES``) is logged as ``client``.

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

from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: TID251
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.core.errors import HubError, InternalError, PayloadTooLarge
from hub.core.logging import bind_context

__all__ = ["BodyLimitMiddleware", "RequestContextMiddleware", "new_request_id"]

log = logging.getLogger("hub.request")

REQUEST_ID_HEADER = b"x-request-id"
CLIENT_REQUEST_ID_HEADER = b"x-client-request-id"
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
        # The hub's own id names the request everywhere (responses, logs, audit rows): a client
        # cannot make two requests share one. A well-formed client id is kept for correlation.
        request_id = new_request_id()
        client_id = _incoming_request_id(scope)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state["client_request_id"] = client_id
        peer = scope.get("client")  # already the forwarded client when a trusted proxy sent it
        bind_context(
            request_id=request_id,
            client_request_id=client_id,
            client=peer[0] if peer else None,
        )
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [
                    (k, v)
                    for (k, v) in message.get("headers", [])
                    if k.lower() not in (REQUEST_ID_HEADER, CLIENT_REQUEST_ID_HEADER)
                ]
                headers.append((REQUEST_ID_HEADER, request_id.encode("latin-1")))
                if client_id is not None:
                    headers.append((CLIENT_REQUEST_ID_HEADER, client_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error", extra={"path": scope.get("path")})
            if started:
                raise
            await _send_error(send_with_id, InternalError(), request_id)


async def _send_error(send: Send, error: HubError, request_id: str, status: int = 500) -> None:
    body = json.dumps(error.body(request_id)).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    start: dict[str, Any] = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_bytes`` with 413, before they fill memory.

    A ``Content-Length`` over the limit is refused at once; a body sent without one (chunked) is
    counted as it is received and refused as soon as it passes the limit (the app reads the body
    before an endpoint runs, so the error goes through the normal handlers).
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await _send_error(send, PayloadTooLarge(), scope["state"]["request_id"], 413)
                    return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # FastAPI re-raises Starlette's HTTPException from body reading (anything else
                    # becomes a 400); the handler renders it as 413 payload_too_large
                    raise StarletteHTTPException(413)
            return message

        await self.app(scope, counting_receive, send)
