"""One POST to the agents' endpoint, classified by era and dispatched (DESIGN §10.4, §15).

Era of a request (one URL serves both): modern iff ``MCP-Protocol-Version`` names a modern
version; a handshake version in the header, or no header and no modern ``_meta``, is the
handshake era (no header: 2025-03-26 assumed); no header but a body carrying modern ``_meta`` is
400 ``-32020``; any other header value is 400 ``-32022`` naming the supported versions. A body
that is not UTF-8 JSON is 400 ``-32700``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import PROTOCOL_VERSION_META_KEY

from hub.core import portable_json
from hub.egress.responses import MAX_JSON_DEPTH
from hub.mcp.server.answers import (
    HttpAnswer,
    RpcError,
    ToolsHandler,
    error_message,
    request_id_of,
)
from hub.mcp.server.legacy import BatchProgress, handle_legacy
from hub.mcp.server.messages import PARSE_ERROR
from hub.mcp.server.modern import handle_modern, unsupported_version
from hub.mcp.wire import HEADER_MISMATCH, LEGACY_VERSIONS, MODERN_VERSIONS

__all__ = [
    "MAX_ARGUMENTS_DEPTH",
    "NOT_UTF8",
    "answer_each",
    "arguments_problem",
    "dispatch",
    "parse_body",
    "request_id_of",
]

#: how deeply a call's arguments may nest: a request's body may nest :data:`MAX_JSON_DEPTH`
#: levels, and a ``tools/call``'s arguments sit two levels down (body, ``params``, ``arguments``)
MAX_ARGUMENTS_DEPTH = MAX_JSON_DEPTH - 2
#: the ``-32700`` message of a body that is not UTF-8 (the REST side's 400 says the same:
#: :mod:`hub.core.body_encoding`, not imported here, as it would bring FastAPI to the sidecar)
NOT_UTF8 = "Parse error: the request body must be UTF-8 JSON (RFC 8259 §8.1)"


def _text(body: bytes) -> str:
    """``body`` as UTF-8 text, or ``-32700`` :data:`NOT_UTF8`.

    JSON exchanged between systems MUST be UTF-8 (RFC 8259 §8.1), and MCP's messages are UTF-8.
    ``json.detect_encoding`` also reads UTF-16 and UTF-32, with or without a byte order mark,
    and the endpoint took them: it is refused as the REST routes refuse it, by a NUL in the
    first four bytes (how UTF-16/32 JSON starts; UTF-8 JSON never holds a raw NUL) or bytes that
    are not UTF-8 (a UTF-16/32 byte order mark is not). A UTF-8 byte order mark is skipped, as
    §8.1 lets a parser do and the REST routes do: the body is UTF-8 all the same. (Answers from
    upstream servers are still read as :func:`~hub.core.portable_json.loads` detects them.)"""
    if b"\x00" in body[:4]:
        raise RpcError(PARSE_ERROR, NOT_UTF8, status=400)
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise RpcError(PARSE_ERROR, NOT_UTF8, status=400) from None
    return text.removeprefix("\ufeff")


def parse_body(body: bytes) -> Any:
    """The JSON of a request body, or :class:`RpcError` ``-32700`` saying why (quoting nothing).

    UTF-8 only (:func:`_text`). Strict (:mod:`hub.core.portable_json`): what the hub could not
    pass on upstream as JSON, or write back in its own answer, is refused here rather than blamed
    on the server later or failing on the way out: ``NaN``/``Infinity`` and numbers beyond a
    double, lone surrogate escapes, and nesting deeper than an upstream answer may
    (:data:`MAX_JSON_DEPTH`: an argument echoed back must still be an answer the hub reads)."""
    text = _text(body)
    try:
        return portable_json.loads(text, max_depth=MAX_JSON_DEPTH)
    except portable_json.NotPortableJson as refused:
        message = f"Parse error: {refused}"
    raise RpcError(PARSE_ERROR, message, status=400)


def arguments_problem(arguments: Any) -> str | None:
    """The ``-32700`` message :func:`parse_body` would have refused a ``tools/call`` with, for
    arguments that a more lenient parser read (the ``mcp`` SDK's in the sidecar, which takes
    ``NaN`` and ``1e400``; FastAPI's for direct mode's decisions), or None: so a call gets the
    same answer from every host of the engine."""
    try:
        portable_json.check(arguments, max_depth=MAX_ARGUMENTS_DEPTH)
    except portable_json.NotPortableJson as refused:
        return f"Parse error: {refused}"
    return None


def answer_each(raw: Any, error: RpcError) -> HttpAnswer:
    """``error`` as the answer to the request ``raw`` (a parsed body the hub will not answer
    otherwise), with its HTTP status and headers: for a batch, one error per request in it,
    each with its id (notifications get none; a batch of notifications alone, one error with a
    null id, as a single notification does)."""
    if not isinstance(raw, list):
        return HttpAnswer(error.status, error_message(request_id_of(raw), error), error.headers)
    ids = [request_id_of(item) for item in raw if isinstance(item, dict) and "method" in item]
    answers = [error_message(request_id, error) for request_id in ids if request_id is not None]
    body = answers or error_message(None, error)
    return HttpAnswer(error.status, body, error.headers)


def _carries_modern_meta(raw: Any) -> bool:
    items = raw if isinstance(raw, list) else [raw]
    for item in items:
        params = item.get("params") if isinstance(item, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
            return True
    return False


async def dispatch(
    handler: ToolsHandler,
    raw: Any,
    headers: Mapping[str, str],
    progress: BatchProgress | None = None,
) -> HttpAnswer:
    """Answer one parsed POST body; ``headers`` have lower-case names; a batch records how
    far it got in ``progress``."""
    version = headers.get("mcp-protocol-version")
    if version in MODERN_VERSIONS:
        return await handle_modern(handler, raw, version, headers)
    if version is None:
        if _carries_modern_meta(raw):
            error = RpcError(
                HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version is required", status=400
            )
            return HttpAnswer(400, error_message(request_id_of(raw), error))
        return await handle_legacy(handler, raw, None, headers, progress)
    if version in LEGACY_VERSIONS:
        return await handle_legacy(handler, raw, version, headers, progress)
    error = unsupported_version(version)
    return HttpAnswer(400, error_message(request_id_of(raw), error))
