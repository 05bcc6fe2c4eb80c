"""The 2026-07-28 wire of the agents' endpoint: stateless, per-request ``_meta`` (§10.4, §15).

Checked on every request (MCP-PROTOCOL §1a, §3c): the body is one request or notification (an
array is ``-32600``); ``Mcp-Method`` equals the body's method and, for ``tools/call``, ``Mcp-Name``
equals ``params.name`` (base64 sentinel decoded) — else HTTP 400 ``-32020``; ``params._meta``
carries ``io.modelcontextprotocol/protocolVersion`` and ``…/clientCapabilities`` (else 400
``-32602``) and its version equals the ``MCP-Protocol-Version`` header (else 400 ``-32020``).
``initialize``, ``ping``, ``logging/setLevel`` and every method the endpoint does not serve
(resources, prompts, completions, ``subscriptions/listen``) are HTTP 404 ``-32601``.

Results carry ``resultType: "complete"`` (``"input_required"`` for a ``tools/call`` the host
answers with an MRTR interim result) and ``_meta["io.modelcontextprotocol/serverInfo"]``;
``server/discover`` and ``tools/list`` also ``ttlMs`` and ``cacheScope: "private"`` (the list
depends on the agent's grants, so it must never be shared across authorisation contexts). A
``tools/list`` with a cursor is ``-32602`` (:mod:`hub.mcp.server.pagination`: the hub issues
none, and the error tells the client to drop what it cached).

``server/discover``'s ``supportedVersions`` and ``-32022``'s ``data.supported`` name every
version this URL serves, newest first (:data:`SUPPORTED_VERSIONS`: 2026-07-28 and the handshake
versions of :mod:`hub.mcp.server.legacy`), as ``basic/versioning`` asks of a dual-era server;
the two lists are the same, as the conformance ``server-stateless`` scenario checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from hub.mcp.headers import decode_header_value
from hub.mcp.server.answers import (
    CallContext,
    HttpAnswer,
    InputRequired,
    RpcError,
    ToolsHandler,
    error_message,
    result_message,
)
from hub.mcp.server.messages import INVALID_PARAMS, Message, parse_message
from hub.mcp.server.pagination import check_no_cursor
from hub.mcp.wire import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    METHOD_NOT_FOUND,
    MODERN_VERSION,
    MODERN_VERSIONS,
    SERVER_INFO_META_KEY,
    UNSUPPORTED_VERSION,
)

__all__ = ["LIST_TTL_MS", "SUPPORTED_VERSIONS", "handle_modern", "unsupported_version"]

LIST_TTL_MS: Final = 0  # the list follows grants, which change at any moment: never stale
#: every version the endpoint serves, newest first (ISO dates sort as strings)
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(
    sorted({*MODERN_VERSIONS, *LEGACY_VERSIONS}, reverse=True)
)
_NAMED_METHODS: Final = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}


def unsupported_version(requested: str) -> RpcError:
    data = {"supported": list(SUPPORTED_VERSIONS), "requested": requested}
    return RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version", data, status=400)


def _mismatch(what: str) -> RpcError:
    return RpcError(HEADER_MISMATCH, f"Header mismatch: {what}", status=400)


def _check_headers(message: Message, headers: Mapping[str, str]) -> None:
    method_header = headers.get("mcp-method")
    if method_header is None or method_header != message.method:
        raise _mismatch("Mcp-Method must name the body's method")
    named = _NAMED_METHODS.get(message.method or "")
    if named is None:
        return
    name_header = headers.get("mcp-name")
    value = message.params.get(named)
    try:
        decoded = decode_header_value(name_header) if name_header is not None else None
    except ValueError:
        decoded = None
    if decoded is None or decoded != value:
        raise _mismatch(f"Mcp-Name must equal params.{named}")


def _check_meta(message: Message, version: str) -> None:
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, "params._meta is required", status=400)
    if not isinstance(meta.get(PROTOCOL_VERSION_META_KEY), str) or not isinstance(
        meta.get(CLIENT_CAPABILITIES_META_KEY), dict
    ):
        raise RpcError(
            INVALID_PARAMS, "params._meta lacks the protocol version or capabilities", status=400
        )
    if meta[PROTOCOL_VERSION_META_KEY] != version:
        raise _mismatch("MCP-Protocol-Version must equal the _meta protocol version")


def _result(
    handler: ToolsHandler, result: Mapping[str, Any], *, cacheable: bool = False
) -> dict[str, Any]:
    shaped = dict(result)
    shaped["resultType"] = "complete"
    meta = dict(shaped.get("_meta") or {})
    meta[SERVER_INFO_META_KEY] = dict(handler.server_info)
    shaped["_meta"] = meta
    if cacheable:
        shaped["ttlMs"] = LIST_TTL_MS
        shaped["cacheScope"] = "private"
    return shaped


def _interim(handler: ToolsHandler, asked: InputRequired) -> dict[str, Any]:
    """An ``InputRequiredResult`` (``resultType: "input_required"``), with ``serverInfo``."""
    shaped = asked.result()
    shaped["_meta"][SERVER_INFO_META_KEY] = dict(handler.server_info)
    return shaped


async def _dispatch(handler: ToolsHandler, message: Message, ctx: CallContext) -> dict[str, Any]:
    method = message.method
    if method == "server/discover":
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": {"tools": {}},
        }
        if handler.instructions:
            result["instructions"] = handler.instructions
        return _result(handler, result, cacheable=True)
    if method == "tools/list":
        check_no_cursor(message.params)
        return _result(handler, {"tools": await handler.list_tools(ctx)}, cacheable=True)
    if method == "tools/call":
        name = message.params.get("name")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "params.name must be a string")
        called = await handler.call_tool(name, message.params.get("arguments"), message.params, ctx)
        if isinstance(called, InputRequired):
            return _interim(handler, called)
        return _result(handler, called)
    raise RpcError(METHOD_NOT_FOUND, "Method not found", status=404)


async def handle_modern(
    handler: ToolsHandler, raw: Any, version: str, headers: Mapping[str, str]
) -> HttpAnswer:
    """One 2026-07-28 POST (``version`` is the header's, already known to be modern)."""
    if isinstance(raw, list):
        batch = RpcError(INVALID_REQUEST, "Batches are not accepted", status=400)
        return HttpAnswer(400, error_message(None, batch))
    try:
        message = parse_message(raw)
    except RpcError as error:
        return HttpAnswer(error.status, error_message(None, error))
    if message.kind == "response":
        refused = RpcError(INVALID_REQUEST, "Clients do not send responses in 2026-07-28")
        return HttpAnswer(400, error_message(message.id, refused))
    try:
        _check_headers(message, headers)
        _check_meta(message, version)
        if message.kind == "notification":
            return HttpAnswer(202)
        ctx = CallContext(era="modern", protocol_version=version or MODERN_VERSION, headers=headers)
        result = await _dispatch(handler, message, ctx)
    except RpcError as error:
        return HttpAnswer(error.status, error_message(message.id, error), error.headers)
    return HttpAnswer(200, result_message(message.id, result))
