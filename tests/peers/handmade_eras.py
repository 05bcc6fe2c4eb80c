"""The protocol logic of the handmade peer: the modern (2026-07-28) and legacy (handshake) eras.

``EraLogic`` turns one parsed JSON-RPC POST into an ``Answer``; ``handmade.HandmadePeer`` holds the
knobs (read on every request, so a test may change them between requests), the HTTP plumbing,
SSE framing and the request log.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tests.peers.handmade_wire import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    LEGACY_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_VERSION,
    SESSION_NOT_FOUND,
    UNSUPPORTED_VERSION,
    Json,
    RecordedRequest,
    Reply,
    RpcError,
    SseEvent,
    rpc_result,
)

Era = Literal["modern", "legacy", "dual"]
ResponseStyle = Literal["json", "sse"]


@dataclass
class Answer:
    """What the peer sends for one POST: a JSON-RPC message (or nothing) with a status."""

    status: int
    message: dict[str, Json] | None = None
    session_id: str | None = None
    modern: bool = False


@dataclass
class LegacySession:
    protocol_version: str
    initialized: bool = False


@dataclass
class Knobs:
    """The peer's behaviour; every field may be changed while the peer runs."""

    era: Era = "dual"
    tools: list[dict[str, Json]] = field(default_factory=list)
    page_size: int | None = None
    empty_cursor: bool = False
    """The second page's cursor is ``""`` (valid in 2026: only an absent cursor ends the list)."""
    response_style: ResponseStyle = "json"
    modern_versions: list[str] = field(default_factory=lambda: [MODERN_VERSION])
    legacy_versions: list[str] = field(default_factory=lambda: list(LEGACY_VERSIONS))
    reject_first_modern: bool = False
    """Answer the first valid modern request with ``-32022`` although its version is supported."""
    require_mcp_name: bool = True
    legacy_sessions: bool = True
    require_version_header: bool = True
    delete_status: Literal[200, 405] = 200
    legacy_reject_status: int = 400
    legacy_reject_body: bytes = b""
    """What a legacy peer answers to a modern request: by default a 400 with an empty body."""
    sse_prelude: list[SseEvent] = field(default_factory=list)
    """Events sent before the answer on every SSE response to a request."""
    sse_prelude_methods: set[str] | None = None
    """Restrict ``sse_prelude`` to these JSON-RPC methods (``None``: all)."""
    wait_for_client_responses: bool = False
    """Hold the answer until the client POSTed a response to every server request in the prelude."""
    client_response_timeout: float = 5.0
    server_info: dict[str, Json] = field(
        default_factory=lambda: {"name": "handmade-peer", "version": "0.1.0"}
    )
    capabilities: dict[str, Json] = field(default_factory=lambda: {"tools": {}})
    instructions: str | None = "A scriptable test peer."
    ttl_ms: int = 0
    cache_scope: Literal["public", "private"] = "private"


def decode_header_value(value: str) -> str:
    """Undo the ``=?base64?...?=`` sentinel of ``Mcp-Name`` / ``Mcp-Param-*``."""
    if value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[len("=?base64?") : -2]).decode()
    return value


class EraLogic:
    """Modern and legacy request handling over a ``Knobs`` and a session table."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.sessions: dict[str, LegacySession] = {}
        self.rejected_first_modern = False

    # ------------------------------------------------------------------ routing
    def route_modern(self, req: RecordedRequest) -> bool:
        era = self.knobs.era
        if era != "dual":
            return era == "modern"
        return req.rpc_method != "initialize" and "mcp-session-id" not in req.headers

    def answer(self, req: RecordedRequest) -> Answer | Reply:
        if self.route_modern(req):
            try:
                return self.modern(req)
            except RpcError as exc:
                return self._error(req, exc, modern=True)
        try:
            return self.legacy(req)
        except RpcError as exc:
            return self._error(req, exc, modern=False)

    def _error(self, req: RecordedRequest, exc: RpcError, *, modern: bool) -> Answer:
        status = exc.status
        if modern and status == 200:
            status = 404 if exc.code == METHOD_NOT_FOUND else 400
        err: dict[str, Json] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            err["data"] = exc.data
        return Answer(status, {"jsonrpc": "2.0", "id": req.rpc_id, "error": err}, modern=modern)

    # ------------------------------------------------------------------ modern
    def modern(self, req: RecordedRequest) -> Answer:
        k = self.knobs
        method = req.rpc_method or ""
        params = req.params
        if method == "initialize":
            requested = params.get("protocolVersion")
            raise RpcError(
                UNSUPPORTED_VERSION,
                "Unsupported protocol version",
                {"supported": k.modern_versions, "requested": requested},
            )
        meta = params.get("_meta")
        if (
            not isinstance(meta, dict)
            or not isinstance(meta.get(META_PROTOCOL_VERSION), str)
            or not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict)
        ):
            raise RpcError(INVALID_PARAMS, "Missing required _meta protocol metadata")
        version: str = meta[META_PROTOCOL_VERSION]
        if req.headers.get("mcp-protocol-version") != version:
            raise RpcError(HEADER_MISMATCH, "MCP-Protocol-Version header does not match _meta")
        if req.headers.get("mcp-method") != method:
            raise RpcError(HEADER_MISMATCH, "Mcp-Method header does not match the body")
        supported = {"supported": k.modern_versions, "requested": version}
        if version not in k.modern_versions:
            raise RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version", supported)
        if k.reject_first_modern and not self.rejected_first_modern:
            self.rejected_first_modern = True
            raise RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version", supported)
        if "id" not in req.message:
            return Answer(202, modern=True)
        if method == "tools/call" and k.require_mcp_name:
            name = req.headers.get("mcp-name")
            if name is None or decode_header_value(name) != params.get("name"):
                raise RpcError(HEADER_MISMATCH, "Mcp-Name header does not match params.name")
        result = self.dispatch(method, params, modern=True)
        result = {"resultType": "complete", **result}
        meta_out = dict(result.get("_meta") or {})
        meta_out.setdefault(META_SERVER_INFO, k.server_info)
        result["_meta"] = meta_out
        return Answer(200, rpc_result(req.rpc_id, result), modern=True)

    # ------------------------------------------------------------------ legacy
    def legacy(self, req: RecordedRequest) -> Answer | Reply:
        k = self.knobs
        method = req.rpc_method
        if method == "initialize":
            return self._initialize(req)
        session_id = req.headers.get("mcp-session-id")
        session: LegacySession | None = None
        if k.legacy_sessions:
            if session_id is None:
                return Reply(k.legacy_reject_status, k.legacy_reject_body)
            session = self.sessions.get(session_id)
            if session is None:
                raise RpcError(SESSION_NOT_FOUND, "Session not found", status=404)
        elif method == "server/discover" or META_PROTOCOL_VERSION in (
            req.params.get("_meta") or {}
        ):
            return Reply(k.legacy_reject_status, k.legacy_reject_body)
        header_version = req.headers.get("mcp-protocol-version")
        if k.require_version_header and (
            header_version is None
            or (session is not None and header_version != session.protocol_version)
            or header_version not in k.legacy_versions
        ):
            return Reply(400, {"error": "missing or unsupported MCP-Protocol-Version header"})
        if "id" not in req.message:
            if method == "notifications/initialized" and session is not None:
                session.initialized = True
            return Answer(202, session_id=session_id)
        result = self.dispatch(method or "", req.params, modern=False)
        return Answer(200, rpc_result(req.rpc_id, result), session_id=session_id)

    def _initialize(self, req: RecordedRequest) -> Answer:
        k = self.knobs
        requested = req.params.get("protocolVersion")
        version = requested if requested in k.legacy_versions else k.legacy_versions[0]
        result: dict[str, Json] = {
            "protocolVersion": version,
            "capabilities": k.capabilities,
            "serverInfo": k.server_info,
        }
        if k.instructions is not None:
            result["instructions"] = k.instructions
        session_id: str | None = None
        if k.legacy_sessions:
            session_id = uuid.uuid4().hex
            self.sessions[session_id] = LegacySession(version)
        return Answer(200, rpc_result(req.rpc_id, result), session_id=session_id)

    def delete(self, req: RecordedRequest) -> Reply:
        if self.knobs.era == "modern" or self.knobs.delete_status == 405:
            return Reply(405, b"")
        session_id = req.headers.get("mcp-session-id")
        if session_id is None:
            return Reply(400, b"")
        if self.sessions.pop(session_id, None) is None:
            return Reply(404, b"")
        return Reply(200, b"")

    # ------------------------------------------------------------------ methods
    def dispatch(self, method: str, params: Mapping[str, Json], *, modern: bool) -> dict[str, Json]:
        k = self.knobs
        cache: dict[str, Json] = {"ttlMs": k.ttl_ms, "cacheScope": k.cache_scope} if modern else {}
        if method == "server/discover" and modern:
            out: dict[str, Json] = {
                "supportedVersions": k.modern_versions,
                "capabilities": k.capabilities,
                **cache,
            }
            if k.instructions is not None:
                out["instructions"] = k.instructions
            return out
        if method == "tools/list":
            tools, next_cursor = self.page(params.get("cursor"))
            out = {"tools": tools, **cache}
            if next_cursor is not None:
                out["nextCursor"] = next_cursor
            return out
        if method == "tools/call":
            return self.call_tool(params)
        if method == "ping" and not modern:
            return {}
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)

    def cursor_for(self, page: int) -> str:
        return "" if self.knobs.empty_cursor and page == 1 else f"page-{page}"

    def page(self, cursor: Json) -> tuple[list[dict[str, Json]], str | None]:
        tools, size = self.knobs.tools, self.knobs.page_size
        if size is None:
            if cursor is not None:
                raise RpcError(INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
            return list(tools), None
        pages = max(1, -(-len(tools) // size))
        index = 0
        if cursor is not None:
            index = next((i for i in range(1, pages) if self.cursor_for(i) == cursor), -1)
            if index < 0:
                raise RpcError(INVALID_PARAMS, "Invalid cursor", {"cursor": cursor})
        next_cursor = self.cursor_for(index + 1) if index + 1 < pages else None
        return tools[index * size : (index + 1) * size], next_cursor

    def call_tool(self, params: Mapping[str, Json]) -> dict[str, Json]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not any(t.get("name") == name for t in self.knobs.tools):
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        text = json.dumps(arguments, sort_keys=True)
        if name == "fail":
            return {"content": [{"type": "text", "text": f"tool failed: {text}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}], "structuredContent": arguments}
