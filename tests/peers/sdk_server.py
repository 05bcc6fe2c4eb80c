"""The official MCP Python SDK server (``mcp`` v2, low-level ``Server``) over Streamable HTTP.

Run it as a subprocess (building the SDK server in-process reconfigures logging)::

    python -m tests.peers.sdk_server --mode {sse,stateless,json,stateless-json} --port P \
        --tools-file F [--page-size N] [--host 127.0.0.1] [--sieve] [--legacy-only]

Once it accepts connections it prints ``HUB_PEER_LISTENING <port>`` on stdout (``--port 0`` binds
an ephemeral port, race-free).

Modes (the MCP endpoint is ``/mcp``):

- ``sse``: stateful (``Mcp-Session-Id`` sessions), SSE responses, resumable: an in-memory event
  store gives events ids, and 2025-11-25 streams open with a priming event (empty ``data``,
  ``retry`` from ``--retry-ms``); GET with ``Last-Event-ID`` replays.
- ``stateless``: stateless HTTP (no sessions), SSE responses.
- ``json``: stateful (sessions), ``application/json`` responses.
- ``stateless-json``: stateless HTTP, ``application/json`` responses.

The SDK server is dual-era in every mode: it answers the 2026-07-28 stateless wire
(``server/discover`` plus per-request ``_meta``) and the handshake eras (``initialize``).
``--legacy-only`` makes it a server that predates 2026-07-28: a request carrying
``MCP-Protocol-Version: 2026-07-28`` gets 400 with an empty body, so clients fall back to the
handshake.

Tools come from ``--tools-file`` (a JSON list of raw MCP Tool objects), re-read on every
``tools/list`` and paginated when ``--page-size`` is set (``nextCursor`` is the decimal offset of
the next page; an invalid cursor is ``-32602``). The SDK validates each ``tools/list`` result
against the negotiated revision's schema and drops fields that revision does not define (unknown
top-level Tool fields, ``execution`` on 2026-07-28, unknown annotation keys); a server middleware
then puts the raw tools back, so the page is served verbatim. ``--sieve`` keeps the SDK's dump
instead (what a plain SDK server really sends). A tool that fails the SDK's validation (no
``name``, no ``inputSchema``) makes ``tools/list`` fail with ``-32603`` either way.

``tools/call``: a tool named ``fail`` returns ``isError: true``; any other tool in the file echoes
(``content`` holds the arguments as JSON text, ``structuredContent`` the arguments); a tool not in
the file is a ``-32602`` protocol error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, JSONRPCMessage

MODES = ("sse", "stateless", "json", "stateless-json")
MODERN = "2026-07-28"

_raw_page: contextvars.ContextVar[list[list[dict[str, Any]]] | None] = contextvars.ContextVar(
    "raw_page", default=None
)


class ToolStore:
    """The tools file, re-read on every access."""

    def __init__(self, path: Path, page_size: int | None) -> None:
        self.path = path
        self.page_size = page_size

    def load(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = json.loads(self.path.read_text(encoding="utf-8"))
        return tools

    def page(self, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        tools = self.load()
        if self.page_size is None:
            if cursor is not None:
                raise MCPError(INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
            return tools, None
        start = 0
        if cursor is not None:
            if not cursor.isdigit() or int(cursor) > len(tools):
                raise MCPError(INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
            start = int(cursor)
        end = start + self.page_size
        return tools[start:end], (str(end) if end < len(tools) else None)

    def find(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.load() if t.get("name") == name), None)


class MemoryEventStore(EventStore):
    """Keeps every SSE event so streams can resume (and so the SDK sends priming events)."""

    def __init__(self) -> None:
        self._events: list[tuple[str, StreamId, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(len(self._events))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        index = next((i for i, e in enumerate(self._events) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self._events[index][1]
        for event_id, sid, message in self._events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


async def _slow(arguments: dict[str, Any]) -> None:
    """The ``slow`` tool, for cancellation: it sleeps, and says on stdout how its call ended."""
    tag = str(arguments.get("tag", ""))
    try:
        await anyio.sleep(float(arguments.get("seconds", 5)))
    except BaseException:
        sys.stdout.write(f"SLOW_CANCELLED {tag}\n")
        sys.stdout.flush()
        raise
    sys.stdout.write(f"SLOW_FINISHED {tag}\n")
    sys.stdout.flush()


async def _answer(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """A call's result: the arguments echoed (``fail``: as an error result; ``slow``: late)."""
    text = json.dumps(arguments, sort_keys=True)
    if name == "slow":
        await _slow(arguments)
    if name == "fail":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"tool failed: {text}")],
            is_error=True,
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=arguments
    )


def build_server(store: ToolStore, *, sieve: bool) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> HandlerResult:
        cursor = params.cursor
        tools, next_cursor = store.page(cursor)
        holder = _raw_page.get()
        if holder is not None:
            holder.append(tools)
        result: dict[str, Any] = {"resultType": "complete", "tools": tools}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name: str = params.name
        arguments: dict[str, Any] = params.arguments or {}
        if store.find(name) is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")
        return await _answer(name, arguments)

    def input_schema(name: str) -> dict[str, Any] | None:
        tool = store.find(name)
        schema = tool.get("inputSchema") if tool else None
        return schema if isinstance(schema, dict) else None

    server: Server[Any] = Server(
        "hub-test-sdk-peer",
        version="1.0.0",
        instructions="A test peer serving tools from a file.",
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
        cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
    )
    # Registered directly (not via on_list_tools) so the handler may return the raw dict.
    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    if not sieve:

        async def restore_raw_tools(
            ctx: ServerRequestContext[Any, Any], call_next: CallNext
        ) -> HandlerResult:
            if ctx.method != "tools/list":
                return await call_next(ctx)
            holder: list[list[dict[str, Any]]] = []
            token = _raw_page.set(holder)
            try:
                result = await call_next(ctx)
            finally:
                _raw_page.reset(token)
            if isinstance(result, dict) and holder:
                result = {**result, "tools": holder[-1]}
            return result

        server.middleware.append(restore_raw_tools)
    return server


READY_MARKER = "HUB_PEER_LISTENING"


class _AnnouncingServer(uvicorn.Server):
    """Prints ``READY_MARKER <port>`` once it accepts connections."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and sockets:
            sys.stdout.write(f"{READY_MARKER} {sockets[0].getsockname()[1]}\n")
            sys.stdout.flush()


class LegacyOnly:
    """ASGI wrapper: a 2026-07-28 request is refused with 400 and no body (``--legacy-only``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and (b"mcp-protocol-version", MODERN.encode()) in scope["headers"]
        ):
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


async def serve(app: Any, host: str, port: int) -> None:
    """Serve on a socket bound here (port 0: an ephemeral one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", timeout_graceful_shutdown=1
    )
    await _AnnouncingServer(config).serve(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--tools-file", type=Path, required=True)
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--sieve", action="store_true", help="serve the SDK's dump of the tools")
    parser.add_argument("--retry-ms", type=int, default=None, help="SSE retry (sse mode)")
    parser.add_argument("--legacy-only", action="store_true", help="refuse 2026-07-28 requests")
    args = parser.parse_args(argv)

    server = build_server(ToolStore(args.tools_file, args.page_size), sieve=args.sieve)
    app = server.streamable_http_app(
        stateless_http=args.mode.startswith("stateless"),
        json_response=args.mode.endswith("json"),
        event_store=MemoryEventStore() if args.mode == "sse" else None,
        retry_interval=args.retry_ms if args.mode == "sse" else None,
        host=args.host,
    )
    asyncio.run(serve(LegacyOnly(app) if args.legacy_only else app, args.host, args.port))


if __name__ == "__main__":
    main()
