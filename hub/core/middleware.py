"""The hub's one middleware: request id, request metrics, body limit, last-resort error shape.

Every request gets an id the hub makes (``x-request-id`` on the response, ``request_id`` in error
bodies, logs and audit rows). A client's own well-formed ``x-request-id`` is never adopted — two
requests could then share an id in the audit trail — but it is kept for correlation: logged as
``client_request_id``, recorded in audit details and echoed as ``x-client-request-id``. The
client's address (``scope["client"]``, which uvicorn rewrites from ``X-Forwarded-For`` only for
``HUB_TRUSTED_PROXIES``) is logged as ``client``.

It is plain ASGI (not ``BaseHTTPMiddleware``) and sits outside FastAPI's exception handling so it
holds for everything: Starlette's own 404/405, errors raised by middleware, and unhandled
exceptions. Every response gets an ``x-request-id`` header; an exception that escapes the app
becomes the DESIGN error body with status 500 and no stack trace (the trace goes to the log). A
client that leaves before its body has arrived is no error: logged at INFO, counted as 499.
Every request is timed into ``hub_request_duration_seconds`` by the route template that matched
(never the raw path, so no ids in labels), and a request body over ``HUB_MAX_REQUEST_BYTES`` is
refused with 413 before it fills memory.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: TID251
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.core.errors import HubError, InternalError, PayloadTooLarge
from hub.core.logging import bind_context
from hub.core.metrics import Metrics

__all__ = ["RequestEdgeMiddleware", "new_request_id"]

log = logging.getLogger("hub.request")

REQUEST_ID_HEADER = b"x-request-id"
CLIENT_REQUEST_ID_HEADER = b"x-client-request-id"
_SAFE_INCOMING_ID = re.compile(r"^[A-Za-z0-9._-]{8,128}$")
#: the status a request is counted under when its client left before it was answered (nginx's)
CLIENT_CLOSED = 499


def new_request_id() -> str:
    return uuid.uuid4().hex


class RequestEdgeMiddleware:
    """The hub's one ASGI layer around every HTTP request, outside FastAPI's error handling.

    In this order: the request id (the hub's own; a client's well-formed one kept for
    correlation) and the log context; the time of the request, recorded in ``metrics`` by the
    route template that matched (``unmatched`` otherwise) and the status sent; the body limit
    (``max_bytes``: a ``Content-Length`` over it is a 413 at once, a body sent without one is
    counted as it arrives); and the last resort: an exception that escapes the app becomes the
    DESIGN error body with status 500 and no stack trace (the trace goes to the log).

    One layer, not three: each ASGI middleware is a call and a ``send`` wrapper on every
    request, and these three were a tenth of the REST route's own overhead on top of a bare
    FastAPI route (issue 13).
    """

    def __init__(self, app: ASGIApp, *, metrics: Metrics, max_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_at = time.perf_counter()
        # The hub's own id names the request everywhere (responses, logs, audit rows): a client
        # cannot make two requests share one. A well-formed client id is kept for correlation.
        request_id = new_request_id()
        client_id, declared = _read_headers(scope)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state["client_request_id"] = client_id
        peer = scope.get("client")  # already the forwarded client when a trusted proxy sent it
        bind_context(
            request_id=request_id,
            client_request_id=client_id,
            client=peer[0] if peer else None,
        )
        status = 500
        started = False

        async def edge_send(message: Message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                message = _stamped(message, request_id, client_id)
            await send(message)

        try:
            if declared > self.max_bytes:
                if is_mcp_request(scope):  # an MCP client reads JSON-RPC, not the REST body
                    await _send_json(edge_send, too_large_rpc(self.max_bytes), 413)
                else:
                    await _send_error(
                        edge_send, PayloadTooLarge(max_bytes=self.max_bytes), request_id, 413
                    )
                return
            await self.app(scope, self._counting(receive), edge_send)
        except ClientDisconnect:
            # the client went away before its body had arrived (or the server ended the
            # request: a body that came too slowly, hub.core.http_protocol): nobody to answer
            log.info("client disconnected before its request arrived")
            if not started:
                status = CLIENT_CLOSED
        except Exception:
            log.exception("unhandled error", extra={"path": scope.get("path")})
            if started:
                raise
            await _send_error(edge_send, InternalError(), request_id)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(
                method=scope.get("method", ""), route=template, status=str(status)
            ).observe(time.perf_counter() - started_at)

    def _counting(self, receive: Receive) -> Receive:
        """``receive``, refusing a body (one sent without ``Content-Length``) once it passes the
        limit: FastAPI re-raises Starlette's HTTPException from body reading (anything else
        becomes a 400), and the handler renders it as 413 ``payload_too_large``."""
        seen = 0
        limit = self.max_bytes

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        return counting_receive


def _read_headers(scope: Scope) -> tuple[str | None, int]:
    """The client's well-formed request id (or None) and the declared body length (0: none)."""
    client_id = None
    declared = 0
    for name, value in scope.get("headers", ()):
        if name == REQUEST_ID_HEADER:
            candidate: str = value.decode("latin-1")
            if _SAFE_INCOMING_ID.match(candidate):
                client_id = candidate
        elif name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                declared = 0
    return client_id, declared


def _stamped(message: Message, request_id: str, client_id: str | None) -> Message:
    """A response start with the hub's request id (and the client's, echoed) as its only ids."""
    headers = [
        (k, v)
        for (k, v) in message.get("headers", ())
        if k.lower() not in (REQUEST_ID_HEADER, CLIENT_REQUEST_ID_HEADER)
    ]
    headers.append((REQUEST_ID_HEADER, request_id.encode("latin-1")))
    if client_id is not None:
        headers.append((CLIENT_REQUEST_ID_HEADER, client_id.encode("latin-1")))
    return {**message, "headers": headers}


class BodyTooLarge(StarletteHTTPException):
    """A body over the bound, found as it was read (one sent without ``Content-Length``): a
    413 for the REST handler, which the MCP endpoint answers in JSON-RPC itself."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413)
        self.max_bytes = max_bytes


def is_mcp_request(scope: Scope) -> bool:
    """A POST to the agents' MCP endpoint (``/tenants/{t}/deployments/{d}/mcp``)."""
    path = str(scope.get("path", ""))
    return scope.get("method") == "POST" and path.startswith("/tenants/") and path.endswith("/mcp")


def too_large_rpc(max_bytes: int) -> dict[str, Any]:
    """The JSON-RPC error of a request body over ``HUB_MAX_REQUEST_BYTES`` (HTTP 413): what an
    agent's MCP client can read, as it reads every other refusal of the endpoint (DESIGN §15)."""
    message = f"the request is larger than this hub accepts ({max_bytes} bytes)"
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": message, "data": {"max_bytes": max_bytes}},
    }


async def _send_json(send: Send, body_value: dict[str, Any], status: int) -> None:
    body = json.dumps(body_value).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_error(send: Send, error: HubError, request_id: str, status: int = 500) -> None:
    body = json.dumps(error.body(request_id)).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    start: dict[str, Any] = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})
