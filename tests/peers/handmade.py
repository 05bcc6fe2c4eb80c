"""A scriptable MCP peer served in the test's own event loop (uvicorn on loopback, ephemeral port).

Start it with the ``handmade_peer`` fixture (``tests.peers.fixtures``)::

    peer = await handmade_peer(era="modern", tools=many_tools(120), page_size=50)
    ... point the client at peer.url ...
    assert peer.count("tools/list") == 3

Every knob (``handmade_eras.Knobs``) is read per request, so ``peer.knobs.era = "legacy"`` between
two requests changes the next answer. The endpoint is ``/mcp``; other paths answer 404.

Eras (``era``):

- ``modern`` (2026-07-28 wire): POST only (GET/DELETE → 405). A request needs ``params._meta``
  with ``io.modelcontextprotocol/protocolVersion`` and ``.../clientCapabilities`` (else 400
  ``-32602``); the ``MCP-Protocol-Version`` header must equal the ``_meta`` version and
  ``Mcp-Method`` the body method (else 400 ``-32020``); ``tools/call`` needs ``Mcp-Name`` =
  ``params.name``, base64 sentinel allowed (else 400 ``-32020``; ``require_mcp_name``). An
  unsupported version is 400 ``-32022`` with ``data.supported``/``data.requested``; so is
  ``initialize`` (naming the supported versions). An unknown method is 404 ``-32601``; other errors
  are 400. Results carry ``resultType: "complete"`` and the ``serverInfo`` ``_meta`` key;
  ``server/discover`` and ``tools/list`` also ``ttlMs`` and ``cacheScope``. A notification is 202.
  ``reject_first_modern``: the first valid modern request gets ``-32022`` even though its version is
  supported (as the conformance mock does).
- ``legacy`` (handshake eras): ``initialize`` answers the requested version when it is in
  ``legacy_versions``, else the first of them, and mints ``Mcp-Session-Id`` (``legacy_sessions``).
  Later requests need that header (missing → ``legacy_reject_status`` with ``legacy_reject_body``,
  by default 400 and an empty body, which is also what any modern request gets; unknown → 404) and
  ``MCP-Protocol-Version`` equal to the negotiated version (else 400). JSON-RPC errors go out with
  status 200. ``DELETE`` ends the session (200) or is refused (``delete_status=405``). GET → 405.
- ``dual``: ``initialize`` and anything carrying ``Mcp-Session-Id`` go to the legacy logic,
  everything else to the modern logic.

Pagination: with ``page_size`` the cursors are ``page-1``, ``page-2``...; with ``empty_cursor`` the
second page's cursor is ``""``. The last page has no ``nextCursor``. A bad cursor is ``-32602``.
``tools/call``: ``fail`` → ``isError: true``; a listed tool echoes its arguments (text and
``structuredContent``); an unlisted one is ``-32602``.

SSE (``response_style="sse"``): 200 answers to requests become ``text/event-stream``, preceded by
``sse_prelude`` (``priming()``, ``comment()``, ``notification()``, ``server_request()`` from
``handmade_wire``). A JSON-RPC response the client POSTs back is logged (``client_responses``)
and answered 202; with ``wait_for_client_responses`` the answer waits for those responses (or
becomes a ``-32603`` error after ``client_response_timeout``).

Hostile answers: ``peer.override(key, Reply(...) | fn, times=None)`` where ``key`` is a JSON-RPC
method, an HTTP method (``"GET"``, ``"POST"``, ``"DELETE"``) or ``"*"``; ``fn(request)`` may return
``None`` to answer normally. ``Reply`` takes any status, headers, body (bytes, text or JSON), or
``chunks`` with ``chunk_delay`` for a slow drip.

The log: ``peer.requests`` (every request, with headers and parsed body), ``peer.rpc_requests(m)``,
``peer.count(m)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from tests.peers.handmade_eras import Answer, EraLogic, Knobs
from tests.peers.handmade_wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    Json,
    Override,
    RecordedRequest,
    Reply,
    message_event,
    rpc_error,
)


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves the test process's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class _OverrideEntry:
    override: Override
    remaining: int | None


def _parse(body: bytes) -> Json:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


class HandmadePeer:
    """The peer: knobs, the request log, overrides and the HTTP server."""

    def __init__(self, *, path: str = "/mcp", **knobs: Any) -> None:
        self.path = path
        self.knobs = Knobs(**knobs)
        self.logic = EraLogic(self.knobs)
        self.requests: list[RecordedRequest] = []
        self._overrides: dict[str, list[_OverrideEntry]] = {}
        self._responded = asyncio.Condition()
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._url: str | None = None

    # ------------------------------------------------------------------ public API
    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("the handmade peer is not started")
        return self._url

    @property
    def sessions(self) -> dict[str, Any]:
        """Live legacy sessions by id."""
        return dict(self.logic.sessions)

    @property
    def client_responses(self) -> list[RecordedRequest]:
        """JSON-RPC responses the client POSTed back to server→client requests."""
        return [r for r in self.requests if r.is_response]

    def rpc_requests(self, method: str | None = None) -> list[RecordedRequest]:
        """Logged JSON-RPC requests and notifications, optionally of one method."""
        return [
            r
            for r in self.requests
            if r.rpc_method is not None and (method is None or r.rpc_method == method)
        ]

    def count(self, method: str) -> int:
        return len(self.rpc_requests(method))

    def override(self, key: str, reply: Override, *, times: int | None = None) -> None:
        """Answer requests matching ``key`` with ``reply`` (``times`` uses, or forever)."""
        self._overrides.setdefault(key, []).append(_OverrideEntry(reply, times))

    def clear_overrides(self) -> None:
        self._overrides.clear()

    async def start(self, host: str = "127.0.0.1") -> HandmadePeer:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        config = uvicorn.Config(
            self.asgi,
            interface="asgi3",
            lifespan="off",
            ws="none",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        server = _QuietServer(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]))
        async with asyncio.timeout(5):
            while not server.started:
                if self._task.done():
                    await self._task
                    raise RuntimeError("the handmade peer's server exited at startup")
                await asyncio.sleep(0.005)
        netloc = f"[{host}]" if family == socket.AF_INET6 else host
        self._url = f"http://{netloc}:{port}{self.path}"
        return self

    async def stop(self) -> None:
        server, task = self._server, self._task
        if server is None or task is None:
            return
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), 3)
        except TimeoutError:
            server.force_exit = True
            await task
        self._server = self._task = None

    # ------------------------------------------------------------------ HTTP
    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        response = await self._handle(request)
        await response(scope, receive, send)

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        rec = RecordedRequest(request.method, request.url.path, request.headers, body, _parse(body))
        self.requests.append(rec)
        override = await self._take_override(rec)
        if override is not None:
            return self._reply(override)
        if rec.path != self.path:
            return Response(status_code=404)
        if rec.http_method == "DELETE":
            return self._reply(self.logic.delete(rec))
        if rec.http_method != "POST":
            return Response(status_code=405, headers={"allow": "POST, DELETE"})
        if rec.json is None:
            return self._json(400, rpc_error(None, PARSE_ERROR, "Parse error"))
        msg = rec.json
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return self._json(400, rpc_error(None, INVALID_REQUEST, "Invalid request"))
        if rec.is_response:
            async with self._responded:
                self._responded.notify_all()
            return Response(status_code=202)
        answer = self.logic.answer(rec)
        if isinstance(answer, Reply):
            return self._reply(answer)
        return self._respond(rec, answer)

    async def _take_override(self, rec: RecordedRequest) -> Reply | None:
        keys = [k for k in (rec.rpc_method, rec.http_method, "*") if k is not None]
        for key in keys:
            for entry in list(self._overrides.get(key, [])):
                reply: Any = entry.override
                if callable(reply):
                    reply = reply(rec)
                    if inspect.isawaitable(reply):
                        reply = await reply
                if reply is None:
                    continue
                if entry.remaining is not None:
                    entry.remaining -= 1
                    if entry.remaining <= 0:
                        self._overrides[key].remove(entry)
                assert isinstance(reply, Reply)
                return reply
        return None

    def _reply(self, reply: Reply) -> Response:
        if reply.chunks is not None:
            return StreamingResponse(
                self._drip(list(reply.chunks), reply.chunk_delay),
                status_code=reply.status,
                headers=reply.headers,
            )
        content, headers = reply.encoded()
        return Response(content, status_code=reply.status, headers=headers)

    @staticmethod
    async def _drip(chunks: list[bytes], delay: float) -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
            await asyncio.sleep(delay)

    @staticmethod
    def _json(
        status: int, message: dict[str, Json], headers: dict[str, str] | None = None
    ) -> Response:
        return Response(
            json.dumps(message), status_code=status, headers=headers, media_type="application/json"
        )

    def _respond(self, rec: RecordedRequest, answer: Answer) -> Response:
        headers = {"mcp-session-id": answer.session_id} if answer.session_id else {}
        if answer.message is None:
            return Response(status_code=answer.status, headers=headers)
        if answer.status != 200 or self.knobs.response_style == "json":
            return self._json(answer.status, answer.message, headers)
        headers |= {"cache-control": "no-cache", "x-accel-buffering": "no"}
        return StreamingResponse(
            self._stream(rec, answer.message),
            headers=headers,
            media_type="text/event-stream",
        )

    async def _stream(self, rec: RecordedRequest, message: dict[str, Json]) -> AsyncIterator[bytes]:
        k = self.knobs
        start = len(self.requests)
        prelude = []
        if k.sse_prelude_methods is None or rec.rpc_method in k.sse_prelude_methods:
            prelude = list(k.sse_prelude)
        for event in prelude:
            yield event.encode()
        pending = {e.server_request_id for e in prelude if e.server_request_id is not None}
        if (
            pending
            and k.wait_for_client_responses
            and not await self._wait_for_responses(pending, start, k.client_response_timeout)
        ):
            message = rpc_error(
                rec.rpc_id, INTERNAL_ERROR, "the client never answered the server's requests"
            )
        yield message_event(message).encode()

    async def _wait_for_responses(self, ids: set[Json], start: int, seconds: float) -> bool:
        try:
            async with asyncio.timeout(seconds), self._responded:
                await self._responded.wait_for(
                    lambda: ids <= {r.rpc_id for r in self.requests[start:] if r.is_response}
                )
        except TimeoutError:
            return False
        return True
