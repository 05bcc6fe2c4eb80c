"""Turning a :class:`~hub.mcp.reader.Reply` into a result object or the right ``McpError``.

The reasons (DESIGN §13 "Discovery reasons"), by the stage the request belongs to:

======================================  =====================  =================================
reply                                   ``handshake``          ``request`` (``tools/list``)
======================================  =====================  =================================
401 / 403                               ``unauthorized`` (already raised while reading)
5xx without a JSON-RPC answer           ``handshake_failed``   ``protocol_error``
other status, non-JSON non-SSE body     ``not_mcp``            ``not_mcp``
405 (POST not allowed: not Streamable)  ``not_mcp``            ``protocol_error``
other non-2xx (empty or JSON body)      ``handshake_failed``   ``protocol_error``
2xx with no body                        ``not_mcp``            ``protocol_error``
a JSON-RPC error (any status)           ``handshake_failed``   ``protocol_error``
a result that is not an object          ``invalid_result``     ``invalid_result``
======================================  =====================  =================================

A 2024-11-05 HTTP+SSE-only server refuses the POST (405, often with a text body), so it is
reported ``not_mcp`` until that transport is supported (DESIGN §7). ``tools/call`` has its own
stage: a JSON-RPC error there is ``tool_error`` carrying the code. Modern-era signals
(:func:`modern_error`) are recognised here too (MCP-PROTOCOL §3c, §9.8, §9.9).
"""

from __future__ import annotations

from typing import Any, Literal

from hub.mcp.client.reader import Reply
from hub.mcp.errors import McpError, Reason
from hub.mcp.wire import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_VERSION,
    Json,
)

__all__ = ["Stage", "failure", "is_legacy_signal", "modern_error", "result_of"]

Stage = Literal["handshake", "request", "call"]


def modern_error(reply: Reply) -> bool:
    """A *recognised modern JSON-RPC error*: the server speaks 2026-07-28 (MCP-PROTOCOL §3c).

    ``-32022`` (unsupported version) at any status; ``-32020`` (header mismatch) and ``-32021``
    (missing client capability) on a 4xx; ``-32601`` only on a **404** (a legacy server answers
    an unknown method with -32601 on a 200).
    """
    code = reply.error_code
    if code == UNSUPPORTED_VERSION:
        return True
    if code in (HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY):
        return 400 <= reply.status < 500
    return code == METHOD_NOT_FOUND and reply.status == 404


def is_legacy_signal(reply: Reply) -> bool:
    """A refusal of a modern request that says "try the handshake instead" (nothing ran).

    A 400/404/405 that is not a recognised modern error and carries no JSON-RPC error, or only
    ``-32600`` (invalid request) or an implementation-defined ``-32000``..``-32019`` code: what
    legacy servers answer a request without a session (the SDK: 400 ``-32600`` "Missing session
    ID"; server-everything: 400 ``-32000`` "Server not initialized"). Or a non-MCP body with a
    4xx status. A modern server's own refusal of a call (``-32602`` unknown tool…) is not one,
    and neither is any 2xx: the server may have run the tool, and falling back would run it
    again.
    """
    if modern_error(reply):
        return False
    if reply.media == "other" and 400 <= reply.status < 500:
        return True
    code = reply.error_code
    legacy_code = code is None or code == INVALID_REQUEST or -32019 <= code <= -32000
    return reply.status in (400, 404, 405) and legacy_code


def failure(reply: Reply, stage: Stage) -> McpError:
    """The error for a reply that carries no usable result (see the module table)."""
    if stage == "call" and reply.error is not None:
        code = reply.error_code
        if code is None:
            return McpError("protocol_error")
        text = reply.error.get("message")
        return McpError(
            "tool_error", code=code, upstream_message=text if isinstance(text, str) else None
        )
    reason: Reason
    if reply.answer is None and reply.status >= 500:
        reason = "handshake_failed" if stage == "handshake" else "protocol_error"
    elif reply.answer is None and (
        reply.media == "other" or (stage == "handshake" and reply.status == 405)
    ):
        reason = "not_mcp"
    elif reply.answer is None and reply.ok:
        reason = "not_mcp" if stage == "handshake" else "protocol_error"
    else:
        reason = "handshake_failed" if stage == "handshake" else "protocol_error"
    return McpError(reason)


def result_of(reply: Reply, stage: Stage) -> dict[str, Json]:
    """The ``result`` object of a successful answer, or raise the stage's :class:`McpError`."""
    answer = reply.answer
    if not reply.ok or answer is None or "result" not in answer:
        raise failure(reply, stage)
    result: Any = answer["result"]
    if not isinstance(result, dict):
        raise McpError("invalid_result")
    return result
